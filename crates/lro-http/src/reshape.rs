//! The face's own shape for what the service behind the guards refuses by
//! status alone: 405 (a method the route does not take), 406 (an `Accept`
//! the transport cannot answer) and 415 (a `Content-Type` it does not
//! read). rmcp and axum answer these in plain text or with no body; every
//! other refusal on a face is in its shape (a JSON-RPC error on the MCP
//! faces, ReMe's on the context service), so these are put in it too. The
//! status and an `Allow` header stay.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use axum::{Router, routing::post};
//! use http::{Request, StatusCode};
//! use lro_http::{reshape::ReshapeLayer, refusal::JsonRpc};
//! use tower::ServiceExt as _;
//!
//! let app = Router::new()
//!     .route("/mcp", post(|| async { "ok" }))
//!     .layer(ReshapeLayer::new(JsonRpc));
//! let get = Request::get("/mcp").body(axum::body::Body::empty()).unwrap();
//! let response = app.oneshot(get).await.unwrap();
//! assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
//! assert_eq!(response.headers()["content-type"], "application/json");
//! # }
//! ```

use axum::body::Body;
use http::{Request, StatusCode, header};

use crate::{
    check::{BoxFuture, Inner, Stage, stage_layer},
    refusal::{Refusal, Respond, Responder},
};

/// The most of a plain-text refusal's body kept as its message.
const MAX_TEXT: usize = 512;

/// The layer that rewords 405, 406 and 415 answers in the face's shape.
#[derive(Debug, Clone)]
pub struct ReshapeLayer {
    responder: Responder,
}

impl ReshapeLayer {
    /// Refusals reworded with `respond`.
    #[must_use]
    pub fn new(respond: impl Respond) -> Self {
        Self::with_responder(Responder::new(respond))
    }

    pub(crate) fn with_responder(responder: Responder) -> Self {
        Self { responder }
    }
}

stage_layer!(ReshapeLayer);

impl Stage for ReshapeLayer {
    fn handle<S: Inner>(&self, mut inner: S, request: Request<Body>) -> BoxFuture {
        let responder = self.responder.clone();
        Box::pin(async move {
            let response = inner.call(request).await?;
            let status = response.status();
            let json = response
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("application/json"));
            if json
                || ![
                    StatusCode::METHOD_NOT_ALLOWED,
                    StatusCode::NOT_ACCEPTABLE,
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                ]
                .contains(&status)
            {
                return Ok(response);
            }
            let allow = response.headers().get(header::ALLOW).cloned();
            let text = match axum::body::to_bytes(response.into_body(), MAX_TEXT).await {
                Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_owned(),
                Err(_) => String::new(),
            };
            let refusal = match status {
                StatusCode::METHOD_NOT_ALLOWED => Refusal::MethodNotAllowed(text),
                StatusCode::NOT_ACCEPTABLE => Refusal::NotAcceptable(text),
                _ => Refusal::UnsupportedMediaType(text),
            };
            let mut reshaped = responder.refuse(&refusal);
            if let Some(allow) = allow {
                reshaped.headers_mut().insert(header::ALLOW, allow);
            }
            Ok(reshaped)
        })
    }
}

#[cfg(test)]
mod tests {
    use axum::{Json, Router, response::IntoResponse as _, routing::post};
    use serde_json::{Value, json};
    use tower::ServiceExt as _;

    use super::*;
    use crate::refusal::JsonRpc;

    async fn answer(app: Router, request: Request<Body>) -> (StatusCode, Option<String>, Value) {
        let response = app.oneshot(request).await.unwrap();
        let status = response.status();
        let allow = response
            .headers()
            .get(header::ALLOW)
            .map(|v| v.to_str().unwrap().to_owned());
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        (status, allow, serde_json::from_slice(&bytes).unwrap())
    }

    fn plain(status: StatusCode, text: &'static str) -> Router {
        Router::new().route(
            "/mcp",
            post(move || async move { (status, text).into_response() }),
        )
    }

    #[tokio::test]
    async fn the_three_statuses_become_jsonrpc_errors_and_keep_their_status() {
        for (status, text) in [
            (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Unsupported Media Type: use application/json",
            ),
            (
                StatusCode::NOT_ACCEPTABLE,
                "Not Acceptable: accept text/event-stream",
            ),
        ] {
            let app = plain(status, text).layer(ReshapeLayer::new(JsonRpc));
            let (got, _, body) =
                answer(app, Request::post("/mcp").body(Body::empty()).unwrap()).await;
            assert_eq!(got, status);
            assert_eq!(body["jsonrpc"], "2.0");
            assert_eq!(body["error"]["code"], -32600);
            assert!(
                body["error"]["message"].as_str().unwrap().contains(text),
                "{body}"
            );
        }
        let app = plain(StatusCode::OK, "x").layer(ReshapeLayer::new(JsonRpc));
        let get = Request::get("/mcp").body(Body::empty()).unwrap();
        let (status, allow, body) = answer(app, get).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(allow.as_deref(), Some("POST"));
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("method"),
            "{body}"
        );
    }

    #[tokio::test]
    async fn a_face_of_its_own_shape_gets_it_and_json_answers_pass() {
        let reme =
            |r: &Refusal| Json(json!({"success": false, "answer": r.to_string()})).into_response();
        let app = plain(StatusCode::OK, "x").layer(ReshapeLayer::new(reme));
        let (status, _, body) =
            answer(app, Request::get("/mcp").body(Body::empty()).unwrap()).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(body["success"], false);
        let own = Router::new().route(
            "/mcp",
            post(|| async {
                (StatusCode::NOT_ACCEPTABLE, Json(json!({"mine": 1}))).into_response()
            }),
        );
        let app = own.layer(ReshapeLayer::new(JsonRpc));
        let (_, _, body) = answer(app, Request::post("/mcp").body(Body::empty()).unwrap()).await;
        assert_eq!(body, json!({"mine": 1}));
    }
}

//! The request body, read whole before the face sees it: at most
//! `max_bytes` (413 past it, from `Content-Length` before reading when the
//! client sends one), within one timeout for the whole body (408; a client
//! that trickles a byte at a time is cut off too), and checked to be what
//! the face takes ([`Expect`]): for the MCP faces one JSON-RPC message,
//! where rmcp answers 415 in plain text. A body that is not JSON gets 400
//! with a JSON-RPC -32700 Parse error; JSON that is not a JSON-RPC message
//! gets 400 with -32600 Invalid Request, as the MCP streamable-HTTP
//! transport asks of a body the server cannot accept.
//!
//! ```
//! use std::time::Duration;
//! use axum::{Router, routing::post};
//! use lro_http::{body::{BodyLayer, Expect}, refusal::JsonRpc};
//!
//! let app: Router = Router::new()
//!     .route("/mcp", post(|body: String| async move { body }))
//!     .layer(BodyLayer::new(4 << 20, Duration::from_secs(30), JsonRpc).expect(Expect::JsonRpc));
//! ```

use std::time::Duration;

use axum::body::Body;
use http::{Method, Request, header};
use http_body_util::{BodyExt as _, LengthLimitError, Limited};

use crate::{
    check::{BoxFuture, Inner, Stage, stage_layer},
    jsonrpc,
    refusal::{Refusal, Respond, Responder},
};

/// What a `POST` body must be before the face sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Expect {
    /// Anything: the face reads it itself.
    #[default]
    Anything,
    /// JSON ([`Refusal::NotJson`] when not): a face with JSON bodies of its
    /// own shape.
    Json,
    /// One JSON-RPC 2.0 request, notification or response, in the shapes
    /// MCP's schema gives them ([`Refusal::NotJson`] when not JSON,
    /// [`Refusal::NotJsonRpc`] when JSON but no such message; a batch is
    /// refused too): the MCP faces.
    JsonRpc,
}

/// The layer that reads the body whole, bounded in size and time.
#[derive(Debug, Clone)]
pub struct BodyLayer {
    max_bytes: usize,
    timeout: Duration,
    expect: Expect,
    responder: Responder,
}

impl BodyLayer {
    /// Bodies of at most `max_bytes`, read within `timeout`, refused with
    /// `respond`.
    #[must_use]
    pub fn new(max_bytes: usize, timeout: Duration, respond: impl Respond) -> Self {
        Self::with_responder(max_bytes, timeout, Responder::new(respond))
    }

    pub(crate) fn with_responder(
        max_bytes: usize,
        timeout: Duration,
        responder: Responder,
    ) -> Self {
        Self {
            max_bytes,
            timeout,
            expect: Expect::Anything,
            responder,
        }
    }

    /// What a `POST` body must be. Defaults to [`Expect::Anything`].
    #[must_use]
    pub fn expect(mut self, expect: Expect) -> Self {
        self.expect = expect;
        self
    }
}

stage_layer!(BodyLayer);

impl Stage for BodyLayer {
    fn handle<S: Inner>(&self, mut inner: S, request: Request<Body>) -> BoxFuture {
        let layer = self.clone();
        Box::pin(async move {
            match read(request, &layer).await {
                Ok(request) => inner.call(request).await,
                Err(refusal) => Ok(layer.responder.refuse(&refusal)),
            }
        })
    }
}

/// The request with its body read whole, or why not.
async fn read(request: Request<Body>, layer: &BodyLayer) -> Result<Request<Body>, Refusal> {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > layer.max_bytes as u64) {
        return Err(Refusal::TooLarge(layer.max_bytes));
    }
    let (parts, body) = request.into_parts();
    let collect = Limited::new(body, layer.max_bytes).collect();
    let bytes = match tokio::time::timeout(layer.timeout, collect).await {
        Err(_) => return Err(Refusal::BodyTimeout(layer.timeout)),
        Ok(Err(err)) if err.is::<LengthLimitError>() => {
            return Err(Refusal::TooLarge(layer.max_bytes));
        }
        Ok(Err(err)) => {
            return Err(Refusal::BodyUnreadable(
                lro_core::error::chain(&*err).to_string(),
            ));
        }
        Ok(Ok(collected)) => collected.to_bytes(),
    };
    if parts.method == Method::POST {
        let not_json = |e: serde_json::Error| Refusal::NotJson(e.to_string());
        match layer.expect {
            Expect::Anything => {}
            // Syntax only: the face parses the body itself.
            Expect::Json => {
                serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).map_err(not_json)?;
            }
            // The envelope only: the face decodes the message itself.
            Expect::JsonRpc => jsonrpc::check(&bytes)
                .map_err(not_json)?
                .map_err(|why| Refusal::NotJsonRpc(why.to_owned()))?,
        }
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::{
        convert::Infallible,
        task::{Context, Poll},
    };

    use axum::response::Response;
    use http::StatusCode;
    use tower::{Layer as _, ServiceExt as _};

    async fn send(layer: BodyLayer, body: Body) -> (StatusCode, String) {
        let echo = tower::service_fn(|r: Request<Body>| async move {
            let bytes = axum::body::to_bytes(r.into_body(), usize::MAX)
                .await
                .unwrap();
            Ok::<_, Infallible>(Response::new(Body::from(bytes)))
        });
        let request = Request::post("/").body(body).unwrap();
        let response = layer.layer(echo).oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, String::from_utf8(bytes.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn bounded_in_size_and_checked_for_json() {
        let layer = || {
            BodyLayer::new(16, Duration::from_secs(5), crate::refusal::JsonRpc).expect(Expect::Json)
        };
        assert_eq!(
            send(layer(), Body::from("[1,2]")).await,
            (StatusCode::OK, "[1,2]".into())
        );
        let (status, text) = send(layer(), Body::from("{not json")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(text.contains("-32700"), "{text}");
        let (status, _) = send(layer(), Body::from("[1,2,3,4,5,6,7,8,9]")).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        let plain = BodyLayer::new(16, Duration::from_secs(5), ());
        assert_eq!(send(plain, Body::from("text")).await.0, StatusCode::OK);
    }

    #[tokio::test]
    async fn json_rpc_bodies_are_one_message() {
        let layer = || {
            BodyLayer::new(1 << 10, Duration::from_secs(5), crate::refusal::JsonRpc)
                .expect(Expect::JsonRpc)
        };
        let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert_eq!(
            send(layer(), Body::from(ping)).await,
            (StatusCode::OK, ping.into())
        );
        for (body, code) in [
            ("[]", "-32600"),
            ("{\"foo\":1}", "-32600"),
            ("[1,", "-32700"),
        ] {
            let (status, text) = send(layer(), Body::from(body)).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
            assert!(text.contains(code), "{body}: {text}");
        }
    }

    /// A body whose next frame never comes.
    struct Never;

    impl http_body::Body for Never {
        type Data = bytes::Bytes;
        type Error = Infallible;

        fn poll_frame(
            self: std::pin::Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<http_body::Frame<bytes::Bytes>, Infallible>>> {
            Poll::Pending
        }
    }

    #[tokio::test]
    async fn a_body_that_never_ends_times_out() {
        let layer = BodyLayer::new(16, Duration::from_millis(50), ());
        assert_eq!(
            send(layer, Body::new(Never)).await.0,
            StatusCode::REQUEST_TIMEOUT
        );
    }
}

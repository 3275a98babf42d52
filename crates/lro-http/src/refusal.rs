//! What the guards refuse, and how a face words it.
//!
//! Every guard in this crate turns a request it will not pass into a
//! [`Refusal`]; the face's [`Respond`] makes the response. The default,
//! [`JsonRpc`], answers a JSON-RPC error object with `id: null`, as the MCP
//! streamable-HTTP transport does for a body it cannot take; a face with a
//! JSON shape of its own (the context service) passes a closure.
//!
//! ```
//! use http::StatusCode;
//! use lro_http::refusal::{JsonRpc, Refusal, Respond};
//!
//! let response = JsonRpc.respond(&Refusal::NotJson("expected value at line 1".into()));
//! assert_eq!(response.status(), StatusCode::BAD_REQUEST);
//! let response = JsonRpc.respond(&Refusal::Unauthorized);
//! assert_eq!(response.headers()["www-authenticate"], "Bearer");
//! // A face of its own shape: any closure from a refusal to a response.
//! use axum::response::IntoResponse as _;
//! let plain = |r: &Refusal| r.to_string().into_response();
//! let response = plain.respond(&Refusal::Forbidden("origin".into()));
//! assert_eq!(response.status(), StatusCode::FORBIDDEN);
//! ```

use std::{fmt, sync::Arc, time::Duration};

use axum::{
    Json,
    response::{IntoResponse as _, Response},
};
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

/// A request a guard will not pass, and why. The text never holds a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// No `Authorization: Bearer` token, or not a configured one (401).
    #[error("a valid `Authorization: Bearer` token is required")]
    Unauthorized,
    /// The `Host` or `Origin` is not one this face serves (403); the text
    /// names which.
    #[error("{0}")]
    Forbidden(String),
    /// The body is larger than the face takes (413).
    #[error("the request body is larger than {0} bytes")]
    TooLarge(usize),
    /// The body did not arrive within the body-read timeout (408).
    #[error("the request body did not arrive within {0:?}")]
    BodyTimeout(Duration),
    /// The body could not be read (the client went away or sent a broken
    /// chunk; 400).
    #[error("the request body could not be read: {0}")]
    BodyUnreadable(String),
    /// The body is not JSON (400, JSON-RPC's -32700 Parse error).
    #[error("Parse error: the body is not JSON: {0}")]
    NotJson(String),
    /// The body is JSON but not one JSON-RPC message (400, JSON-RPC's
    /// -32600 Invalid Request); the text says what is wrong.
    #[error("Invalid Request: the body is not a JSON-RPC message: {0}")]
    NotJsonRpc(String),
    /// Every request slot stayed busy for the queue timeout (503).
    #[error("the server is busy: too many requests at once; retry shortly")]
    Busy,
    /// The `Mcp-Session-Id` names no session of this caller (404, what the
    /// transport answers for an unknown or ended session).
    #[error("Session not found")]
    UnknownSession,
    /// The caller holds as many sessions as one principal may, each with a
    /// call in progress (429); the number is the cap.
    #[error(
        "too many sessions: this caller holds {0}, the most one caller may, each with a call in progress; end one (DELETE) or retry when a call ends"
    )]
    PrincipalSessions(usize),
    /// The server holds as many sessions as it may, none of them the
    /// caller's to close (503); the number is the cap.
    #[error("too many sessions: the server holds {0}, the most it may; retry shortly")]
    ServerSessions(usize),
    /// The route does not take the request's method (405); the text is the
    /// service's own, when it gave one.
    #[error("{}", or_default(.0, "this method is not allowed here"))]
    MethodNotAllowed(String),
    /// The `Accept` header names nothing the face answers with (406).
    #[error("{}", or_default(.0, "the Accept header names no type this server answers with"))]
    NotAcceptable(String),
    /// The `Content-Type` is not one the face reads (415).
    #[error("{}", or_default(.0, "the Content-Type is not one this server reads"))]
    UnsupportedMediaType(String),
}

/// `text`, or `default` when it is empty.
fn or_default<'a>(text: &'a str, default: &'a str) -> &'a str {
    if text.is_empty() { default } else { text }
}

impl Refusal {
    /// The HTTP status of this refusal.
    #[must_use]
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::BodyTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            Self::BodyUnreadable(_) | Self::NotJson(_) | Self::NotJsonRpc(_) => {
                StatusCode::BAD_REQUEST
            }
            Self::Busy | Self::ServerSessions(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::UnknownSession => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            Self::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::PrincipalSessions(_) => StatusCode::TOO_MANY_REQUESTS,
        }
    }

    /// The JSON-RPC error code: -32700 (Parse error) for a body that is not
    /// JSON, -32000 (a server error) at a session cap, -32600 (Invalid
    /// Request) for the rest.
    #[must_use]
    pub fn jsonrpc_code(&self) -> i64 {
        match self {
            Self::NotJson(_) => -32700,
            Self::PrincipalSessions(_) | Self::ServerSessions(_) => -32000,
            _ => -32600,
        }
    }

    /// Adds the headers the status calls for (`WWW-Authenticate: Bearer` on
    /// 401, `Retry-After` on 503 and 429, `Connection: close` after a body that was
    /// not read to its end) to `response`, and sets its status. Every
    /// [`Respond`] goes through it, so a closure cannot forget them.
    pub fn finish(&self, mut response: Response) -> Response {
        *response.status_mut() = self.status();
        let headers = response.headers_mut();
        match self {
            Self::Unauthorized => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            Self::Busy | Self::ServerSessions(_) | Self::PrincipalSessions(_) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            Self::TooLarge(_) | Self::BodyTimeout(_) | Self::BodyUnreadable(_) => {
                headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            _ => {}
        }
        response
    }
}

/// How a face answers a [`Refusal`]. Implemented for [`JsonRpc`] (the
/// default), for `()` (a plain `{"error": …}` object) and for closures
/// `Fn(&Refusal) -> Response`. The status and the headers the status calls
/// for are set afterwards ([`Refusal::finish`]).
pub trait Respond: Send + Sync + 'static {
    /// The response's body and any header of the face's own.
    fn respond(&self, refusal: &Refusal) -> Response;
}

/// A JSON-RPC error object with `id: null`:
/// `{"jsonrpc": "2.0", "id": null, "error": {"code": …, "message": …}}`.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonRpc;

impl Respond for JsonRpc {
    fn respond(&self, refusal: &Refusal) -> Response {
        let body = json!({
            "jsonrpc": "2.0",
            "id": Value::Null,
            "error": {"code": refusal.jsonrpc_code(), "message": refusal.to_string()},
        });
        refusal.finish(Json(body).into_response())
    }
}

/// `{"error": "…"}`.
impl Respond for () {
    fn respond(&self, refusal: &Refusal) -> Response {
        refusal.finish(Json(json!({"error": refusal.to_string()})).into_response())
    }
}

impl<F> Respond for F
where
    F: Fn(&Refusal) -> Response + Send + Sync + 'static,
{
    fn respond(&self, refusal: &Refusal) -> Response {
        refusal.finish(self(refusal))
    }
}

/// A shared [`Respond`], as the guards hold it.
#[derive(Clone)]
pub(crate) struct Responder(Arc<dyn Respond>);

impl Responder {
    pub(crate) fn new(respond: impl Respond) -> Self {
        Self(Arc::new(respond))
    }

    pub(crate) fn refuse(&self, refusal: &Refusal) -> Response {
        self.0.respond(refusal)
    }
}

impl Default for Responder {
    fn default() -> Self {
        Self::new(JsonRpc)
    }
}

impl fmt::Debug for Responder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Responder")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body_of(response: Response) -> Value {
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn jsonrpc_parse_error_is_400_with_a_null_id() {
        let r = JsonRpc.respond(&Refusal::NotJson("eof".into()));
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        let body = body_of(r).await;
        assert_eq!(body["error"]["code"], -32700);
        assert_eq!(body["id"], Value::Null);
        assert_eq!(body["jsonrpc"], "2.0");
    }

    #[tokio::test]
    async fn closures_keep_the_status_and_the_headers() {
        let own =
            |r: &Refusal| Json(json!({"success": false, "answer": r.to_string()})).into_response();
        let r = own.respond(&Refusal::Unauthorized);
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(r.headers()[header::WWW_AUTHENTICATE], "Bearer");
        assert_eq!(body_of(r).await["success"], false);
        let r = ().respond(&Refusal::Busy);
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(r.headers().contains_key(header::RETRY_AFTER));
    }
}

//! A request refused at a child-slot cap (see [`crate::slots`]) gets its
//! JSON-RPC error with an HTTP status that says so: 503 when every slot is
//! taken, 429 when the caller holds its share, with `Retry-After`. rmcp
//! would send it as HTTP 200, and for an `initialize` with a session id
//! whose next request gets 404.
//!
//! The HTTP face puts an [`AtCap`] into each request ([`answer_at_cap`]);
//! the handler that meets the cap marks it ([`answer`]); once rmcp has the
//! handler's answer (it waits for it before it writes the status, for an
//! `initialize` and for a sessionless request alike), the face answers the
//! marked error instead, and ends the session rmcp opened for it.

use std::sync::{Arc, Mutex, PoisonError};

use axum::{
    Json,
    extract::{Request, State},
    middleware::Next,
    response::{IntoResponse as _, Response},
};
use http::{HeaderValue, StatusCode, header};
use rmcp::{ErrorData as McpError, RoleServer, service::RequestContext};
use serde_json::{Value, json};

use crate::{ProxyError, reclaim::Reclaiming};

/// The session header of the streamable-HTTP transport.
const SESSION_HEADER: &str = "mcp-session-id";

/// The refusal a handler marked on its request: its status and body.
#[derive(Clone, Default)]
pub(crate) struct AtCap(Arc<Mutex<Option<(StatusCode, Value)>>>);

impl AtCap {
    fn take(&self) -> Option<(StatusCode, Value)> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// `err` as the JSON-RPC error the client receives; a refusal at a slot cap
/// is also marked on the request, for the HTTP face to answer with its
/// status.
pub(crate) fn answer(err: ProxyError, cx: &RequestContext<RoleServer>) -> McpError {
    let status = err.cap_status();
    let error = err.into_mcp();
    let mark = cx
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<AtCap>());
    if let (Some(status), Some(mark)) = (status, mark) {
        let body = json!({"jsonrpc": "2.0", "id": cx.id, "error": error});
        *mark.0.lock().unwrap_or_else(PoisonError::into_inner) = Some((status, body));
    }
    error
}

/// The HTTP face's middleware: see the module docs.
pub(crate) async fn answer_at_cap(
    State(sessions): State<Arc<Reclaiming>>,
    mut request: Request,
    next: Next,
) -> Response {
    let mark = AtCap::default();
    request.extensions_mut().insert(mark.clone());
    let response = next.run(request).await;
    let Some((status, body)) = mark.take() else {
        return response;
    };
    if let Some(id) = response
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
    {
        sessions.close_session_now(id).await;
    }
    let mut refused = (status, Json(body)).into_response();
    refused
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    refused
}

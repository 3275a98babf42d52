//! ReMe's context-offload HTTP API over [`lro_context`]: `POST
//! /context_offload`, `POST /grep` and `POST /read_file`, with ReMe's JSON
//! shapes (`{success, answer, messages, metadata}`), so ReMe clients work
//! unchanged.
//!
//! The service hands out file contents, so it guards itself: `store_dir`
//! and every path must resolve inside one of the store roots (else 400);
//! `Host` must be a loopback name and `Origin`, when sent, a loopback page
//! (else 403, against DNS rebinding); with a token configured, every
//! request needs `Authorization: Bearer <token>` (else 401).
//!
//! ```no_run
//! use lro_context::{ContextOffloader, Roots};
//! use lro_context_http::{Service, serve};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let roots = Roots::new(["/var/lib/agent/context"])?;
//! let service = Service::new(ContextOffloader::new().roots(roots)).token("s3cret");
//! serve("127.0.0.1:8002".parse()?, service, std::future::pending(), |addr| {
//!     eprintln!("listening on http://{addr}");
//! })
//! .await?;
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::{net::SocketAddr, sync::Arc};

use axum::{
    Extension, Json, Router,
    extract::{DefaultBodyLimit, Request, State, rejection::JsonRejection},
    http::{HeaderMap, StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::post,
};
use lro_context::{ContextError, ContextOffloader, FileContents};
use lro_core::principal::Principal;
use serde_json::{Value, json};

/// Largest request body: histories of millions of tokens are the point.
pub const MAX_BODY_BYTES: usize = 256 << 20;

/// The service's state: the offloader (with its store roots) and the token.
#[derive(Clone)]
pub struct Service {
    offloader: ContextOffloader,
    token: Option<Arc<str>>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token is a secret: say whether there is one, never what.
        f.debug_struct("Service")
            .field("offloader", &self.offloader)
            .field("token", &self.token.as_ref().map(|_| "…"))
            .finish()
    }
}

impl Service {
    /// A service over `offloader`, whose roots confine every path.
    pub fn new(offloader: ContextOffloader) -> Self {
        Self {
            offloader,
            token: None,
        }
    }

    /// Requires `Authorization: Bearer {token}`. Defaults to no token.
    #[must_use]
    pub fn token(mut self, token: impl Into<Arc<str>>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// The routes, with the guards in front.
    pub fn router(self) -> Router {
        Router::new()
            .route("/context_offload", post(context_offload))
            .route("/grep", post(grep_files))
            .route("/read_file", post(read))
            .layer(middleware::from_fn_with_state(self.clone(), guard))
            .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
            .with_state(self)
    }
}

/// Why the service could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The server failed while running.
    #[error("the HTTP server failed: {0}")]
    Serve(#[source] std::io::Error),
}

/// Serves `service` on `addr` until `shutdown` resolves; `ready` gets the
/// bound address (port 0 picks one).
///
/// # Errors
///
/// [`ServeError`] when the address cannot be bound or the server fails.
pub async fn serve(
    addr: SocketAddr,
    service: Service,
    shutdown: impl Future<Output = ()> + Send + 'static,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    if !addr.ip().is_loopback() {
        tracing::warn!(
            %addr,
            "serving context offload on a non-loopback address: clients must still send a loopback Host; \
             set a token and put an authenticating reverse proxy in front"
        );
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| ServeError::Bind { addr, source })?;
    ready(bound);
    axum::serve(listener, service.router())
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(ServeError::Serve)
}

/// ReMe's response shape.
fn reply(
    status: StatusCode,
    success: bool,
    answer: String,
    messages: Value,
    metadata: Value,
) -> Response {
    let body =
        json!({"success": success, "answer": answer, "messages": messages, "metadata": metadata});
    (status, Json(body)).into_response()
}

fn refuse(status: StatusCode, answer: String) -> Response {
    reply(status, false, answer, json!([]), json!({}))
}

fn error_reply(err: &ContextError) -> Response {
    let status = match err {
        ContextError::NotFound { .. } => StatusCode::NOT_FOUND,
        e if e.is_bad_request() => StatusCode::BAD_REQUEST,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    refuse(status, err.to_string())
}

/// Whether `host` (a `Host` header or an origin's authority) names the
/// loopback: `localhost`, `127.0.0.1` or `[::1]`, any port.
fn loopback_authority(authority: &str) -> bool {
    let host = match authority.strip_prefix('[') {
        Some(rest) => rest.split(']').next().map(|h| format!("[{h}]")),
        None => authority.split(':').next().map(str::to_owned),
    };
    matches!(host.as_deref(), Some("localhost" | "127.0.0.1" | "[::1]"))
}

/// The guards: loopback `Host`, loopback `Origin` when sent, the token.
async fn guard(
    State(service): State<Service>,
    headers: HeaderMap,
    request: Request,
    next: Next,
) -> Response {
    let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
    if !text(header::HOST).is_some_and(loopback_authority) {
        return refuse(
            StatusCode::FORBIDDEN,
            "Host must be a loopback name (localhost, 127.0.0.1 or [::1])".to_owned(),
        );
    }
    if let Some(origin) = text(header::ORIGIN) {
        let authority = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"));
        if !authority.is_some_and(loopback_authority) {
            return refuse(
                StatusCode::FORBIDDEN,
                format!("requests from origin {origin} are refused"),
            );
        }
    }
    if let Some(token) = &service.token {
        let sent = text(header::AUTHORIZATION).and_then(|v| v.strip_prefix("Bearer "));
        if !sent.is_some_and(|s| constant_time_eq(s.as_bytes(), token.as_bytes())) {
            return refuse(
                StatusCode::UNAUTHORIZED,
                "a valid `Authorization: Bearer` token is required".to_owned(),
            );
        }
    }
    next.run(request).await
}

/// Compares without stopping at the first difference, so timing does not
/// reveal how much of a guess was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Runs `op` on the body off the async threads; `ok` turns its result into
/// the response.
async fn run<T: Send + 'static>(
    service: Service,
    payload: Result<Json<Value>, JsonRejection>,
    principal: Option<Extension<Principal>>,
    op: fn(&ContextOffloader, &Principal, Value) -> Result<T, ContextError>,
    ok: fn(T) -> Response,
) -> Response {
    // Anonymous unless an authenticating layer put a principal in the
    // request's extensions.
    let principal = principal.map(|Extension(p)| p).unwrap_or_default();
    let Json(args) = match payload {
        Ok(body) => body,
        Err(e) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                format!("the body is not JSON: {}", e.body_text()),
            );
        }
    };
    match tokio::task::spawn_blocking(move || op(&service.offloader, &principal, args)).await {
        Ok(Ok(out)) => ok(out),
        Ok(Err(e)) => error_reply(&e),
        Err(e) => refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the request failed: {e}"),
        ),
    }
}

fn answer(text: String) -> Response {
    reply(StatusCode::OK, true, text, json!([]), json!({}))
}

async fn context_offload(
    State(service): State<Service>,
    principal: Option<Extension<Principal>>,
    payload: Result<Json<Value>, JsonRejection>,
) -> Response {
    // ReMe's clients read the files' contents from the answer.
    run(
        service,
        payload,
        principal,
        |o, p, args| o.offload_json(p, args, FileContents::Included),
        |v| (StatusCode::OK, Json(v)).into_response(),
    )
    .await
}

async fn grep_files(
    State(service): State<Service>,
    principal: Option<Extension<Principal>>,
    payload: Result<Json<Value>, JsonRejection>,
) -> Response {
    run(
        service,
        payload,
        principal,
        ContextOffloader::grep_json,
        answer,
    )
    .await
}

async fn read(
    State(service): State<Service>,
    principal: Option<Extension<Principal>>,
    payload: Result<Json<Value>, JsonRejection>,
) -> Response {
    run(
        service,
        payload,
        principal,
        ContextOffloader::read_file_json,
        answer,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_only() {
        for ok in [
            "localhost",
            "localhost:8002",
            "127.0.0.1:1",
            "[::1]:80",
            "[::1]",
        ] {
            assert!(loopback_authority(ok), "{ok}");
        }
        for bad in [
            "evil.com",
            "127.0.0.1.evil.com",
            "localhost.evil:80",
            "[::2]:1",
            "",
        ] {
            assert!(!loopback_authority(bad), "{bad}");
        }
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd") && !constant_time_eq(b"a", b"ab"));
    }

    #[test]
    fn debug_never_shows_the_token() {
        let s = Service::new(ContextOffloader::new()).token("s3cret");
        assert!(!format!("{s:?}").contains("s3cret"));
    }
}

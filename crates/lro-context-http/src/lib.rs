//! ReMe's context-offload HTTP API over [`lro_context`]: `POST
//! /context_offload`, `POST /grep` and `POST /read_file`, with ReMe's JSON
//! shapes (`{success, answer, messages, metadata}`), so ReMe clients work
//! unchanged.
//!
//! The service hands out file contents, so it guards itself: `store_dir`
//! and every path must resolve inside one of the store roots (else 400).
//! In front, the [`lro_http::Guard`] the caller builds: `Host` a loopback
//! name and `Origin`, when sent, a loopback page or an allowed one (else
//! 403, against DNS rebinding); with tokens configured, `Authorization:
//! Bearer <token>` on every request (else 401), and a token required to
//! listen beyond loopback; bodies of at most 32 MiB read within 60 s, and
//! two requests per CPU at once ([`lro_http::serve::Limits::context`]).
//! Every refusal, and every unknown route, answers in ReMe's JSON shape.
//!
//! ```no_run
//! use lro_context::{ContextOffloader, Roots};
//! use lro_context_http::{Service, serve};
//! use lro_http::{Guard, auth::Tokens, serve::Limits};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let roots = Roots::new(["/var/lib/agent/context"])?;
//! let service = Service::new(ContextOffloader::new().roots(roots));
//! let addr = "127.0.0.1:8002".parse()?;
//! let mut tokens = Tokens::new();
//! tokens.add_entry("s3cret=agent", "example")?;
//! let guard = Guard::new(addr, tokens).limits(Limits::context());
//! serve(addr, service, guard, std::future::pending(), |addr| {
//!     eprintln!("listening on http://{addr}");
//! })
//! .await?;
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::net::SocketAddr;

use axum::{
    Extension, Json, Router,
    extract::{DefaultBodyLimit, State, rejection::JsonRejection},
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::{MethodRouter, post},
};
use lro_context::{ContextError, ContextOffloader, FileContents};
use lro_core::{error::chain, principal::Principal};
use lro_http::{Guard, body::Expect, refusal::Refusal};
use lro_store::mirror::{Mirror, Op};
use serde_json::{Value, json};

/// The service's state: the offloader, with its store roots.
#[derive(Debug, Clone)]
pub struct Service {
    offloader: ContextOffloader,
    key: Option<lro_core::principal::FolderKey>,
    mirror: Option<Mirror>,
}

impl Service {
    /// A service over `offloader`, whose roots confine every path.
    pub fn new(offloader: ContextOffloader) -> Self {
        Self {
            offloader,
            key: None,
            mirror: None,
        }
    }

    /// Shares entries through `store` with every replica given the same
    /// store roots in the same order: each stored file is copied to it, and
    /// copied back, for its owner only, before a read or a grep on a
    /// replica that lacks it (`lro_store::mirror`, as the layer's context
    /// tools do). Defaults to none: entries stay on this server's disk.
    #[must_use]
    pub fn store(mut self, store: std::sync::Arc<dyn lro_store::Store>) -> Self {
        self.mirror = Some(Mirror::new(store, self.offloader.store_roots().clone()));
        self
    }

    /// Sets the key principal folders are named with (see
    /// [`Principal::keyed`]). Defaults to none: the unkeyed digest.
    #[must_use]
    pub fn principal_key(mut self, key: lro_core::principal::FolderKey) -> Self {
        self.key = Some(key);
        self
    }

    /// The routes, without the guards ([`serve`] puts them in front).
    pub fn router(self) -> Router {
        Router::new()
            // ReMe's clients read the files' contents from the answer.
            .route(
                "/context_offload",
                handler(
                    Op::Offload,
                    |o, p, args| o.offload_json(p, args, FileContents::Included),
                    |v| (StatusCode::OK, Json(v)).into_response(),
                ),
            )
            .route(
                "/grep",
                handler(Op::Grep, ContextOffloader::grep_json, answer),
            )
            .route(
                "/read_file",
                handler(Op::ReadFile, ContextOffloader::read_file_json, answer),
            )
            .fallback(|| async { refuse(StatusCode::NOT_FOUND, "no such route".to_owned()) })
            // The guard has bounded the body already.
            .layer(DefaultBodyLimit::disable())
            .with_state(self)
    }
}

/// Why the service could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The server failed while running.
    #[error("the HTTP server failed")]
    Serve(#[source] std::io::Error),
}

/// Serves `service` on `addr` behind `guard` (made for `addr`; its
/// refusals take ReMe's shape here) until `shutdown` resolves; `ready` gets
/// the bound address (port 0 picks one).
///
/// # Errors
///
/// [`ServeError`] when the address cannot be bound or the server fails.
pub async fn serve(
    addr: SocketAddr,
    service: Service,
    guard: Guard,
    shutdown: impl Future<Output = ()> + Send + 'static,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    // ReMe's bodies are JSON of their own shape, not JSON-RPC.
    let guard = guard
        .respond(|r: &Refusal| refuse(r.status(), r.to_string()))
        .expect(Expect::Json);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| ServeError::Bind { addr, source })?;
    ready(bound);
    guard
        .serve(listener, service.router(), shutdown)
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
    refuse(status, chain(err).to_string())
}

/// Runs `op` on the body off the async threads; `ok` turns its result into
/// the response.
async fn run<T: Stored>(
    service: Service,
    kind: Op,
    payload: Result<Json<Value>, JsonRejection>,
    principal: Option<Extension<Principal>>,
    op: fn(&ContextOffloader, &Principal, Value) -> Result<T, ContextError>,
    ok: fn(T) -> Response,
) -> Response {
    // Anonymous unless an authenticating layer put a principal in the
    // request's extensions.
    let principal = principal.map(|Extension(p)| p).unwrap_or_default();
    let principal = match &service.key {
        Some(key) => principal.keyed(key),
        None => principal,
    };
    let Json(args) = match payload {
        Ok(body) => body,
        Err(e) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                format!("the body is not JSON: {}", e.body_text()),
            );
        }
    };
    if let Some(mirror) = &service.mirror {
        mirror.before(&principal, kind, &args).await;
    }
    let (offloader, who) = (service.offloader.clone(), principal.clone());
    match tokio::task::spawn_blocking(move || op(&offloader, &who, args)).await {
        Ok(Ok(mut out)) => {
            if let (Some(mirror), Some(answer)) = (&service.mirror, out.stored()) {
                mirror.share(&principal, answer).await;
            }
            ok(out)
        }
        Ok(Err(e)) => error_reply(&e),
        Err(e) => refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the request failed: {}", chain(&e)),
        ),
    }
}

fn answer(text: String) -> Response {
    reply(StatusCode::OK, true, text, json!([]), json!({}))
}

/// The `POST` handler of one route: `op` on the JSON body, as the caller's
/// principal, its answer shaped by `ok`.
fn handler<T: Stored>(
    kind: Op,
    op: fn(&ContextOffloader, &Principal, Value) -> Result<T, ContextError>,
    ok: fn(T) -> Response,
) -> MethodRouter<Service> {
    post(
        move |State(service): State<Service>,
              principal: Option<Extension<Principal>>,
              payload: Result<Json<Value>, JsonRejection>| {
            run(service, kind, payload, principal, op, ok)
        },
    )
}

/// An answer, and the offload answer whose stored files a shared store
/// copies.
trait Stored: Send + 'static {
    fn stored(&mut self) -> Option<&mut Value> {
        None
    }
}

impl Stored for Value {
    fn stored(&mut self) -> Option<&mut Value> {
        Some(self)
    }
}

impl Stored for String {}

//! What the three HTTP faces share (`memory-server --http`, `lro proxy
//! --http`, `lro context serve`): bearer authentication that puts the
//! caller's [`Principal`](lro_core::principal::Principal) into the request
//! ([`auth`]), sessions bound to the principal that opened them
//! ([`sessions`]), the `Host`/`Origin` check ([`origin`]), a cap on requests in
//! progress ([`slots`]), the body read whole within a size and a time and
//! checked to be what the face takes, one JSON-RPC message for the MCP
//! faces ([`body`]), JSON refusals ([`refusal`]), and the
//! accept loop with its header-read timeout and connection cap ([`serve`]).
//! [`Guard`] puts them together in that order; a face hands it its router.
//!
//! It speaks HTTP only: no MCP (no rmcp; `lro-tidy` checks).
//!
//! ```no_run
//! use axum::{Router, routing::post};
//! use lro_http::{Guard, auth::Tokens, serve::Limits};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let mut tokens = Tokens::new();
//! tokens.add_list(&std::env::var("LRO_BEARER_TOKENS")?, "LRO_BEARER_TOKENS")?;
//! let addr = "0.0.0.0:8080".parse()?;
//! let guard = Guard::new(addr, tokens)
//!     .allow_origins(["https://app.example.test"])?
//!     .limits(Limits::mcp())
//!     .protected(false)?;
//! let app = Router::new().route("/mcp", post(|body: String| async move { body }));
//! let listener = tokio::net::TcpListener::bind(addr).await?;
//! guard.serve(listener, app, std::future::pending()).await?;
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod auth;
pub mod body;
pub mod check;
#[cfg(feature = "clap")]
pub mod cli;
mod jsonrpc;
pub mod origin;
pub mod refusal;
pub mod reshape;
pub mod serve;
pub mod sessions;
pub mod slots;

use std::{convert::Infallible, future::Future, net::SocketAddr};

use axum::{body::Body, response::Response};
use http::Request;
use tokio::net::TcpListener;
use tower::{Service, ServiceBuilder};

use crate::{
    auth::Tokens,
    body::{BodyLayer, Expect},
    check::CheckLayer,
    origin::{BadOrigin, OriginPolicy},
    refusal::{Respond, Responder},
    reshape::ReshapeLayer,
    serve::Limits,
    sessions::{SessionCaps, SessionsLayer},
    slots::SlotsLayer,
};

/// The flag that lets a face listen beyond loopback without tokens.
pub const ALLOW_UNAUTHENTICATED_FLAG: &str = "--allow-unauthenticated";

/// Why a face will not start; every variant is the operator's to fix (a
/// usage error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GuardError {
    /// A token entry or file was refused.
    #[error(transparent)]
    Token(#[from] auth::TokenError),
    /// An allowed origin is not an origin.
    #[error(transparent)]
    Origin(#[from] BadOrigin),
    /// A non-loopback address without tokens, and without the explicit flag.
    #[error(
        "refusing to listen on {0} without authentication: configure tokens (--bearer, \
         --bearer-file or {env}), listen on a loopback address, or pass {flag}",
        env = auth::TOKENS_ENV,
        flag = ALLOW_UNAUTHENTICATED_FLAG
    )]
    Unprotected(SocketAddr),
}

/// One face's guards and bounds, in the order a request meets them: the
/// `Host`/`Origin` check (403), the bearer check (401; inserts the
/// principal), the session binding and caps (404 for another principal's
/// `Mcp-Session-Id`; 429 or 503 for a new session at a cap with none of
/// the caller's own idle to close), a request slot (503 after the queue timeout), the body read
/// whole (413, 408, and for `POST` a 400 with -32700 unless it is JSON, or
/// with -32600 unless it is one JSON-RPC message), then the face's own
/// service, whose 405, 406 and 415 answers are put in the face's shape
/// ([`reshape`]).
#[derive(Debug, Clone)]
pub struct Guard {
    bind: SocketAddr,
    tokens: Tokens,
    origins: OriginPolicy,
    limits: Limits,
    responder: Responder,
    expect: Expect,
    sessions: SessionsLayer,
}

impl Guard {
    /// The guard of a face listening on `bind` with `tokens` (none: no
    /// authentication). Defaults to loopback origins only,
    /// [`Limits::mcp`], JSON-RPC refusals, and one JSON-RPC message per
    /// `POST` ([`Expect::JsonRpc`]): an MCP face.
    #[must_use]
    pub fn new(bind: SocketAddr, tokens: Tokens) -> Self {
        Self {
            origins: OriginPolicy::new(bind, !tokens.is_empty()),
            bind,
            limits: Limits::mcp(),
            responder: Responder::default(),
            expect: Expect::JsonRpc,
            sessions: SessionsLayer::with_responder(Responder::default())
                .revoked_by(tokens.clone()),
            tokens,
        }
    }

    /// Also accepts these browser origins (see [`OriginPolicy`]).
    ///
    /// # Errors
    ///
    /// [`BadOrigin`] for a value that is not `scheme://host[:port]`.
    pub fn allow_origins(
        mut self,
        origins: impl IntoIterator<Item = impl AsRef<str>>,
    ) -> Result<Self, BadOrigin> {
        self.origins = self.origins.allow_origins(origins)?;
        Ok(self)
    }

    /// The bounds. Defaults to [`Limits::mcp`].
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// How refusals are worded. Defaults to [`refusal::JsonRpc`].
    #[must_use]
    pub fn respond(mut self, respond: impl Respond) -> Self {
        self.responder = Responder::new(respond);
        self.sessions =
            SessionsLayer::with_responder(self.responder.clone()).revoked_by(self.tokens.clone());
        self
    }

    /// What a `POST` body must be before the face sees it. Defaults to
    /// [`Expect::JsonRpc`] (the MCP faces); a face with JSON bodies of its
    /// own shape asks for [`Expect::Json`].
    #[must_use]
    pub fn expect(mut self, expect: Expect) -> Self {
        self.expect = expect;
        self
    }

    /// Whether tokens are configured.
    #[must_use]
    pub fn authenticated(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// The bounds in force.
    #[must_use]
    pub fn bounds(&self) -> &Limits {
        &self.limits
    }

    /// The guard, if it may listen where it was told to: a non-loopback
    /// address needs tokens, or `allow_unauthenticated` (the operator's
    /// explicit [`ALLOW_UNAUTHENTICATED_FLAG`]).
    ///
    /// # Errors
    ///
    /// [`GuardError::Unprotected`] otherwise.
    pub fn protected(self, allow_unauthenticated: bool) -> Result<Self, GuardError> {
        if self.bind.ip().is_loopback() || self.authenticated() {
            return Ok(self);
        }
        if !allow_unauthenticated {
            return Err(GuardError::Unprotected(self.bind));
        }
        tracing::warn!(
            addr = %self.bind,
            "listening beyond loopback without authentication ({ALLOW_UNAUTHENTICATED_FLAG}): \
             anyone who reaches this address can call every tool and read every result"
        );
        Ok(self)
    }

    /// `service` behind the guards.
    pub fn wrap<S>(
        &self,
        service: S,
    ) -> impl Service<
        Request<Body>,
        Response = Response,
        Error = Infallible,
        Future = check::BoxFuture,
    > + Clone
    + Send
    + 'static
    where
        S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone + Send + 'static,
        S::Future: Send + 'static,
    {
        let limits = &self.limits;
        let responder = &self.responder;
        ServiceBuilder::new()
            .layer(ReshapeLayer::with_responder(responder.clone()))
            .layer(CheckLayer::with_responder(
                self.origins.clone(),
                responder.clone(),
            ))
            .layer(CheckLayer::with_responder(
                self.tokens.clone(),
                responder.clone(),
            ))
            .layer(
                self.sessions.clone().caps(
                    SessionCaps::new()
                        .total(limits.max_sessions)
                        .per_principal(limits.max_sessions_per_principal)
                        .idle_timeout(limits.session_idle_timeout),
                ),
            )
            .layer(SlotsLayer::with_responder(
                limits.max_requests,
                limits.queue_timeout,
                responder.clone(),
            ))
            .layer(
                BodyLayer::with_responder(
                    limits.max_body_bytes,
                    limits.body_read_timeout,
                    responder.clone(),
                )
                .expect(self.expect),
            )
            .service(service)
    }

    /// Serves `service` behind the guards on `listener` until `shutdown`
    /// resolves ([`serve::serve`]).
    ///
    /// # Errors
    ///
    /// As [`serve::serve`].
    pub async fn serve<S>(
        &self,
        listener: TcpListener,
        service: S,
        shutdown: impl Future<Output = ()>,
    ) -> std::io::Result<()>
    where
        S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone + Send + 'static,
        S::Future: Send + 'static,
    {
        serve::serve(listener, self.wrap(service), &self.limits, shutdown).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beyond_loopback_needs_tokens_or_the_flag() {
        let open: SocketAddr = "0.0.0.0:1".parse().unwrap();
        let err = Guard::new(open, Tokens::new())
            .protected(false)
            .unwrap_err();
        assert!(
            err.to_string().contains(ALLOW_UNAUTHENTICATED_FLAG),
            "{err}"
        );
        assert!(Guard::new(open, Tokens::new()).protected(true).is_ok());
        let mut tokens = Tokens::new();
        tokens.add_entry("t=a", "x").unwrap();
        assert!(Guard::new(open, tokens).protected(false).is_ok());
        let local: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert!(Guard::new(local, Tokens::new()).protected(false).is_ok());
    }
}

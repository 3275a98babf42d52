//! A check of a request's head in front of a service: the bearer check
//! ([`Tokens`](crate::auth::Tokens)) and the `Host`/`Origin` check
//! ([`OriginPolicy`](crate::origin::OriginPolicy)) are both [`Check`]s, run
//! by one tower layer, [`CheckLayer`].
//!
//! ```
//! use axum::{Router, routing::get};
//! use lro_http::{auth::Tokens, check::CheckLayer, refusal::JsonRpc};
//!
//! let mut tokens = Tokens::new();
//! tokens.add_entry("tok=alice", "example")?;
//! let app: Router = Router::new()
//!     .route("/", get(|| async { "hi" }))
//!     .layer(CheckLayer::new(tokens, JsonRpc));
//! # Ok::<(), lro_http::auth::TokenError>(())
//! ```

use std::{
    convert::Infallible,
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use axum::{body::Body, response::Response};
use http::Request;
use tower::{Layer, Service};

use crate::refusal::{Refusal, Respond, Responder};

/// A decision on a request's head: pass it (possibly adding extensions,
/// such as the caller's principal) or refuse it. Implemented for
/// [`Tokens`](crate::auth::Tokens), [`OriginPolicy`](crate::origin::OriginPolicy),
/// `()` (passes everything) and closures.
pub trait Check: Send + Sync + 'static {
    /// Passes `request` (`Ok`) or says why not.
    ///
    /// # Errors
    ///
    /// The [`Refusal`] the face answers with.
    fn check(&self, request: &mut Request<Body>) -> Result<(), Refusal>;
}

impl Check for () {
    fn check(&self, _: &mut Request<Body>) -> Result<(), Refusal> {
        Ok(())
    }
}

impl<F> Check for F
where
    F: Fn(&mut Request<Body>) -> Result<(), Refusal> + Send + Sync + 'static,
{
    fn check(&self, request: &mut Request<Body>) -> Result<(), Refusal> {
        self(request)
    }
}

/// The layer that runs a [`Check`] before the inner service, answering a
/// refusal with the face's [`Respond`].
pub struct CheckLayer<C> {
    check: Arc<C>,
    responder: Responder,
}

impl<C> Clone for CheckLayer<C> {
    fn clone(&self) -> Self {
        Self {
            check: self.check.clone(),
            responder: self.responder.clone(),
        }
    }
}

impl<C> std::fmt::Debug for CheckLayer<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CheckLayer")
    }
}

impl<C: Check> CheckLayer<C> {
    /// Runs `check`, refusing with `respond`.
    #[must_use]
    pub fn new(check: C, respond: impl Respond) -> Self {
        Self {
            check: Arc::new(check),
            responder: Responder::new(respond),
        }
    }

    pub(crate) fn with_responder(check: C, responder: Responder) -> Self {
        Self {
            check: Arc::new(check),
            responder,
        }
    }
}

impl<S, C> Layer<S> for CheckLayer<C> {
    type Service = Checked<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        Staged::new(inner, self.clone())
    }
}

/// The service [`CheckLayer`] makes.
pub type Checked<S, C> = Staged<S, CheckLayer<C>>;

impl<C: Check> Stage for CheckLayer<C> {
    fn handle<S: Inner>(&self, mut inner: S, mut request: Request<Body>) -> BoxFuture {
        match self.check.check(&mut request) {
            Ok(()) => Box::pin(inner.call(request)),
            Err(refusal) => {
                let response = self.responder.refuse(&refusal);
                Box::pin(async move { Ok(response) })
            }
        }
    }
}

/// The future every service of this crate returns.
pub type BoxFuture = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

/// The service a [`Stage`] calls: one of `Request<Body>` that answers every
/// request, with a future it can hand on.
pub trait Inner:
    Service<Request<Body>, Response = Response, Error = Infallible, Future: Send + 'static>
    + Send
    + 'static
{
}

impl<S> Inner for S where
    S: Service<Request<Body>, Response = Response, Error = Infallible, Future: Send + 'static>
        + Send
        + 'static
{
}

/// A step around the inner service (a check of the head, reading the body,
/// taking a request slot): [`CheckLayer`], [`BodyLayer`](crate::body::BodyLayer)
/// and [`SlotsLayer`](crate::slots::SlotsLayer) are stages, each run by
/// [`Staged`], which their `Layer` makes.
pub trait Stage: Clone + Send + Sync + 'static {
    /// Handles `request`, calling `inner` (already ready) when it passes.
    fn handle<S: Inner>(&self, inner: S, request: Request<Body>) -> BoxFuture;
}

/// `tower::Layer` for stages: the layer is the stage, and makes [`Staged`]
/// around the inner service.
macro_rules! stage_layer {
    ($stage:ty) => {
        impl<S> tower::Layer<S> for $stage {
            type Service = $crate::check::Staged<S, Self>;

            fn layer(&self, inner: S) -> Self::Service {
                $crate::check::Staged::new(inner, self.clone())
            }
        }
    };
}
pub(crate) use stage_layer;

/// The service a [`Stage`]'s layer makes.
#[derive(Debug, Clone)]
pub struct Staged<S, T> {
    inner: S,
    stage: T,
}

impl<S, T> Staged<S, T> {
    pub(crate) fn new(inner: S, stage: T) -> Self {
        Self { inner, stage }
    }
}

impl<S, T> Service<Request<Body>> for Staged<S, T>
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
    T: Stage,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> BoxFuture {
        self.stage.handle(take_ready(&mut self.inner), request)
    }
}

/// The service that was polled ready, leaving a fresh clone in its place
/// (tower's rule for services called from a future).
fn take_ready<S: Clone>(inner: &mut S) -> S {
    let clone = inner.clone();
    std::mem::replace(inner, clone)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::StatusCode;
    use tower::ServiceExt as _;

    #[tokio::test]
    async fn a_refusal_never_reaches_the_inner_service() {
        let inner = tower::service_fn(|_: Request<Body>| async {
            Ok::<_, Infallible>(Response::new(Body::from("inner")))
        });
        let no = |_: &mut Request<Body>| Err(Refusal::Forbidden("no".into()));
        let refused = CheckLayer::new(no, ())
            .layer(inner)
            .oneshot(Request::new(Body::empty()))
            .await
            .unwrap();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN);
        let passed = CheckLayer::new((), ())
            .layer(inner)
            .oneshot(Request::new(Body::empty()))
            .await
            .unwrap();
        assert_eq!(passed.status(), StatusCode::OK);
    }
}

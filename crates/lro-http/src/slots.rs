//! A cap on concurrent requests that counts a request until its response
//! body ends. tower's `ConcurrencyLimit` frees its slot when the response
//! head is ready; an MCP face answers a tool call with an SSE stream whose
//! head comes at once and whose body runs for the whole call, so that
//! would count nothing. A request waits up to a queue timeout for a slot,
//! then gets 503 with `Retry-After`, so a full server answers instead of
//! hanging its clients.
//!
//! ```
//! use std::time::Duration;
//! use axum::{Router, routing::get};
//! use lro_http::slots::SlotsLayer;
//!
//! let app: Router = Router::new()
//!     .route("/", get(|| async { "hi" }))
//!     .layer(SlotsLayer::new(64, Duration::from_secs(5), ()));
//! ```

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use axum::{body::Body, response::Response};
use bytes::Bytes;
use http::Request;
use tokio::sync::Semaphore;

use crate::{
    check::{BoxFuture, Inner, Stage, stage_layer},
    refusal::{Refusal, Respond, Responder},
};

/// The layer that caps concurrent requests; see the module docs.
#[derive(Debug, Clone)]
pub struct SlotsLayer {
    slots: Arc<Semaphore>,
    queue_timeout: Duration,
    responder: Responder,
}

impl SlotsLayer {
    /// At most `slots` requests at once (at least one); a request waits up
    /// to `queue_timeout` for one, then is refused with `respond`.
    #[must_use]
    pub fn new(slots: usize, queue_timeout: Duration, respond: impl Respond) -> Self {
        Self::with_responder(slots, queue_timeout, Responder::new(respond))
    }

    pub(crate) fn with_responder(
        slots: usize,
        queue_timeout: Duration,
        responder: Responder,
    ) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(slots.max(1))),
            queue_timeout,
            responder,
        }
    }
}

stage_layer!(SlotsLayer);

impl Stage for SlotsLayer {
    fn handle<S: Inner>(&self, mut inner: S, request: Request<Body>) -> BoxFuture {
        let layer = self.clone();
        Box::pin(async move {
            let waited = tokio::time::timeout(layer.queue_timeout, layer.slots.acquire_owned());
            let Ok(Ok(permit)) = waited.await else {
                tracing::debug!("refused: every request slot is busy");
                return Ok(layer.responder.refuse(&Refusal::Busy));
            };
            let response = inner.call(request).await?;
            Ok(hold_until_body_ends(response, permit))
        })
    }
}

/// `response` with a body that keeps `held` (a slot, a drop guard) until
/// the body is dropped: when it ends, or when the client goes away.
pub(crate) fn hold_until_body_ends<T: Send + Unpin + 'static>(
    response: Response,
    held: T,
) -> Response {
    response.map(|body| Body::new(Held { body, _held: held }))
}

/// A response body that keeps something until it is dropped.
struct Held<T> {
    body: Body,
    _held: T,
}

impl<T: Unpin> http_body::Body for Held<T> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    use http::StatusCode;
    use tower::{Layer as _, ServiceExt as _};

    #[tokio::test]
    async fn a_slot_is_held_until_the_body_is_dropped() {
        let ok = tower::service_fn(|_: Request<Body>| async {
            Ok::<_, Infallible>(Response::new(Body::from("x")))
        });
        let layer = SlotsLayer::new(1, Duration::from_millis(20), ());
        let first = layer
            .layer(ok)
            .oneshot(Request::new(Body::empty()))
            .await
            .unwrap();
        assert_eq!(first.status(), StatusCode::OK);
        let busy = layer
            .layer(ok)
            .oneshot(Request::new(Body::empty()))
            .await
            .unwrap();
        assert_eq!(busy.status(), StatusCode::SERVICE_UNAVAILABLE);
        drop(first);
        let again = layer
            .layer(ok)
            .oneshot(Request::new(Body::empty()))
            .await
            .unwrap();
        assert_eq!(again.status(), StatusCode::OK);
    }
}

//! The accept loop every face runs: HTTP/1.1 on hyper with a header-read
//! timeout (hyper's own, which also closes a keep-alive connection that
//! sends no next request in time), a cap on open connections (a connection
//! past it waits in the kernel's listen queue: the loop takes the next one
//! when a slot frees, so it never spins and never starves), and a graceful
//! shutdown (hyper-util's).
//!
//! HTTP/2 is not served, not even cleartext with prior knowledge (h2c; a
//! client sending the HTTP/2 preface has its connection closed at once).
//! The MCP clients speak HTTP/1.1, and two of this loop's bounds have no
//! HTTP/2 counterpart in hyper: hyper-util's protocol detection reads the
//! first bytes with no timeout, and hyper's HTTP/2 server has neither a
//! header-read nor an idle timeout, so an HTTP/2 connection with no stream
//! open would keep its connection slot for ever. Serving it would need a
//! per-connection count of open streams and a shutdown of our own per
//! connection. Put a reverse proxy in front for HTTP/2.
//!
//! ```no_run
//! use axum::{Router, routing::get};
//! use lro_http::serve::{Limits, serve};
//!
//! # async fn run() -> std::io::Result<()> {
//! let app = Router::new().route("/", get(|| async { "hi" }));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! serve(listener, app, &Limits::mcp(), std::future::pending()).await
//! # }
//! ```

use std::{convert::Infallible, future::Future, sync::Arc, time::Duration};

use axum::{body::Body, response::Response};
use http::Request;
use hyper::body::Incoming;
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    server::graceful::GracefulShutdown,
    service::TowerToHyperService,
};
use tokio::{net::TcpListener, sync::Semaphore};
use tower::{Service, ServiceExt as _};

/// The bounds of one face. [`Limits::mcp`] and [`Limits::context`] are the
/// two faces' defaults; docs/operating.md says why each is what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Time a client has to send a request's head, counted from the
    /// connection's start or the end of its previous response.
    pub header_read_timeout: Duration,
    /// Time a client has to send a whole request body.
    pub body_read_timeout: Duration,
    /// Largest request body.
    pub max_body_bytes: usize,
    /// Connections open at once.
    pub max_connections: usize,
    /// Requests in progress at once (a request counts until its response
    /// body ends).
    pub max_requests: usize,
    /// How long a request waits for a request slot before a 503.
    pub queue_timeout: Duration,
}

impl Limits {
    /// The MCP faces' defaults: a 10 s header-read timeout, a 30 s body-read
    /// timeout, 4 MiB bodies (rmcp's own limit), [`default_max_connections`]
    /// connections, 256 requests at once, a 10 s queue.
    #[must_use]
    pub fn mcp() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            max_body_bytes: 4 << 20,
            max_connections: default_max_connections(),
            max_requests: 256,
            queue_timeout: Duration::from_secs(10),
        }
    }

    /// The context service's defaults: as [`Limits::mcp`], with 32 MiB
    /// bodies read within 60 s, and two requests per CPU at once (each runs
    /// a CPU-bound pass over its history), waiting up to 30 s.
    #[must_use]
    pub fn context() -> Self {
        let cpus = std::thread::available_parallelism().map_or(2, usize::from);
        Self {
            body_read_timeout: Duration::from_secs(60),
            max_body_bytes: 32 << 20,
            max_requests: 2 * cpus,
            queue_timeout: Duration::from_secs(30),
            ..Self::mcp()
        }
    }

    /// Sets [`Limits::header_read_timeout`].
    #[must_use]
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// Sets [`Limits::body_read_timeout`].
    #[must_use]
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout;
        self
    }

    /// Sets [`Limits::max_body_bytes`].
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Sets [`Limits::max_connections`] (at least 1).
    #[must_use]
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// Sets [`Limits::max_requests`] (at least 1).
    #[must_use]
    pub fn max_requests(mut self, n: usize) -> Self {
        self.max_requests = n.max(1);
        self
    }

    /// Sets [`Limits::queue_timeout`].
    #[must_use]
    pub fn queue_timeout(mut self, timeout: Duration) -> Self {
        self.queue_timeout = timeout;
        self
    }
}

/// 1024 connections, or half the process's open-file limit when that is
/// lower: each connection is a descriptor, and the server needs the rest
/// for offload files, the context store and (the proxy) its children's
/// pipes. At least 16.
#[must_use]
pub fn default_max_connections() -> usize {
    let soft = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map_or(u64::MAX, |(soft, _)| soft);
    usize::try_from(soft / 2)
        .unwrap_or(usize::MAX)
        .clamp(16, 1024)
}

/// Serves `service` on `listener` within `limits` until `shutdown`
/// resolves, then stops accepting and waits for the open connections to
/// finish their requests (an idle one is closed at once).
///
/// `limits.header_read_timeout` and `max_connections` apply here; the
/// request-level bounds are [`Guard`](crate::Guard)'s.
///
/// # Errors
///
/// None today: a failed `accept` (out of descriptors, a connection reset
/// before it was taken) is logged and retried after a pause. The `Result`
/// leaves room for failures a later listener may have.
pub async fn serve<S>(
    listener: TcpListener,
    service: S,
    limits: &Limits,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()>
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    tokio::pin!(shutdown);
    loop {
        // A slot first: past the cap, connections wait in the listen queue.
        let permit = tokio::select! {
            permit = slots.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    tracing::warn!(%err, "accepting a connection failed; retrying shortly");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Small JSON-RPC messages and SSE events go out at once.
        let _ = stream.set_nodelay(true);
        let service = service
            .clone()
            .map_request(|request: Request<Incoming>| request.map(Body::new));
        let connection =
            http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::debug!(%err, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_bounded() {
        let n = default_max_connections();
        assert!((16..=1024).contains(&n), "{n}");
        let c = Limits::context();
        assert_eq!(c.max_body_bytes, 32 << 20);
        assert!(c.max_requests >= 2);
        assert_eq!(Limits::mcp().max_connections(0).max_connections, 1);
    }
}

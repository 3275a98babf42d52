//! The accept loop every face runs: HTTP/1.1 on hyper with a header-read
//! timeout (hyper's own, which also closes a keep-alive connection that
//! sends no next request in time), a cap on open connections kept within
//! the open-file limit, and a graceful shutdown (hyper-util's).
//!
//! At the cap a new connection is taken and the connection idle longest is
//! closed: one that has sent no complete request head yet, or a keep-alive
//! one between requests. So slow clients, however many and however often
//! they reconnect, cannot keep a good request out: it arrives newest and
//! is answered before it is the idle longest. A connection in a request is
//! never closed; when every one is, new connections wait in the kernel's
//! listen queue until one ends. Out of descriptors, `accept` sheds the same
//! way instead of failing in a loop.
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

use std::{
    collections::HashMap,
    convert::Infallible,
    future::Future,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use axum::{body::Body, response::Response};
use http::Request;
use hyper::body::Incoming;
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    server::graceful::GracefulShutdown,
    service::TowerToHyperService,
};
use tokio::{
    net::TcpListener,
    sync::{Notify, oneshot},
};
use tower::{Service, ServiceExt as _};

use crate::{sessions::MAX_BOUND, slots::hold_until_body_ends};

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
    /// MCP sessions open at once, all principals together.
    pub max_sessions: usize,
    /// MCP sessions one principal may hold open.
    pub max_sessions_per_principal: usize,
    /// A session with nothing in progress for this long counts as ended
    /// (the face's own idle timeout); `None`: never.
    pub session_idle_timeout: Option<Duration>,
}

impl Limits {
    /// The MCP faces' defaults: a 10 s header-read timeout, a 30 s body-read
    /// timeout, 4 MiB bodies (rmcp's own limit), [`default_max_connections`]
    /// connections, 256 requests at once, a 10 s queue, 1024 sessions, half
    /// of them per principal, idle after 5 minutes (rmcp's keep-alive).
    #[must_use]
    pub fn mcp() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            max_body_bytes: 4 << 20,
            max_connections: default_max_connections(),
            max_requests: 256,
            queue_timeout: Duration::from_secs(10),
            max_sessions: 1024,
            max_sessions_per_principal: 512,
            session_idle_timeout: Some(Duration::from_secs(300)),
        }
    }

    /// The context service's defaults: as [`Limits::mcp`], with 32 MiB
    /// bodies read within 60 s, two requests per CPU at once (each runs a
    /// CPU-bound pass over its history), waiting up to 30 s, and no session
    /// cap (it has no sessions: every request would count as opening one).
    #[must_use]
    pub fn context() -> Self {
        let cpus = std::thread::available_parallelism().map_or(2, usize::from);
        Self {
            body_read_timeout: Duration::from_secs(60),
            max_body_bytes: 32 << 20,
            max_requests: 2 * cpus,
            queue_timeout: Duration::from_secs(30),
            max_sessions: MAX_BOUND,
            max_sessions_per_principal: MAX_BOUND,
            session_idle_timeout: None,
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

    /// Sets [`Limits::max_sessions`] (at least 1), and
    /// [`Limits::max_sessions_per_principal`] to half of it (at least 1).
    #[must_use]
    pub fn max_sessions(mut self, n: usize) -> Self {
        self.max_sessions = n.max(1);
        self.max_sessions_per_principal = (n / 2).max(1);
        self
    }

    /// Sets [`Limits::max_sessions_per_principal`] (at least 1).
    #[must_use]
    pub fn max_sessions_per_principal(mut self, n: usize) -> Self {
        self.max_sessions_per_principal = n.max(1);
        self
    }

    /// Sets [`Limits::session_idle_timeout`].
    #[must_use]
    pub fn session_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.session_idle_timeout = timeout;
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
    (open_file_limit() / 2).clamp(16, 1024)
}

/// The process's soft open-file limit (`usize::MAX` when unknown).
fn open_file_limit() -> usize {
    rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .and_then(|soft| usize::try_from(soft).ok())
        .unwrap_or(usize::MAX)
}

/// `wanted`, lowered to what the open-file limit leaves after 32
/// descriptors kept for everything else (at least 16): a cap past the
/// limit would have `accept` fail instead of shedding.
fn connection_cap(wanted: usize) -> usize {
    let budget = open_file_limit().saturating_sub(32).max(16);
    if wanted > budget {
        tracing::warn!(
            wanted,
            budget,
            "--max-connections is above what the open-file limit allows; using the lower"
        );
    }
    wanted.clamp(1, budget)
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
/// None today: a failed `accept` is logged and retried (out of
/// descriptors: once a connection was shed or closed). The `Result` leaves
/// room for failures a later listener may have.
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
    let cap = connection_cap(limits.max_connections);
    let open = Arc::new(Open::default());
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    tokio::pin!(shutdown);
    loop {
        // At the cap with every connection in a request, new ones wait in
        // the listen queue until one ends or goes idle.
        if open.is_full(cap) {
            tokio::select! {
                () = open.changed.notified() => continue,
                () = &mut shutdown => break,
            }
        }
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(err) if out_of_descriptors(&err) => {
                    tracing::warn!(err = %lro_core::error::chain(&err), "out of descriptors: closing the connection idle longest");
                    if !open.shed_idle_longest() {
                        // Every descriptor is in use by a request: wait for one to end.
                        tokio::select! {
                            () = open.changed.notified() => {}
                            () = tokio::time::sleep(Duration::from_millis(100)) => {}
                            () = &mut shutdown => break,
                        }
                    }
                    continue;
                }
                Err(err) => {
                    // A connection reset before it was taken: the next one.
                    tracing::debug!(err = %lro_core::error::chain(&err), "accepting a connection failed");
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        if open.len() >= cap {
            open.shed_idle_longest();
        }
        // Small JSON-RPC messages and SSE events go out at once.
        let _ = stream.set_nodelay(true);
        let (id, shed) = open.add();
        let service = service
            .clone()
            .map_request({
                let open = open.clone();
                move |request: Request<Incoming>| {
                    open.begin(id);
                    request.map(Body::new)
                }
            })
            .map_response({
                let open = open.clone();
                move |response: Response| {
                    let done = Done {
                        open: open.clone(),
                        id,
                    };
                    hold_until_body_ends(response, done)
                }
            });
        let connection =
            http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        let connection = graceful.watch(connection);
        let open = open.clone();
        tokio::spawn(async move {
            tokio::select! {
                ended = connection => if let Err(err) = ended {
                    tracing::debug!(err = %lro_core::error::chain(&err), "connection ended with an error");
                },
                // Dropping the connection closes it.
                _ = shed => tracing::debug!("connection shed for a newer one"),
            }
            open.remove(id);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// Whether `accept` failed for want of a descriptor (EMFILE, ENFILE).
fn out_of_descriptors(err: &std::io::Error) -> bool {
    matches!(
        err.raw_os_error(),
        Some(code) if code == rustix::io::Errno::MFILE.raw_os_error()
            || code == rustix::io::Errno::NFILE.raw_os_error()
    )
}

/// The open connections: whether each is in a request, since when it has
/// been idle, and how to close it. At the cap a new connection sheds the
/// one idle longest (a slow client that has not sent its request head, or
/// a keep-alive connection between requests); a connection in a request is
/// never shed.
#[derive(Debug, Default)]
struct Open {
    table: Mutex<Table>,
    /// A connection ended or went idle.
    changed: Notify,
}

#[derive(Debug, Default)]
struct Table {
    next: u64,
    conns: HashMap<u64, Conn>,
}

#[derive(Debug)]
struct Conn {
    /// Requests whose response body has not ended.
    requests: usize,
    idle_since: Instant,
    /// `None` once shed: it is closing.
    close: Option<oneshot::Sender<()>>,
}

impl Conn {
    fn idle(&self) -> bool {
        self.requests == 0 && self.close.is_some()
    }
}

impl Open {
    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn len(&self) -> usize {
        self.table().conns.len()
    }

    /// At the cap with no connection to shed.
    fn is_full(&self, cap: usize) -> bool {
        let table = self.table();
        table.conns.len() >= cap && !table.conns.values().any(Conn::idle)
    }

    fn add(&self) -> (u64, oneshot::Receiver<()>) {
        let (tx, rx) = oneshot::channel();
        let mut table = self.table();
        let id = table.next;
        table.next += 1;
        table.conns.insert(
            id,
            Conn {
                requests: 0,
                idle_since: Instant::now(),
                close: Some(tx),
            },
        );
        (id, rx)
    }

    fn begin(&self, id: u64) {
        if let Some(conn) = self.table().conns.get_mut(&id) {
            conn.requests += 1;
        }
    }

    fn end(&self, id: u64) {
        if let Some(conn) = self.table().conns.get_mut(&id) {
            conn.requests = conn.requests.saturating_sub(1);
            conn.idle_since = Instant::now();
        }
        self.changed.notify_one();
    }

    fn remove(&self, id: u64) {
        self.table().conns.remove(&id);
        self.changed.notify_one();
    }

    /// Closes the connection idle longest; whether there was one.
    fn shed_idle_longest(&self) -> bool {
        let mut table = self.table();
        let oldest = table
            .conns
            .values_mut()
            .filter(|c| c.idle())
            .min_by_key(|c| c.idle_since);
        match oldest.and_then(|c| c.close.take()) {
            Some(close) => {
                let _ = close.send(());
                true
            }
            None => false,
        }
    }
}

/// Ends a connection's request when its response body is dropped.
struct Done {
    open: Arc<Open>,
    id: u64,
}

impl Drop for Done {
    fn drop(&mut self) {
        self.open.end(self.id);
    }
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
        assert!(connection_cap(usize::MAX) < usize::MAX);
    }

    #[test]
    fn the_idle_longest_is_shed_never_one_in_a_request() {
        let open = Open::default();
        let (busy, mut busy_rx) = open.add();
        let (_, mut older_rx) = open.add();
        let (_, mut newer_rx) = open.add();
        open.begin(busy);
        assert!(!open.is_full(3), "two are idle");
        assert!(open.shed_idle_longest());
        assert!(older_rx.try_recv().is_ok(), "the idle longest goes first");
        assert!(newer_rx.try_recv().is_err() && busy_rx.try_recv().is_err());
        assert!(open.shed_idle_longest());
        assert!(newer_rx.try_recv().is_ok());
        // Only the one in a request is left, and it is never shed.
        assert!(!open.shed_idle_longest() && open.is_full(3));
        open.end(busy);
        assert!(!open.is_full(3), "idle again once its response ended");
    }
}

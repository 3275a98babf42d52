//! The proxy's faces towards the client: stdio (one session) and streamable
//! HTTP at `/mcp` (one upstream session per client session).
//!
//! ```no_run
//! use lro_proxy::{Proxy, ProxyConfig, ProxyShared, Upstream, serve};
//! use std::time::Duration;
//!
//! # async fn run() -> Result<(), lro_proxy::ProxyError> {
//! let shared = ProxyShared::new(ProxyConfig::new(Upstream::command("my-server", [""; 0])));
//! shared.preflight().await?;
//! let make = {
//!     let shared = shared.clone();
//!     move || Proxy::new(shared.clone())
//! };
//! let addr = "127.0.0.1:0".parse().unwrap();
//! let options = serve::HttpOptions::new().session_idle_timeout(Some(Duration::from_secs(600)));
//! let guard = lro_http::Guard::new(addr, lro_http::auth::Tokens::new());
//! serve::http(addr, options, guard, make, std::future::pending(), |bound| eprintln!("on {bound}")).await?;
//! shared.shutdown().await;
//! # Ok(()) }
//! ```

use std::{future::Future, net::SocketAddr, time::Duration};

use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt as _};
use tokio_util::sync::CancellationToken;

use crate::{ProxyError, ProxyShared, reclaim::Reclaiming, refusal};

/// Path the streamable HTTP face serves.
pub const MCP_PATH: &str = "/mcp";

/// Why the stdio face stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stopped {
    /// The client closed the session (stdin EOF).
    ClientClosed,
    /// The upstream was lost; the sentence says how (a child's exit status).
    UpstreamLost(String),
    /// The client closed the session after its upstream failed: it did not
    /// start or answer `initialize`, or its child exited on its own. The
    /// sentence says how.
    UpstreamFailed(String),
    /// `shutdown` resolved (a signal).
    Shutdown,
}

/// Serves `handler` over stdin/stdout until the client closes its end of
/// stdin, the upstream is lost, or `shutdown` resolves; each of them ends
/// the calls still in progress with an error, sent before it returns. Call
/// [`ProxyShared::shutdown`] afterwards to reap the child.
///
/// The end of stdin is seen at any time, also while the handshake waits for
/// the upstream (rmcp reads no more lines until it has answered a
/// `server/discover`), so a proxy never outlives its client.
///
/// # Errors
///
/// [`ProxyError::Serve`] when the session never started, for example when
/// the upstream failed its `initialize` (the client got that error first).
pub async fn stdio<H: ServerHandler>(
    handler: H,
    shared: &ProxyShared,
    shutdown: impl Future<Output = ()>,
) -> Result<Stopped, ProxyError> {
    // A bad or over-long line gets a JSON-RPC error (see `lro_stdio`).
    let transport = lro_stdio::stdio();
    let input_ended = transport.input_ended();
    // Polled from the start, so a signal during the handshake is handled too.
    tokio::pin!(shutdown, input_ended);
    let serving = handler.serve(transport);
    tokio::pin!(serving);
    let running = tokio::select! {
        running = &mut serving => {
            running.map_err(|err| ProxyError::Serve(err.into()))?
        }
        why = shared.lost() => return Ok(Stopped::UpstreamLost(why)),
        () = &mut shutdown => return Ok(Stopped::Shutdown),
        () = &mut input_ended => {
            // The request being handled gets its error, sent while the
            // handshake ends (it reads the end of input next).
            shared.end_calls();
            let _ = tokio::time::timeout(SHUTDOWN_ANSWERS, serving).await;
            return Ok(client_closed(shared));
        }
    };
    let token = running.cancellation_token();
    let mut session = tokio::spawn(running.waiting());
    let stopped = tokio::select! {
        _ = &mut session => return Ok(client_closed(shared)),
        why = shared.lost() => Stopped::UpstreamLost(why),
        () = &mut shutdown => Stopped::Shutdown,
        () = &mut input_ended => client_closed(shared),
    };
    // Calls still in progress end with an error; cancelling then lets rmcp
    // send the answers still in flight (those errors, and the errors of
    // calls a dead upstream left pending) before the session ends.
    shared.end_calls();
    token.cancel();
    let _ = session.await;
    Ok(stopped)
}

/// The client closed the session: [`Stopped::UpstreamFailed`] when the
/// upstream had failed by then, else [`Stopped::ClientClosed`].
fn client_closed(shared: &ProxyShared) -> Stopped {
    match shared.failure() {
        Some(why) => Stopped::UpstreamFailed(why),
        None => Stopped::ClientClosed,
    }
}

/// How the HTTP face keeps its sessions: [`HttpOptions::new`], then a
/// setter for each setting that differs from its default.
///
/// ```
/// use std::time::Duration;
///
/// let options =
///     lro_proxy::serve::HttpOptions::new().session_idle_timeout(Some(Duration::from_secs(600)));
/// # let _ = options;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpOptions {
    session_idle_timeout: Option<Duration>,
}

/// The idle time after which a session is reclaimed, by default: long
/// enough for a person to read an answer and think between two calls (each
/// reclaim costs the client a new session and the upstream's state), short
/// enough that the children of clients that vanished without `DELETE` free
/// their slots within minutes. A call in progress never counts as idle.
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// How long a shutdown waits for the errors of the calls it ends to be sent.
const SHUTDOWN_ANSWERS: Duration = Duration::from_secs(2);

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            session_idle_timeout: Some(DEFAULT_SESSION_IDLE_TIMEOUT),
        }
    }
}

impl HttpOptions {
    /// The options with every setting at its default.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Ends a session when no message has passed in either direction for
    /// this long and no call is in progress, with its upstream (a command
    /// upstream's child exits). A client that goes away without closing its
    /// session (no `DELETE`) otherwise holds a child, and one of the
    /// [`ProxyConfig::max_sessions`](crate::ProxyConfig::max_sessions)
    /// slots, for ever. A call in progress is activity: a call longer than
    /// the timeout completes. `None` never ends an idle session.
    ///
    /// Defaults to [`DEFAULT_SESSION_IDLE_TIMEOUT`] (5 minutes).
    #[must_use]
    pub fn session_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.session_idle_timeout = timeout;
        self
    }
}

/// Serves a handler made by `make` for each client session as streamable
/// HTTP at `http://ADDR/mcp` behind `guard` (made for `addr`: its tokens,
/// origins and bounds), until `shutdown` resolves. `ready` gets the bound
/// address once the listener is up (port 0 picks a free port).
///
/// # Errors
///
/// [`ProxyError::Bind`] when the address cannot be bound, and
/// [`ProxyError::Serve`] when the server fails.
pub async fn http<H, F>(
    addr: SocketAddr,
    options: HttpOptions,
    guard: lro_http::Guard,
    make: F,
    shutdown: impl Future<Output = ()> + Send + 'static,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ProxyError>
where
    H: ServerHandler,
    F: Fn() -> H + Send + Sync + 'static,
{
    let ct = CancellationToken::new();
    // The guard checks Host and Origin (and that the body is one JSON-RPC
    // message within its size) before rmcp sees the request.
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_max_request_body_bytes(guard.bounds().max_body_bytes)
        .with_cancellation_token(ct.child_token());
    let sessions = Reclaiming::new(options.session_idle_timeout);
    let service = StreamableHttpService::new(move || Ok(make()), sessions.clone(), config);
    // A request refused at a child-slot cap gets its status (see `refusal`).
    let router = axum::Router::new().nest_service(MCP_PATH, service).layer(
        axum::middleware::from_fn_with_state(sessions.clone(), refusal::answer_at_cap),
    );
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ProxyError::Bind { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| ProxyError::Bind { addr, source })?;
    ready(bound);
    let shutdown = async move {
        shutdown.await;
        // Each call still in progress gets its error before the streams
        // are cut.
        sessions.close_all(SHUTDOWN_ANSWERS).await;
        // Ends open SSE streams so the graceful shutdown can finish.
        ct.cancel();
    };
    guard
        .serve(listener, router, shutdown)
        .await
        .map_err(|err| ProxyError::Serve(err.into()))
}

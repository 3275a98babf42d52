//! [`ProxyShared`]: what all sessions of one proxy share, and the checks
//! and the shutdown that concern them all.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use tokio::sync::watch;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use lro_upstream::redact_urls;

use crate::{
    ProxyConfig, ProxyError, Upstream, child,
    pool::Pool,
    slots::{Claim, Slot, Slots},
};

/// The variables that send reqwest's requests through an HTTP proxy.
const PROXY_VARIABLES: [&str; 6] = [
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
];

/// How long [`ProxyShared::preflight`] waits for an HTTP upstream's port.
const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(5);

/// What all sessions of one proxy share: the configuration, the session
/// slots, the tasks that end children, and the news of a lost upstream.
///
/// Make one per proxy, then one [`Proxy`](crate::Proxy) per client session with
/// [`Proxy::new`](crate::Proxy::new).
#[derive(Debug, Clone)]
pub struct ProxyShared(Arc<SharedInner>);

#[derive(Debug)]
struct SharedInner {
    cfg: ProxyConfig,
    /// The child slots of both wires (see [`crate::slots`]).
    slots: Arc<Slots>,
    tasks: TaskTracker,
    lost: watch::Sender<Option<String>>,
    /// A session was lost on its own; the next one opened is a restart.
    restart_due: AtomicBool,
    /// Why the last upstream connection failed to open; `None` once one
    /// opens.
    open_failed: std::sync::Mutex<Option<String>>,
    /// Cancelled when the proxy stops: the calls still in progress end
    /// with an error.
    closing: CancellationToken,
    /// The upstream connections of sessionless clients.
    pool: Arc<Pool>,
}

impl ProxyShared {
    /// Shared state for a proxy with `cfg`.
    pub fn new(cfg: ProxyConfig) -> Self {
        lro_core::metric::register_upstream_zeroed();
        Self(Arc::new(SharedInner {
            slots: Slots::new(cfg.max_sessions),
            cfg,
            tasks: TaskTracker::new(),
            lost: watch::channel(None).0,
            restart_due: false.into(),
            open_failed: std::sync::Mutex::default(),
            closing: CancellationToken::new(),
            pool: Arc::default(),
        }))
    }

    /// The configuration.
    pub fn config(&self) -> &ProxyConfig {
        &self.0.cfg
    }

    /// Resolves with a sentence when a child exits on its own; `lro proxy`
    /// on stdio exits then. (A lost HTTP upstream is not final: the next
    /// call reconnects.)
    pub async fn lost(&self) -> String {
        let mut rx = self.0.lost.subscribe();
        match rx.wait_for(Option::is_some).await {
            Ok(why) => why.clone().unwrap_or_default(),
            Err(_) => std::future::pending().await,
        }
    }

    /// Checks that the upstream can be started or reached, so that a typo
    /// fails at start with a clear message rather than at the client's first
    /// `initialize`: the command must be an executable file (found on `PATH`
    /// when it has no `/`), the URL's host must accept a TCP connection.
    ///
    /// # Errors
    ///
    /// [`ProxyError::Spawn`] naming the command, or
    /// [`ProxyError::Unreachable`] naming the URL.
    pub async fn preflight(&self) -> Result<(), ProxyError> {
        match &self.0.cfg.upstream {
            Upstream::Command { program, .. } => {
                child::check_program(program).map_err(|source| ProxyError::Spawn {
                    command: program.to_string_lossy().into_owned(),
                    source,
                })
            }
            // Through an HTTP proxy (reqwest honours these variables), the
            // upstream's own port says nothing; the first `initialize` tells.
            Upstream::Http { .. }
                if PROXY_VARIABLES
                    .iter()
                    .any(|v| std::env::var_os(v).is_some()) =>
            {
                Ok(())
            }
            Upstream::Http { url, .. } => {
                let unreachable =
                    |source: Box<dyn std::error::Error + Send + Sync>| ProxyError::Unreachable {
                        url: redact_urls(url),
                        source,
                    };
                let uri: http::Uri = url
                    .parse()
                    .map_err(|err: http::uri::InvalidUri| unreachable(err.into()))?;
                let host = uri
                    .host()
                    .unwrap_or_default()
                    .trim_matches(['[', ']'])
                    .to_owned();
                let port = uri
                    .port_u16()
                    .unwrap_or(if uri.scheme_str() == Some("https") {
                        443
                    } else {
                        80
                    });
                match tokio::time::timeout(
                    PREFLIGHT_TIMEOUT,
                    tokio::net::TcpStream::connect((host.as_str(), port)),
                )
                .await
                {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err(err)) => Err(unreachable(err.into())),
                    Err(_) => Err(unreachable(
                        format!("no TCP connection within {}s", PREFLIGHT_TIMEOUT.as_secs()).into(),
                    )),
                }
            }
        }
    }

    /// Ends every call still in progress with a JSON-RPC error that says
    /// the proxy is stopping, so that no client is left waiting; the serve
    /// functions call it when their `shutdown` resolves.
    pub fn end_calls(&self) {
        self.0.closing.cancel();
    }

    /// Cancelled once [`ProxyShared::end_calls`] has been called.
    pub(crate) fn closing(&self) -> &CancellationToken {
        &self.0.closing
    }

    /// Waits until every child has been ended and reaped. Call it after the
    /// sessions are gone, before the process exits, so that no child is
    /// orphaned.
    pub async fn shutdown(&self) {
        self.end_calls();
        // The sessionless connections are the proxy's own: they end here.
        self.0.pool.close();
        self.0.tasks.close();
        self.0.tasks.wait().await;
    }

    /// A slot for a new upstream connection: children are the scarce
    /// resource, so a command upstream's takes one of
    /// [`ProxyConfig::max_sessions`], by the rule of [`crate::slots`]; an
    /// HTTP upstream's needs none.
    pub(crate) async fn slot(&self, claim: Claim) -> Result<Option<Slot>, ProxyError> {
        match self.0.cfg.upstream {
            Upstream::Command { .. } => self.0.slots.acquire(claim).await.map(Some),
            Upstream::Http { .. } => Ok(None),
        }
    }

    /// The upstream connections of sessionless clients.
    pub(crate) fn pool(&self) -> &Pool {
        &self.0.pool
    }

    /// The pool, for a task that must not keep it alive.
    pub(crate) fn pool_weak(&self) -> std::sync::Weak<Pool> {
        Arc::downgrade(&self.0.pool)
    }

    /// The tasks that end children and drain their pipes.
    pub(crate) fn tasks(&self) -> &TaskTracker {
        &self.0.tasks
    }

    /// Whether the session opening now restarts a lost one; clears it.
    pub(crate) fn take_restart(&self) -> bool {
        self.0.restart_due.swap(false, Ordering::Relaxed)
    }

    /// Notes how the last attempt to open an upstream connection ended:
    /// `Some` with why it failed.
    pub(crate) fn record_open(&self, failure: Option<String>) {
        *self
            .0
            .open_failed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = failure;
    }

    /// Whether the upstream failed: its child exited on its own, or the
    /// last connection failed to open; the sentence says how.
    pub(crate) fn failure(&self) -> Option<String> {
        let lost = self.0.lost.borrow().clone();
        lost.or_else(|| {
            self.0
                .open_failed
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone()
        })
    }

    pub(crate) fn report_lost(&self, why: String) {
        self.restart_due();
        self.0.lost.send_replace(Some(why));
    }

    pub(crate) fn restart_due(&self) {
        self.0.restart_due.store(true, Ordering::Relaxed);
    }
}

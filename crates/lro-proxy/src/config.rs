//! [`ProxyConfig`]: the settings shared by every session of one proxy.

use std::{path::PathBuf, time::Duration};

use crate::Upstream;

/// Settings shared by every session of one proxy: [`ProxyConfig::new`] with
/// the upstream, then a setter for each setting that differs from its
/// default.
///
/// ```
/// use lro_proxy::{ProxyConfig, Upstream};
///
/// let cfg = ProxyConfig::new(Upstream::command("my-server", ["--stdio"]))
///     .max_sessions(4)
///     .max_message_bytes(64 << 20);
/// assert_eq!(cfg.upstream().to_string(), "`my-server --stdio`");
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ProxyConfig {
    pub(crate) upstream: Upstream,
    pub(crate) max_sessions: usize,
    pub(crate) max_message_bytes: usize,
    pub(crate) watchdog: Option<PathBuf>,
    pub(crate) request_timeout: Option<Duration>,
    pub(crate) sessionless_idle_timeout: Option<Duration>,
}

/// How long a forwarded request waits for the upstream's answer, by
/// default, counted again from each progress notification: longer than
/// clients wait themselves (the TypeScript SDK gives up after 60 s), so the
/// proxy never cuts a call its client still waits for, and long enough for a
/// slow tool or a person answering an elicitation; but finite, so a call an
/// upstream never answers ends, and stops holding its session open.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(600);

/// How long a principal's sessionless upstream connection stays open
/// without a call, by default: as long as the HTTP face keeps an idle
/// session.
pub const DEFAULT_SESSIONLESS_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

impl ProxyConfig {
    /// A configuration for `upstream`, every other setting at its default.
    #[must_use]
    pub fn new(upstream: Upstream) -> Self {
        Self {
            upstream,
            max_sessions: 16,
            max_message_bytes: 256 << 20,
            watchdog: None,
            request_timeout: Some(DEFAULT_REQUEST_TIMEOUT),
            sessionless_idle_timeout: Some(DEFAULT_SESSIONLESS_IDLE_TIMEOUT),
        }
    }

    /// Children of a command upstream running at once: one per 2025-11-25
    /// client session and one per principal's sessionless (2026-07-28)
    /// requests, counted together. Each principal but the anonymous one
    /// holds at most half (at least one). At the limit a new child takes
    /// the slot of its own principal's idle session or child, or of another
    /// principal's idle sessionless child, never another principal's
    /// session; else its request gets an error (HTTP 503, or 429 at its
    /// share, on the HTTP face). At least 1.
    ///
    /// Defaults to 16.
    #[must_use]
    pub fn max_sessions(mut self, n: usize) -> Self {
        self.max_sessions = n.max(1);
        self
    }

    /// The largest message accepted from the upstream: one stdio line, one
    /// SSE event or one JSON reply.
    ///
    /// Defaults to 256 MiB (rmcp's own default is 16 MiB).
    #[must_use]
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes;
        self
    }

    /// Starts each child of a command upstream under watchdogs: this
    /// executable, which must call
    /// [`watchdog::run_if_asked`](crate::watchdog::run_if_asked) first thing
    /// in `main` (`lro` does). Then no process of the upstream, grandchildren
    /// included, outlives the proxy, even when the proxy, or one of the
    /// watchdogs, is killed with SIGKILL (see [`crate::watchdog`]). Without
    /// one, the proxy ends the child's process group itself, which it cannot
    /// do if it is killed.
    ///
    /// Defaults to none.
    #[must_use]
    pub fn watchdog(mut self, executable: Option<PathBuf>) -> Self {
        self.watchdog = executable;
        self
    }

    /// How long a request forwarded to the upstream waits for its answer;
    /// each progress notification for it starts the wait again. Past it, the
    /// client gets a JSON-RPC error naming the timeout and the upstream a
    /// `notifications/cancelled`. `None` waits for ever.
    ///
    /// Defaults to [`DEFAULT_REQUEST_TIMEOUT`] (10 minutes).
    #[must_use]
    pub fn request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Ends the upstream connection of a principal's sessionless (MCP
    /// 2026-07-28) requests once none has come for this long and none is in
    /// progress; the next request opens a new one. Each principal's
    /// sessionless requests share one connection (one child of a command
    /// upstream), so its state lasts from one call to the next. `None`
    /// keeps it as long as the proxy runs: right for the stdio face, which
    /// serves one client.
    ///
    /// Defaults to [`DEFAULT_SESSIONLESS_IDLE_TIMEOUT`] (5 minutes).
    #[must_use]
    pub fn sessionless_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.sessionless_idle_timeout = timeout;
        self
    }

    /// The upstream.
    pub fn upstream(&self) -> &Upstream {
        &self.upstream
    }
}

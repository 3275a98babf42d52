//! How an audit runs: probes, waits, and where to observe events.

use std::time::Duration;

use crate::{Probe, WireMode};

/// The audit's options.
///
/// ```
/// use std::time::Duration;
/// use lro_audit::AuditConfig;
///
/// let cfg = AuditConfig::new()
///     .probe("fetch_rows {\"n\": 500}".parse().unwrap())
///     .cleanup_wait(Duration::from_secs(60))
///     .keep_going(true);
/// assert_eq!(cfg.probes.len(), 1);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AuditConfig {
    /// Calls to make instead of the spec's tools.
    pub probes: Vec<Probe>,
    /// How long, past a file's expiry, cleanup may take to delete it.
    pub cleanup_wait: Duration,
    /// The TTL the cleanup check gives the server, in seconds.
    pub cleanup_ttl_seconds: u64,
    /// Whether to run every check even after a level fails.
    pub keep_going: bool,
    /// A Prometheus endpoint to observe events on.
    pub metrics_url: Option<String>,
    /// How long initialize, each request and each launch may take.
    pub timeout: Duration,
    /// The wire to speak to the target.
    pub wire: WireMode,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self {
            probes: Vec::new(),
            cleanup_wait: Duration::from_secs(20),
            cleanup_ttl_seconds: 3,
            keep_going: false,
            metrics_url: None,
            timeout: Duration::from_secs(30),
            wire: WireMode::Auto,
        }
    }
}

impl AuditConfig {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a probe. Defaults to none: the spec's tools the server lists.
    #[must_use]
    pub fn probe(mut self, probe: Probe) -> Self {
        self.probes.push(probe);
        self
    }

    /// Sets how long past expiry cleanup may take. Defaults to 20 s.
    #[must_use]
    pub fn cleanup_wait(mut self, wait: Duration) -> Self {
        self.cleanup_wait = wait;
        self
    }

    /// Sets the TTL of the cleanup check. Defaults to 3 s.
    #[must_use]
    pub fn cleanup_ttl_seconds(mut self, secs: u64) -> Self {
        self.cleanup_ttl_seconds = secs.max(1);
        self
    }

    /// Runs every check even after a level fails. Defaults to `false`:
    /// the audit stops at the first level that fails.
    #[must_use]
    pub fn keep_going(mut self, on: bool) -> Self {
        self.keep_going = on;
        self
    }

    /// Observes events on this Prometheus endpoint too. Defaults to none.
    #[must_use]
    pub fn metrics_url(mut self, url: impl Into<String>) -> Self {
        self.metrics_url = Some(url.into());
        self
    }

    /// Sets the bound on initialize, each request and each launch.
    /// Defaults to 30 s.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the wire to speak to the target. Defaults to
    /// [`WireMode::Auto`]: 2026-07-28 when the target speaks it, else
    /// `initialize` at 2025-11-25.
    #[must_use]
    pub fn wire(mut self, wire: WireMode) -> Self {
        self.wire = wire;
        self
    }
}

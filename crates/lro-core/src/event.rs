//! Observability events and the sinks that receive them.
//!
//! Every event goes to `tracing` (structured fields), to `metrics` (see
//! [`crate::metric`]) and to an optional [`EventSink`] the embedding
//! application supplies. [`emit`] does all three.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use lro_core::event::{emit, EventSink, LroEvent, OffloadWriteFailed};
//!
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let sink = {
//!     let seen = seen.clone();
//!     move |e: &LroEvent| seen.lock().unwrap().push(e.name())
//! };
//! emit(&sink, LroEvent::OffloadWriteFailed(OffloadWriteFailed {
//!     tool: "list_memories".into(),
//!     operation: "list".into(),
//!     error: "disk full".into(),
//!     reason: "storage_full",
//!     records_total: 10,
//!     records_kept: 3,
//! }));
//! assert_eq!(*seen.lock().unwrap(), ["offload_write_failed"]);
//! ```

use std::{path::PathBuf, sync::Arc, time::Duration};

use crate::metric;

/// A result was written to a file and replaced by a descriptor.
#[derive(Debug, Clone, PartialEq)]
pub struct Offloaded {
    /// Tool name.
    pub tool: String,
    /// Operation name in the file name.
    pub operation: String,
    /// The file.
    pub path: PathBuf,
    /// Records written.
    pub records: usize,
    /// Bytes written.
    pub bytes: u64,
    /// Estimated tokens of the full result.
    pub estimated_tokens: usize,
    /// Estimated tokens of the descriptor that replaced it.
    pub descriptor_tokens: usize,
    /// Time spent writing the file.
    pub write_duration: Duration,
}

/// Writing the file failed; the result was returned inline, truncated.
#[derive(Debug, Clone, PartialEq)]
pub struct OffloadWriteFailed {
    /// Tool name.
    pub tool: String,
    /// Operation name.
    pub operation: String,
    /// The error, as text.
    pub error: String,
    /// Bounded reason label (see [`crate::file::WriteError::reason`]).
    pub reason: &'static str,
    /// Records in the full result.
    pub records_total: usize,
    /// Records kept in the truncated inline result.
    pub records_kept: usize,
}

/// Why cleanup deleted a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpiryReason {
    /// `created_at + ttl` has passed.
    Ttl,
    /// The directory was over its byte quota; oldest files went first.
    Quota,
}

impl ExpiryReason {
    /// Metric label value.
    pub fn as_str(self) -> &'static str {
        match self {
            ExpiryReason::Ttl => "ttl",
            ExpiryReason::Quota => "quota",
        }
    }
}

/// Cleanup deleted an offload file.
#[derive(Debug, Clone, PartialEq)]
pub struct OffloadFileExpired {
    /// The file.
    pub path: PathBuf,
    /// Age at deletion.
    pub age: Duration,
    /// The TTL in force.
    pub ttl: Duration,
    /// Its size.
    pub bytes: u64,
    /// Why it was deleted.
    pub reason: ExpiryReason,
}

/// One cleanup run finished.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CleanupCompleted {
    /// Offload files looked at.
    pub scanned: usize,
    /// Files deleted (TTL and quota).
    pub deleted: usize,
    /// Stale temp files removed.
    pub temp_removed: usize,
    /// Bytes freed.
    pub bytes_freed: u64,
    /// Offload files left on disk.
    pub files_remaining: usize,
    /// Bytes left on disk.
    pub bytes_remaining: u64,
    /// How long the run took.
    pub duration: Duration,
    /// Errors met (the run goes on past them).
    pub errors: usize,
}

/// An extraction query ran against an offload file.
#[derive(Debug, Clone, PartialEq)]
pub struct Extracted {
    /// `recipe`, `query`, `structured`, `lines` or `grep`.
    pub mode: &'static str,
    /// `ok`, `error`, `timeout` or `truncated`.
    pub outcome: &'static str,
    /// The file.
    pub path: PathBuf,
    /// Output values or lines.
    pub results: usize,
    /// Time spent.
    pub duration: Duration,
}

/// Everything LRO reports.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum LroEvent {
    /// See [`Offloaded`].
    Offloaded(Offloaded),
    /// See [`OffloadWriteFailed`].
    OffloadWriteFailed(OffloadWriteFailed),
    /// See [`OffloadFileExpired`].
    OffloadFileExpired(OffloadFileExpired),
    /// See [`CleanupCompleted`].
    CleanupCompleted(CleanupCompleted),
    /// See [`Extracted`].
    Extracted(Extracted),
}

impl LroEvent {
    /// The event's snake_case name, as used in traces.
    pub fn name(&self) -> &'static str {
        match self {
            LroEvent::Offloaded(_) => "offloaded",
            LroEvent::OffloadWriteFailed(_) => "offload_write_failed",
            LroEvent::OffloadFileExpired(_) => "offload_file_expired",
            LroEvent::CleanupCompleted(_) => "cleanup_completed",
            LroEvent::Extracted(_) => "extracted",
        }
    }
}

/// Receives every event after it went to tracing and metrics.
pub trait EventSink: Send + Sync + 'static {
    /// Called once per event, on the task that produced it: keep it fast.
    fn on_event(&self, event: &LroEvent);
}

/// Discards events.
impl EventSink for () {
    fn on_event(&self, _event: &LroEvent) {}
}

impl<F> EventSink for F
where
    F: Fn(&LroEvent) + Send + Sync + 'static,
{
    fn on_event(&self, event: &LroEvent) {
        self(event)
    }
}

impl<S: EventSink + ?Sized> EventSink for Arc<S> {
    fn on_event(&self, event: &LroEvent) {
        (**self).on_event(event)
    }
}

/// Keeps every event in memory; handy for tests and for hosts that poll.
#[derive(Debug, Clone, Default)]
pub struct MemorySink {
    events: Arc<std::sync::Mutex<Vec<LroEvent>>>,
}

impl MemorySink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// A copy of the events received so far.
    pub fn events(&self) -> Vec<LroEvent> {
        self.events.lock().expect("sink lock poisoned").clone()
    }
}

impl EventSink for MemorySink {
    fn on_event(&self, event: &LroEvent) {
        self.events
            .lock()
            .expect("sink lock poisoned")
            .push(event.clone());
    }
}

/// Sends `event` to tracing, metrics and `sink`.
pub fn emit(sink: &dyn EventSink, event: LroEvent) {
    trace(&event);
    metric::record(&event);
    sink.on_event(&event);
}

fn trace(event: &LroEvent) {
    match event {
        LroEvent::Offloaded(e) => tracing::info!(
            event = "offloaded",
            tool = %e.tool,
            operation = %e.operation,
            path = %e.path.display(),
            records = e.records,
            bytes = e.bytes,
            estimated_tokens = e.estimated_tokens,
            descriptor_tokens = e.descriptor_tokens,
            write_ms = e.write_duration.as_secs_f64() * 1e3,
            "result offloaded"
        ),
        // A failed write is recovered by the truncation fallback: a warning, not an error.
        LroEvent::OffloadWriteFailed(e) => tracing::warn!(
            event = "offload_write_failed",
            tool = %e.tool,
            operation = %e.operation,
            error = %e.error,
            reason = e.reason,
            records_total = e.records_total,
            records_kept = e.records_kept,
            "offload write failed; returned truncated inline result"
        ),
        LroEvent::OffloadFileExpired(e) => tracing::info!(
            event = "offload_file_expired",
            path = %e.path.display(),
            age_s = e.age.as_secs(),
            ttl_s = e.ttl.as_secs(),
            bytes = e.bytes,
            reason = e.reason.as_str(),
            "offload file expired"
        ),
        LroEvent::CleanupCompleted(e) => tracing::info!(
            event = "cleanup_completed",
            scanned = e.scanned,
            deleted = e.deleted,
            temp_removed = e.temp_removed,
            bytes_freed = e.bytes_freed,
            files_remaining = e.files_remaining,
            bytes_remaining = e.bytes_remaining,
            errors = e.errors,
            duration_ms = e.duration.as_secs_f64() * 1e3,
            "offload cleanup completed"
        ),
        LroEvent::Extracted(e) => tracing::info!(
            event = "extracted",
            mode = e.mode,
            outcome = e.outcome,
            path = %e.path.display(),
            results = e.results,
            duration_ms = e.duration.as_secs_f64() * 1e3,
            "extraction ran"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sink_collects() {
        let sink = MemorySink::new();
        emit(
            &sink,
            LroEvent::CleanupCompleted(CleanupCompleted::default()),
        );
        assert_eq!(sink.events().len(), 1);
        assert_eq!(sink.events()[0].name(), "cleanup_completed");
    }
}

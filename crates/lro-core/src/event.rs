//! Observability events and the sinks that receive them.
//!
//! Every event goes to `tracing` (structured fields), to `metrics` (each
//! event knows its metrics: [`LroEvent::record_metrics`]) and to an optional
//! [`EventSink`] the embedding application supplies. [`emit`] does all three.
//! Every intercepted tool result yields one [`ToolResult`], whatever its
//! outcome, so a sink can count inline and bypassed results too.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use lro_core::event::{emit, EventSink, LroEvent, OffloadWriteFailed, WriteFailureReason};
//!
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let sink = {
//!     let seen = seen.clone();
//!     move |e: &LroEvent| seen.lock().unwrap().push(e.name())
//! };
//! let failed = OffloadWriteFailed::new("list_memories", "list", "disk full", WriteFailureReason::StorageFull)
//!     .records_total(10);
//! emit(&sink, LroEvent::OffloadWriteFailed(failed));
//! assert_eq!(*seen.lock().unwrap(), ["offload_write_failed"]);
//! ```

use std::{
    path::PathBuf,
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use metrics::{counter, gauge, histogram};

use crate::metric;
pub use crate::metric::label::{
    CleanupOutcome, ExpiryReason, ExtractMode, ExtractOutcome, ToolOutcome, WriteFailureReason,
};

/// The layer decided what to do with one tool result. Every intercepted
/// result produces exactly one, whatever the outcome.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolResult {
    /// Tool name.
    pub tool: String,
    /// What happened to the result.
    pub outcome: ToolOutcome,
    /// Estimated tokens of the result (0 for a tool error, which is never sized).
    pub estimated_tokens: usize,
    /// Records in the result set when it was offloaded or truncated, else 0.
    pub records: usize,
}

impl ToolResult {
    /// A result of `tool` with `outcome`, sized `estimated_tokens`, no records.
    pub fn new(tool: impl Into<String>, outcome: ToolOutcome, estimated_tokens: usize) -> Self {
        Self {
            tool: tool.into(),
            outcome,
            estimated_tokens,
            records: 0,
        }
    }

    /// Sets the records in the result set. Defaults to 0.
    #[must_use]
    pub fn records(self, records: usize) -> Self {
        Self { records, ..self }
    }
}

/// A result was written to a file and replaced by a descriptor.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
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

impl Offloaded {
    /// `tool`'s result went to `path`; the sizes start at zero.
    pub fn new(tool: impl Into<String>, operation: impl Into<String>, path: PathBuf) -> Self {
        Self {
            tool: tool.into(),
            operation: operation.into(),
            path,
            records: 0,
            bytes: 0,
            estimated_tokens: 0,
            descriptor_tokens: 0,
            write_duration: Duration::ZERO,
        }
    }

    /// Sets the records written. Defaults to 0.
    #[must_use]
    pub fn records(self, records: usize) -> Self {
        Self { records, ..self }
    }

    /// Sets the bytes written. Defaults to 0.
    #[must_use]
    pub fn bytes(self, bytes: u64) -> Self {
        Self { bytes, ..self }
    }

    /// Sets the estimated tokens of the full result. Defaults to 0.
    #[must_use]
    pub fn estimated_tokens(self, estimated_tokens: usize) -> Self {
        Self {
            estimated_tokens,
            ..self
        }
    }

    /// Sets the estimated tokens of the descriptor. Defaults to 0.
    #[must_use]
    pub fn descriptor_tokens(self, descriptor_tokens: usize) -> Self {
        Self {
            descriptor_tokens,
            ..self
        }
    }

    /// Sets the time spent writing the file. Defaults to zero.
    #[must_use]
    pub fn write_duration(self, write_duration: Duration) -> Self {
        Self {
            write_duration,
            ..self
        }
    }
}

/// Writing the file failed; the result was returned inline, truncated.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OffloadWriteFailed {
    /// Tool name.
    pub tool: String,
    /// Operation name.
    pub operation: String,
    /// The error, as text.
    pub error: String,
    /// Why it failed.
    pub reason: WriteFailureReason,
    /// Records in the full result.
    pub records_total: usize,
    /// Records kept in the truncated inline result.
    pub records_kept: usize,
}

impl OffloadWriteFailed {
    /// `tool`'s write failed with `error` for `reason`; record counts start at zero.
    pub fn new(
        tool: impl Into<String>,
        operation: impl Into<String>,
        error: impl Into<String>,
        reason: WriteFailureReason,
    ) -> Self {
        Self {
            tool: tool.into(),
            operation: operation.into(),
            error: error.into(),
            reason,
            records_total: 0,
            records_kept: 0,
        }
    }

    /// Sets the records in the full result. Defaults to 0.
    #[must_use]
    pub fn records_total(self, records_total: usize) -> Self {
        Self {
            records_total,
            ..self
        }
    }

    /// Sets the records kept inline. Defaults to 0.
    #[must_use]
    pub fn records_kept(self, records_kept: usize) -> Self {
        Self {
            records_kept,
            ..self
        }
    }
}

/// Cleanup deleted an offload file.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
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

impl OffloadFileExpired {
    /// `path`, `bytes` long, was deleted at `age` for `reason` under `ttl`.
    pub fn new(
        path: PathBuf,
        reason: ExpiryReason,
        age: Duration,
        ttl: Duration,
        bytes: u64,
    ) -> Self {
        Self {
            path,
            age,
            ttl,
            bytes,
            reason,
        }
    }
}

/// One cleanup run finished.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
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

impl CleanupCompleted {
    /// `Success` when the run met no error.
    pub fn outcome(&self) -> CleanupOutcome {
        if self.errors == 0 {
            CleanupOutcome::Success
        } else {
            CleanupOutcome::Error
        }
    }
}

/// An extraction query ran against an offload file.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Extracted {
    /// The request's mode.
    pub mode: ExtractMode,
    /// How it ended.
    pub outcome: ExtractOutcome,
    /// The file.
    pub path: PathBuf,
    /// Output values or lines.
    pub results: usize,
    /// Time spent.
    pub duration: Duration,
}

impl Extracted {
    /// A `mode` request on `path` ended with `outcome`; no results, no time.
    pub fn new(mode: ExtractMode, outcome: ExtractOutcome, path: PathBuf) -> Self {
        Self {
            mode,
            outcome,
            path,
            results: 0,
            duration: Duration::ZERO,
        }
    }

    /// Sets the output values or lines. Defaults to 0.
    #[must_use]
    pub fn results(self, results: usize) -> Self {
        Self { results, ..self }
    }

    /// Sets the time spent. Defaults to zero.
    #[must_use]
    pub fn duration(self, duration: Duration) -> Self {
        Self { duration, ..self }
    }
}

/// Everything LRO reports.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum LroEvent {
    /// See [`ToolResult`].
    ToolResult(ToolResult),
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
            LroEvent::ToolResult(_) => "tool_result",
            LroEvent::Offloaded(_) => "offloaded",
            LroEvent::OffloadWriteFailed(_) => "offload_write_failed",
            LroEvent::OffloadFileExpired(_) => "offload_file_expired",
            LroEvent::CleanupCompleted(_) => "cleanup_completed",
            LroEvent::Extracted(_) => "extracted",
        }
    }

    /// Updates the metrics this event stands for (see [`crate::metric`]).
    pub fn record_metrics(&self) {
        match self {
            LroEvent::ToolResult(e) => {
                let tool = metric::tool_label(&e.tool);
                counter!(metric::TOOL_RESULTS_TOTAL, "tool" => tool.clone(), "outcome" => e.outcome.as_str())
                    .increment(1);
                histogram!(metric::RESULT_ESTIMATED_TOKENS, "tool" => tool)
                    .record(e.estimated_tokens as f64);
            }
            LroEvent::Offloaded(e) => {
                let tool = metric::tool_label(&e.tool);
                histogram!(metric::OFFLOAD_WRITE_DURATION_SECONDS, "tool" => tool.clone())
                    .record(e.write_duration.as_secs_f64());
                counter!(metric::OFFLOADED_BYTES_TOTAL, "tool" => tool.clone()).increment(e.bytes);
                counter!(metric::OFFLOADED_RECORDS_TOTAL, "tool" => tool.clone())
                    .increment(e.records as u64);
                counter!(metric::ESTIMATED_TOKENS_SAVED_TOTAL, "tool" => tool)
                    .increment(e.estimated_tokens.saturating_sub(e.descriptor_tokens) as u64);
            }
            LroEvent::OffloadWriteFailed(e) => {
                counter!(metric::OFFLOAD_WRITE_FAILURES_TOTAL, "reason" => e.reason.as_str())
                    .increment(1);
            }
            LroEvent::OffloadFileExpired(e) => {
                counter!(metric::OFFLOAD_FILES_EXPIRED_TOTAL, "reason" => e.reason.as_str())
                    .increment(1);
            }
            LroEvent::CleanupCompleted(e) => {
                counter!(metric::CLEANUP_RUNS_TOTAL, "outcome" => e.outcome().as_str())
                    .increment(1);
                histogram!(metric::CLEANUP_DURATION_SECONDS).record(e.duration.as_secs_f64());
                counter!(metric::CLEANUP_BYTES_FREED_TOTAL).increment(e.bytes_freed);
                counter!(metric::CLEANUP_TEMP_FILES_REMOVED_TOTAL).increment(e.temp_removed as u64);
                gauge!(metric::OFFLOAD_FILES).set(e.files_remaining as f64);
                gauge!(metric::OFFLOAD_DISK_BYTES).set(e.bytes_remaining as f64);
                if e.outcome() == CleanupOutcome::Success {
                    let now = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .unwrap_or_default()
                        .as_secs_f64();
                    gauge!(metric::CLEANUP_LAST_SUCCESS_TIMESTAMP_SECONDS).set(now);
                }
            }
            LroEvent::Extracted(e) => {
                counter!(metric::EXTRACT_REQUESTS_TOTAL, "mode" => e.mode.as_str(), "outcome" => e.outcome.as_str())
                    .increment(1);
                histogram!(metric::EXTRACT_DURATION_SECONDS, "mode" => e.mode.as_str())
                    .record(e.duration.as_secs_f64());
            }
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
    event.record_metrics();
    sink.on_event(&event);
}

/// How a result appears in logs and spans: a short digest of its file name.
/// The name is the capability to read it, so it is never logged; an operator
/// correlates by computing `short_digest` of a name on disk.
fn result_digest(path: &std::path::Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy());
    crate::principal::short_digest(name.as_deref().unwrap_or_default())
}

/// A `tracing` event at `$level` for `event`: `event = event.name()`, then
/// the fields listed, in order, then `$message`. A field alone is the
/// event's own (`records` is `records = e.records`); `name = value` and
/// `name = %value` are as in `tracing`.
macro_rules! trace_event {
    ($level:ident, $event:expr, $message:literal, $e:ident: $($fields:tt)*) => {
        trace_event!(@fields $level, $event, $message, $e, [] $($fields)*)
    };
    (@fields $level:ident, $event:expr, $message:literal, $e:ident, [$($out:tt)*]
        $field:ident = % $value:expr $(, $($rest:tt)*)?) => {
        trace_event!(@fields $level, $event, $message, $e, [$($out)* $field = %$value,] $($($rest)*)?)
    };
    (@fields $level:ident, $event:expr, $message:literal, $e:ident, [$($out:tt)*]
        $field:ident = $value:expr $(, $($rest:tt)*)?) => {
        trace_event!(@fields $level, $event, $message, $e, [$($out)* $field = $value,] $($($rest)*)?)
    };
    (@fields $level:ident, $event:expr, $message:literal, $e:ident, [$($out:tt)*]
        $field:ident $(, $($rest:tt)*)?) => {
        trace_event!(@fields $level, $event, $message, $e, [$($out)* $field = $e.$field,] $($($rest)*)?)
    };
    (@fields $level:ident, $event:expr, $message:literal, $e:ident, [$($out:tt)*]) => {
        tracing::$level!(event = $event.name(), $($out)* $message)
    };
}

// Result names and paths stay out of these (see `result_digest`): an INFO
// event inside a span is also exported as a span event.
fn trace(event: &LroEvent) {
    match event {
        // One per tool call: the span carries the same facts, so keep it quiet.
        LroEvent::ToolResult(e) => trace_event!(debug, event, "tool result", e:
            tool = %e.tool, outcome = e.outcome.as_str(), estimated_tokens, records),
        LroEvent::Offloaded(e) => trace_event!(info, event, "result offloaded", e:
            tool = %e.tool, operation = %e.operation, result = %result_digest(&e.path),
            records, bytes, estimated_tokens, descriptor_tokens,
            write_ms = e.write_duration.as_secs_f64() * 1e3),
        // A failed write is recovered by the truncation fallback: a warning,
        // not an error. Its `reason` only: the error's text names the temp
        // file, and so the result (it goes to the event sink).
        LroEvent::OffloadWriteFailed(e) => trace_event!(warn, event,
            "offload write failed; returned truncated inline result", e:
            tool = %e.tool, operation = %e.operation, reason = e.reason.as_str(),
            records_total, records_kept),
        LroEvent::OffloadFileExpired(e) => trace_event!(info, event, "offload file expired", e:
            result = %result_digest(&e.path), age_s = e.age.as_secs(), ttl_s = e.ttl.as_secs(),
            bytes, reason = e.reason.as_str()),
        LroEvent::CleanupCompleted(e) => trace_event!(info, event, "offload cleanup completed", e:
            scanned, deleted, temp_removed, bytes_freed, files_remaining, bytes_remaining,
            errors, duration_ms = e.duration.as_secs_f64() * 1e3),
        LroEvent::Extracted(e) => trace_event!(info, event, "extraction ran", e:
            mode = e.mode.as_str(), outcome = e.outcome.as_str(),
            result = %result_digest(&e.path), results,
            duration_ms = e.duration.as_secs_f64() * 1e3),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field of every event, as text.
    #[derive(Default)]
    struct Fields(std::sync::Mutex<String>);

    impl tracing::field::Visit for &Fields {
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
            let mut seen = self.0.lock().unwrap();
            seen.push_str(&format!("{}={value:?} ", field.name()));
        }
    }

    impl tracing::Subscriber for &'static Fields {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            event.record(&mut &**self);
        }
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    #[test]
    fn the_warning_for_a_failed_write_names_no_file() {
        let fields: &'static Fields = Box::leak(Box::default());
        let error = "cannot write offload file /o/.atlatl-list-01K.jsonl.tmp: No space left";
        let failed = OffloadWriteFailed::new(
            "list",
            "list",
            error,
            crate::metric::label::WriteFailureReason::StorageFull,
        );
        tracing::subscriber::with_default(fields, || {
            emit(&(), LroEvent::OffloadWriteFailed(failed));
        });
        let seen = fields.0.lock().unwrap().clone();
        assert!(seen.contains("offload_write_failed"), "{seen}");
        assert!(seen.contains("storage_full"), "{seen}");
        assert!(!seen.contains("atlatl-") && !seen.contains("/o/"), "{seen}");
    }

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

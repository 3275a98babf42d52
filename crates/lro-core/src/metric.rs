//! Every metric LRO emits, in one place.
//!
//! Names follow Prometheus conventions: one `lro_` prefix, base units in the
//! name, `_total` counters, bounded labels only (never a path, id or session).
//! Dashboards and alert rules use exactly these names; a test scrapes a real
//! Prometheus to prove it. Libraries only use the `metrics` facade; binaries
//! install an exporter (see `lro-telemetry`).
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `lro_tool_results_total` | counter | `tool`, `outcome` | tool results by outcome: `inline`, `offloaded`, `truncated` (write failed, fallback), `bypassed` (proxy client or disabled) |
//! | `lro_result_estimated_tokens` | histogram | `tool` | estimated tokens of each intercepted result |
//! | `lro_offload_write_duration_seconds` | histogram | `tool` | time to write one offload file |
//! | `lro_offloaded_bytes_total` | counter | `tool` | bytes written to offload files |
//! | `lro_offloaded_records_total` | counter | `tool` | records written to offload files |
//! | `lro_estimated_tokens_saved_total` | counter | `tool` | result tokens minus descriptor tokens |
//! | `lro_offload_write_failures_total` | counter | `reason` | failed writes (each fell back to truncation) |
//! | `lro_cleanup_runs_total` | counter | `outcome` | cleanup runs: `success` or `error` |
//! | `lro_cleanup_last_success_timestamp_seconds` | gauge | | Unix time of the last successful cleanup |
//! | `lro_cleanup_duration_seconds` | histogram | | cleanup run time |
//! | `lro_offload_files_expired_total` | counter | `reason` | files deleted: `ttl` or `quota` |
//! | `lro_cleanup_bytes_freed_total` | counter | | bytes deleted by cleanup |
//! | `lro_cleanup_temp_files_removed_total` | counter | | stale temp files removed |
//! | `lro_offload_files` | gauge | | offload files on disk after the last cleanup |
//! | `lro_offload_disk_bytes` | gauge | | bytes of offload files on disk after the last cleanup |
//! | `lro_extract_requests_total` | counter | `mode`, `outcome` | `lro_extract` calls |
//! | `lro_extract_duration_seconds` | histogram | `mode` | `lro_extract` run time |
//! | `lro_build_info` | gauge | `version`, `conformance_level` | always 1 |
//!
//! ```
//! assert!(lro_core::metric::ALL.iter().all(|m| m.name.starts_with("lro_")));
//! ```

use std::time::{SystemTime, UNIX_EPOCH};

use metrics::{
    Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram,
};

use crate::{event::LroEvent, file::WRITE_FAILURE_REASONS};

/// `lro_tool_results_total`.
pub const TOOL_RESULTS_TOTAL: &str = "lro_tool_results_total";
/// `lro_result_estimated_tokens`.
pub const RESULT_ESTIMATED_TOKENS: &str = "lro_result_estimated_tokens";
/// `lro_offload_write_duration_seconds`.
pub const OFFLOAD_WRITE_DURATION_SECONDS: &str = "lro_offload_write_duration_seconds";
/// `lro_offloaded_bytes_total`.
pub const OFFLOADED_BYTES_TOTAL: &str = "lro_offloaded_bytes_total";
/// `lro_offloaded_records_total`.
pub const OFFLOADED_RECORDS_TOTAL: &str = "lro_offloaded_records_total";
/// `lro_estimated_tokens_saved_total`.
pub const ESTIMATED_TOKENS_SAVED_TOTAL: &str = "lro_estimated_tokens_saved_total";
/// `lro_offload_write_failures_total`.
pub const OFFLOAD_WRITE_FAILURES_TOTAL: &str = "lro_offload_write_failures_total";
/// `lro_cleanup_runs_total`.
pub const CLEANUP_RUNS_TOTAL: &str = "lro_cleanup_runs_total";
/// `lro_cleanup_last_success_timestamp_seconds`.
pub const CLEANUP_LAST_SUCCESS_TIMESTAMP_SECONDS: &str =
    "lro_cleanup_last_success_timestamp_seconds";
/// `lro_cleanup_duration_seconds`.
pub const CLEANUP_DURATION_SECONDS: &str = "lro_cleanup_duration_seconds";
/// `lro_offload_files_expired_total`.
pub const OFFLOAD_FILES_EXPIRED_TOTAL: &str = "lro_offload_files_expired_total";
/// `lro_cleanup_bytes_freed_total`.
pub const CLEANUP_BYTES_FREED_TOTAL: &str = "lro_cleanup_bytes_freed_total";
/// `lro_cleanup_temp_files_removed_total`.
pub const CLEANUP_TEMP_FILES_REMOVED_TOTAL: &str = "lro_cleanup_temp_files_removed_total";
/// `lro_offload_files`.
pub const OFFLOAD_FILES: &str = "lro_offload_files";
/// `lro_offload_disk_bytes`.
pub const OFFLOAD_DISK_BYTES: &str = "lro_offload_disk_bytes";
/// `lro_extract_requests_total`.
pub const EXTRACT_REQUESTS_TOTAL: &str = "lro_extract_requests_total";
/// `lro_extract_duration_seconds`.
pub const EXTRACT_DURATION_SECONDS: &str = "lro_extract_duration_seconds";
/// `lro_build_info`.
pub const BUILD_INFO: &str = "lro_build_info";

/// Prometheus metric type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Monotonic counter.
    Counter,
    /// Gauge.
    Gauge,
    /// Histogram with buckets.
    Histogram,
}

/// One metric's definition.
#[derive(Debug, Clone, Copy)]
pub struct MetricDef {
    /// Full name.
    pub name: &'static str,
    /// Type.
    pub kind: Kind,
    /// Unit.
    pub unit: Option<Unit>,
    /// Label names.
    pub labels: &'static [&'static str],
    /// Help text.
    pub help: &'static str,
}

const fn def(
    name: &'static str,
    kind: Kind,
    unit: Option<Unit>,
    labels: &'static [&'static str],
    help: &'static str,
) -> MetricDef {
    MetricDef {
        name,
        kind,
        unit,
        labels,
        help,
    }
}

/// All metrics, for describing them and for tests that check dashboards.
pub const ALL: &[MetricDef] = &[
    def(
        TOOL_RESULTS_TOTAL,
        Kind::Counter,
        None,
        &["tool", "outcome"],
        "Tool results seen by the LRO layer, by outcome (inline, offloaded, truncated, bypassed).",
    ),
    def(
        RESULT_ESTIMATED_TOKENS,
        Kind::Histogram,
        None,
        &["tool"],
        "Estimated tokens of each intercepted tool result.",
    ),
    def(
        OFFLOAD_WRITE_DURATION_SECONDS,
        Kind::Histogram,
        Some(Unit::Seconds),
        &["tool"],
        "Time to write one offload file.",
    ),
    def(
        OFFLOADED_BYTES_TOTAL,
        Kind::Counter,
        Some(Unit::Bytes),
        &["tool"],
        "Bytes written to offload files.",
    ),
    def(
        OFFLOADED_RECORDS_TOTAL,
        Kind::Counter,
        None,
        &["tool"],
        "Records written to offload files.",
    ),
    def(
        ESTIMATED_TOKENS_SAVED_TOTAL,
        Kind::Counter,
        None,
        &["tool"],
        "Estimated tokens kept out of the context: result tokens minus descriptor tokens.",
    ),
    def(
        OFFLOAD_WRITE_FAILURES_TOTAL,
        Kind::Counter,
        None,
        &["reason"],
        "Offload writes that failed and fell back to a truncated inline result.",
    ),
    def(
        CLEANUP_RUNS_TOTAL,
        Kind::Counter,
        None,
        &["outcome"],
        "Custodial cleanup runs, by outcome (success, error).",
    ),
    def(
        CLEANUP_LAST_SUCCESS_TIMESTAMP_SECONDS,
        Kind::Gauge,
        Some(Unit::Seconds),
        &[],
        "Unix time of the last successful cleanup run.",
    ),
    def(
        CLEANUP_DURATION_SECONDS,
        Kind::Histogram,
        Some(Unit::Seconds),
        &[],
        "Duration of cleanup runs.",
    ),
    def(
        OFFLOAD_FILES_EXPIRED_TOTAL,
        Kind::Counter,
        None,
        &["reason"],
        "Offload files deleted by cleanup, by reason (ttl, quota).",
    ),
    def(
        CLEANUP_BYTES_FREED_TOTAL,
        Kind::Counter,
        Some(Unit::Bytes),
        &[],
        "Bytes deleted by cleanup.",
    ),
    def(
        CLEANUP_TEMP_FILES_REMOVED_TOTAL,
        Kind::Counter,
        None,
        &[],
        "Temp files of interrupted writes removed by cleanup.",
    ),
    def(
        OFFLOAD_FILES,
        Kind::Gauge,
        None,
        &[],
        "Offload files on disk after the last cleanup scan.",
    ),
    def(
        OFFLOAD_DISK_BYTES,
        Kind::Gauge,
        Some(Unit::Bytes),
        &[],
        "Bytes of offload files on disk after the last cleanup scan.",
    ),
    def(
        EXTRACT_REQUESTS_TOTAL,
        Kind::Counter,
        None,
        &["mode", "outcome"],
        "lro_extract calls, by mode and outcome.",
    ),
    def(
        EXTRACT_DURATION_SECONDS,
        Kind::Histogram,
        Some(Unit::Seconds),
        &["mode"],
        "lro_extract run time.",
    ),
    def(
        BUILD_INFO,
        Kind::Gauge,
        None,
        &["version", "conformance_level"],
        "Build information; always 1.",
    ),
];

/// Bucket bounds for duration histograms, in seconds (100 µs to 10 s).
pub const DURATION_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];
/// Bucket bounds for result-size histograms, in estimated tokens.
pub const TOKEN_BUCKETS: &[f64] = &[
    100.0, 400.0, 800.0, 1600.0, 3200.0, 6400.0, 12800.0, 25600.0, 51200.0, 102400.0, 409600.0,
];

/// Tool result outcomes (values of the `outcome` label).
pub const TOOL_OUTCOMES: &[&str] = &["inline", "offloaded", "truncated", "bypassed"];

/// Describes every metric to the installed recorder, with units.
pub fn describe() {
    for m in ALL {
        let help = m.help;
        match (m.kind, m.unit) {
            (Kind::Counter, Some(u)) => describe_counter!(m.name, u, help),
            (Kind::Counter, None) => describe_counter!(m.name, help),
            (Kind::Gauge, Some(u)) => describe_gauge!(m.name, u, help),
            (Kind::Gauge, None) => describe_gauge!(m.name, help),
            (Kind::Histogram, Some(u)) => describe_histogram!(m.name, u, help),
            (Kind::Histogram, None) => describe_histogram!(m.name, help),
        }
    }
}

/// Registers the counters alerts watch at zero, so the first failure shows
/// as an increase rather than as a new series.
pub fn register_zeroed() {
    for reason in WRITE_FAILURE_REASONS {
        counter!(OFFLOAD_WRITE_FAILURES_TOTAL, "reason" => *reason).absolute(0);
    }
    for outcome in ["success", "error"] {
        counter!(CLEANUP_RUNS_TOTAL, "outcome" => outcome).absolute(0);
    }
    for reason in ["ttl", "quota"] {
        counter!(OFFLOAD_FILES_EXPIRED_TOTAL, "reason" => reason).absolute(0);
    }
}

/// Registers a tool's result counters at zero (done when tools are listed).
pub fn register_tool(tool: &str) {
    for outcome in TOOL_OUTCOMES {
        counter!(TOOL_RESULTS_TOTAL, "tool" => tool.to_owned(), "outcome" => *outcome).absolute(0);
    }
}

/// Counts one tool result and records its size.
pub fn tool_result(tool: &str, outcome: &'static str, estimated_tokens: usize) {
    counter!(TOOL_RESULTS_TOTAL, "tool" => tool.to_owned(), "outcome" => outcome).increment(1);
    histogram!(RESULT_ESTIMATED_TOKENS, "tool" => tool.to_owned()).record(estimated_tokens as f64);
}

/// Updates metrics for one event.
pub fn record(event: &LroEvent) {
    match event {
        LroEvent::Offloaded(e) => {
            let tool = e.tool.clone();
            histogram!(OFFLOAD_WRITE_DURATION_SECONDS, "tool" => tool.clone())
                .record(e.write_duration.as_secs_f64());
            counter!(OFFLOADED_BYTES_TOTAL, "tool" => tool.clone()).increment(e.bytes);
            counter!(OFFLOADED_RECORDS_TOTAL, "tool" => tool.clone()).increment(e.records as u64);
            counter!(ESTIMATED_TOKENS_SAVED_TOTAL, "tool" => tool)
                .increment(e.estimated_tokens.saturating_sub(e.descriptor_tokens) as u64);
        }
        LroEvent::OffloadWriteFailed(e) => {
            counter!(OFFLOAD_WRITE_FAILURES_TOTAL, "reason" => e.reason).increment(1);
        }
        LroEvent::OffloadFileExpired(e) => {
            counter!(OFFLOAD_FILES_EXPIRED_TOTAL, "reason" => e.reason.as_str()).increment(1);
        }
        LroEvent::CleanupCompleted(e) => {
            let outcome = if e.errors == 0 { "success" } else { "error" };
            counter!(CLEANUP_RUNS_TOTAL, "outcome" => outcome).increment(1);
            histogram!(CLEANUP_DURATION_SECONDS).record(e.duration.as_secs_f64());
            counter!(CLEANUP_BYTES_FREED_TOTAL).increment(e.bytes_freed);
            counter!(CLEANUP_TEMP_FILES_REMOVED_TOTAL).increment(e.temp_removed as u64);
            gauge!(OFFLOAD_FILES).set(e.files_remaining as f64);
            gauge!(OFFLOAD_DISK_BYTES).set(e.bytes_remaining as f64);
            if e.errors == 0 {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs_f64();
                gauge!(CLEANUP_LAST_SUCCESS_TIMESTAMP_SECONDS).set(now);
            }
        }
        LroEvent::Extracted(e) => {
            counter!(EXTRACT_REQUESTS_TOTAL, "mode" => e.mode, "outcome" => e.outcome).increment(1);
            histogram!(EXTRACT_DURATION_SECONDS, "mode" => e.mode).record(e.duration.as_secs_f64());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_conventions() {
        let mut seen = std::collections::BTreeSet::new();
        for m in ALL {
            assert!(seen.insert(m.name), "duplicate {}", m.name);
            assert!(m.name.starts_with("lro_"));
            match m.kind {
                Kind::Counter => assert!(m.name.ends_with("_total"), "{}", m.name),
                _ => assert!(!m.name.ends_with("_total"), "{}", m.name),
            }
            if m.unit == Some(Unit::Seconds) {
                assert!(m.name.contains("_seconds"), "{}", m.name);
            }
            if m.unit == Some(Unit::Bytes) {
                assert!(m.name.contains("_bytes"), "{}", m.name);
            }
            for label in m.labels {
                assert!(!["path", "id", "session", "file"].contains(label));
            }
        }
    }
}

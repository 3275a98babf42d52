//! Every metric LRO emits, in one place: the catalogue.
//!
//! Names follow Prometheus conventions: one `lro_` prefix, base units in the
//! name, `_total` counters, bounded labels only (never a path, id or session).
//! Label values come from the enums in [`label`]; nothing else spells them.
//!
//! This module is a leaf: it depends on no other module of the crate. Events
//! record themselves through it ([`crate::event::LroEvent::record_metrics`]);
//! binaries install an exporter (see `lro-telemetry`); the deploy tests and
//! the dashboard generator read [`catalogue`] as JSON (`lro metrics --json`,
//! checked in as `deploy/metrics.json`).
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `lro_tool_results_total` | counter | `tool`, `outcome` | tool results by [`ToolOutcome`] |
//! | `lro_result_estimated_tokens` | histogram | `tool` | estimated tokens of each intercepted result |
//! | `lro_offload_write_duration_seconds` | histogram | `tool` | time to write one offload file |
//! | `lro_offloaded_bytes_total` | counter | `tool` | bytes written to offload files |
//! | `lro_offloaded_records_total` | counter | `tool` | records written to offload files |
//! | `lro_estimated_tokens_saved_total` | counter | `tool` | result tokens minus descriptor tokens |
//! | `lro_offload_write_failures_total` | counter | `reason` | failed writes by [`WriteFailureReason`] (each fell back to truncation) |
//! | `lro_cleanup_runs_total` | counter | `outcome` | cleanup runs by [`CleanupOutcome`] |
//! | `lro_cleanup_last_success_timestamp_seconds` | gauge | | Unix time of the last successful cleanup |
//! | `lro_cleanup_duration_seconds` | histogram | | cleanup run time |
//! | `lro_offload_files_expired_total` | counter | `reason` | files deleted, by [`ExpiryReason`] |
//! | `lro_cleanup_bytes_freed_total` | counter | | bytes deleted by cleanup |
//! | `lro_cleanup_temp_files_removed_total` | counter | | stale temp files removed |
//! | `lro_offload_files` | gauge | | offload files on disk after the last cleanup |
//! | `lro_offload_disk_bytes` | gauge | | bytes of offload files on disk after the last cleanup |
//! | `lro_store_operation_duration_seconds` | histogram | `op` | time of one offload store operation by [`StoreOp`], retries included |
//! | `lro_store_bytes_total` | counter | `op` | bytes written to (`put`) and read from (`get`) the offload store |
//! | `lro_store_errors_total` | counter | `op`, `kind` | failed offload store operations by [`StoreOp`] and [`StoreErrorKind`] |
//! | `lro_extract_requests_total` | counter | `mode`, `outcome` | `lro_extract` calls by [`ExtractMode`] and [`ExtractOutcome`] |
//! | `lro_extract_duration_seconds` | histogram | `mode` | `lro_extract` run time |
//! | `lro_upstream_up` | gauge | | `lro proxy`: 1 while the upstream is reachable |
//! | `lro_upstream_sessions` | gauge | | `lro proxy`: upstream sessions open now |
//! | `lro_upstream_exits_total` | counter | `reason` | upstream sessions ended, by [`UpstreamExit`] |
//! | `lro_upstream_restarts_total` | counter | | upstream sessions opened again after a loss |
//! | `lro_upstream_errors_total` | counter | `method`, `code` | failed forwarded requests by [`UpstreamMethod`] and [`UpstreamErrorCode`] |
//! | `lro_upstream_request_duration_seconds` | histogram | `method` | forwarded request latency |
//! | `lro_context_requests_total` | counter | `mode` | context-offload calls by mode (`compact`, `compress`, `auto`) |
//! | `lro_context_messages_compacted_total` | counter | | tool messages compacted into files |
//! | `lro_context_groups_compressed_total` | counter | | message groups compressed into snapshots |
//! | `lro_context_tokens_before_total` | counter | | history tokens before context offload |
//! | `lro_context_tokens_after_total` | counter | | history tokens after context offload |
//! | `lro_context_summariser_calls_total` | counter | `kind`, `outcome` | summariser calls by [`SummariserKind`] and [`SummariserOutcome`] |
//! | `lro_context_summariser_duration_seconds` | histogram | `kind` | summariser call time |
//! | `lro_context_write_failures_total` | counter | | context files that could not be written (the message kept whole) |
//! | `lro_audit_level` | gauge | | `lro audit --textfile`: the level the last audit proved (0-3) |
//! | `lro_audit_check` | gauge | `check`, `level` | `lro audit --textfile`: each check, 1 pass, 0 fail, -1 skip |
//! | `lro_build_info` | gauge | `version`, `conformance_level` | always 1 |
//!
//! ```
//! use lro_core::metric::{self, label::ToolOutcome};
//!
//! assert!(metric::ALL.iter().all(|m| m.name.starts_with("lro_")));
//! let results = metric::find(metric::TOOL_RESULTS_TOTAL).unwrap();
//! assert_eq!(results.labels[1].values, Some(ToolOutcome::SET));
//! let json = metric::catalogue();
//! assert_eq!(json["metrics"][0]["name"], "lro_tool_results_total");
//! ```

pub mod label;

use metrics::{Unit, counter, describe_counter, describe_gauge, describe_histogram};
use serde_json::{Value, json};

pub use label::{
    CleanupOutcome, ExpiryReason, ExtractMode, ExtractOutcome, LabelSet, StoreErrorKind, StoreOp,
    SummariserKind, SummariserOutcome, ToolOutcome, UpstreamErrorCode, UpstreamExit,
    UpstreamMethod, WriteFailureReason,
};

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
/// `lro_store_operation_duration_seconds`.
pub const STORE_OPERATION_DURATION_SECONDS: &str = "lro_store_operation_duration_seconds";
/// `lro_store_bytes_total`.
pub const STORE_BYTES_TOTAL: &str = "lro_store_bytes_total";
/// `lro_store_errors_total`.
pub const STORE_ERRORS_TOTAL: &str = "lro_store_errors_total";
/// `lro_extract_duration_seconds`.
pub const EXTRACT_DURATION_SECONDS: &str = "lro_extract_duration_seconds";
/// `lro_upstream_up`.
pub const UPSTREAM_UP: &str = "lro_upstream_up";
/// `lro_upstream_sessions`.
pub const UPSTREAM_SESSIONS: &str = "lro_upstream_sessions";
/// `lro_upstream_exits_total`.
pub const UPSTREAM_EXITS_TOTAL: &str = "lro_upstream_exits_total";
/// `lro_upstream_restarts_total`.
pub const UPSTREAM_RESTARTS_TOTAL: &str = "lro_upstream_restarts_total";
/// `lro_upstream_errors_total`.
pub const UPSTREAM_ERRORS_TOTAL: &str = "lro_upstream_errors_total";
/// `lro_upstream_request_duration_seconds`.
pub const UPSTREAM_REQUEST_DURATION_SECONDS: &str = "lro_upstream_request_duration_seconds";
/// `lro_context_requests_total`.
pub const CONTEXT_REQUESTS_TOTAL: &str = "lro_context_requests_total";
/// `lro_context_messages_compacted_total`.
pub const CONTEXT_MESSAGES_COMPACTED_TOTAL: &str = "lro_context_messages_compacted_total";
/// `lro_context_groups_compressed_total`.
pub const CONTEXT_GROUPS_COMPRESSED_TOTAL: &str = "lro_context_groups_compressed_total";
/// `lro_context_tokens_before_total`.
pub const CONTEXT_TOKENS_BEFORE_TOTAL: &str = "lro_context_tokens_before_total";
/// `lro_context_tokens_after_total`.
pub const CONTEXT_TOKENS_AFTER_TOTAL: &str = "lro_context_tokens_after_total";
/// `lro_context_summariser_calls_total`.
pub const CONTEXT_SUMMARISER_CALLS_TOTAL: &str = "lro_context_summariser_calls_total";
/// `lro_context_summariser_duration_seconds`.
pub const CONTEXT_SUMMARISER_DURATION_SECONDS: &str = "lro_context_summariser_duration_seconds";
/// `lro_context_write_failures_total`.
pub const CONTEXT_WRITE_FAILURES_TOTAL: &str = "lro_context_write_failures_total";
/// `lro_audit_level`.
pub const AUDIT_LEVEL: &str = "lro_audit_level";
/// `lro_audit_check`.
pub const AUDIT_CHECK: &str = "lro_audit_check";
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

impl Kind {
    /// The Prometheus type name.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// One label of a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LabelDef {
    /// The label name.
    pub name: &'static str,
    /// Its closed set of values, or `None` for an open one (a tool name, a
    /// version).
    pub values: Option<LabelSet>,
}

impl LabelDef {
    const fn open(name: &'static str) -> Self {
        Self { name, values: None }
    }

    const fn closed(name: &'static str, values: LabelSet) -> Self {
        Self {
            name,
            values: Some(values),
        }
    }
}

const TOOL: LabelDef = LabelDef::open("tool");

/// One metric's definition.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct MetricDef {
    /// The name of the Rust constant that holds [`MetricDef::name`], e.g.
    /// `TOOL_RESULTS_TOTAL`; the deploy tooling looks metrics up by it.
    pub key: &'static str,
    /// Full name.
    pub name: &'static str,
    /// Type.
    pub kind: Kind,
    /// Unit.
    pub unit: Option<Unit>,
    /// Labels, in recording order.
    pub labels: &'static [LabelDef],
    /// Bucket bounds of a histogram.
    pub buckets: Option<&'static [f64]>,
    /// Help text.
    pub help: &'static str,
}

macro_rules! def {
    ($key:ident, $kind:ident, $unit:expr, [$($label:expr),*], $buckets:expr, $help:literal $(,)?) => {
        MetricDef {
            key: stringify!($key),
            name: $key,
            kind: Kind::$kind,
            unit: $unit,
            labels: &[$($label),*],
            buckets: $buckets,
            help: $help,
        }
    };
}

/// Bucket bounds for duration histograms, in seconds (100 µs to 10 s).
pub const DURATION_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];
/// Bucket bounds for result-size histograms, in estimated tokens.
pub const TOKEN_BUCKETS: &[f64] = &[
    100.0, 400.0, 800.0, 1600.0, 3200.0, 6400.0, 12800.0, 25600.0, 51200.0, 102400.0, 409600.0,
];

/// All metrics, for describing them, for the catalogue and for tests that
/// check dashboards.
pub const ALL: &[MetricDef] = &[
    def!(
        TOOL_RESULTS_TOTAL,
        Counter,
        None,
        [TOOL, LabelDef::closed("outcome", ToolOutcome::SET)],
        None,
        "Tool results seen by the LRO layer, by outcome (inline, offloaded, truncated, bypassed).",
    ),
    def!(
        RESULT_ESTIMATED_TOKENS,
        Histogram,
        None,
        [TOOL],
        Some(TOKEN_BUCKETS),
        "Estimated tokens of each intercepted tool result.",
    ),
    def!(
        OFFLOAD_WRITE_DURATION_SECONDS,
        Histogram,
        Some(Unit::Seconds),
        [TOOL],
        Some(DURATION_BUCKETS),
        "Time to write one offload file.",
    ),
    def!(
        OFFLOADED_BYTES_TOTAL,
        Counter,
        Some(Unit::Bytes),
        [TOOL],
        None,
        "Bytes written to offload files.",
    ),
    def!(
        OFFLOADED_RECORDS_TOTAL,
        Counter,
        None,
        [TOOL],
        None,
        "Records written to offload files.",
    ),
    def!(
        ESTIMATED_TOKENS_SAVED_TOTAL,
        Counter,
        None,
        [TOOL],
        None,
        "Estimated tokens kept out of the context: result tokens minus descriptor tokens.",
    ),
    def!(
        OFFLOAD_WRITE_FAILURES_TOTAL,
        Counter,
        None,
        [LabelDef::closed("reason", WriteFailureReason::SET)],
        None,
        "Offload writes that failed and fell back to a truncated inline result.",
    ),
    def!(
        CLEANUP_RUNS_TOTAL,
        Counter,
        None,
        [LabelDef::closed("outcome", CleanupOutcome::SET)],
        None,
        "Custodial cleanup runs, by outcome (success, error).",
    ),
    def!(
        CLEANUP_LAST_SUCCESS_TIMESTAMP_SECONDS,
        Gauge,
        Some(Unit::Seconds),
        [],
        None,
        "Unix time of the last successful cleanup run.",
    ),
    def!(
        CLEANUP_DURATION_SECONDS,
        Histogram,
        Some(Unit::Seconds),
        [],
        Some(DURATION_BUCKETS),
        "Duration of cleanup runs.",
    ),
    def!(
        OFFLOAD_FILES_EXPIRED_TOTAL,
        Counter,
        None,
        [LabelDef::closed("reason", ExpiryReason::SET)],
        None,
        "Offload files deleted by cleanup, by reason (ttl, quota).",
    ),
    def!(
        CLEANUP_BYTES_FREED_TOTAL,
        Counter,
        Some(Unit::Bytes),
        [],
        None,
        "Bytes deleted by cleanup.",
    ),
    def!(
        CLEANUP_TEMP_FILES_REMOVED_TOTAL,
        Counter,
        None,
        [],
        None,
        "Temp files of interrupted writes removed by cleanup.",
    ),
    def!(
        OFFLOAD_FILES,
        Gauge,
        None,
        [],
        None,
        "Offload files on disk after the last cleanup scan.",
    ),
    def!(
        OFFLOAD_DISK_BYTES,
        Gauge,
        Some(Unit::Bytes),
        [],
        None,
        "Bytes of offload files on disk after the last cleanup scan.",
    ),
    def!(
        EXTRACT_REQUESTS_TOTAL,
        Counter,
        None,
        [
            LabelDef::closed("mode", ExtractMode::SET),
            LabelDef::closed("outcome", ExtractOutcome::SET)
        ],
        None,
        "lro_extract calls, by mode and outcome.",
    ),
    def!(
        EXTRACT_DURATION_SECONDS,
        Histogram,
        Some(Unit::Seconds),
        [LabelDef::closed("mode", ExtractMode::SET)],
        Some(DURATION_BUCKETS),
        "lro_extract run time.",
    ),
    def!(
        STORE_OPERATION_DURATION_SECONDS,
        Histogram,
        Some(Unit::Seconds),
        [LabelDef::closed("op", StoreOp::SET)],
        Some(DURATION_BUCKETS),
        "Time of one offload store operation (an object store's request with its retries, or a local file operation), by operation; a put is the whole upload.",
    ),
    def!(
        STORE_BYTES_TOTAL,
        Counter,
        Some(Unit::Bytes),
        [LabelDef::closed("op", StoreOp::SET)],
        None,
        "Bytes written to (put) and read from (get) the offload store.",
    ),
    def!(
        STORE_ERRORS_TOTAL,
        Counter,
        None,
        [
            LabelDef::closed("op", StoreOp::SET),
            LabelDef::closed("kind", StoreErrorKind::SET)
        ],
        None,
        "Failed offload store operations, by operation and kind (unreachable, credentials_refused, bucket_missing, timeout, not_found, other).",
    ),
    def!(
        UPSTREAM_UP,
        Gauge,
        None,
        [],
        None,
        "lro proxy: 1 when the last attempt to open an upstream session succeeded and no session has been lost since, else 0.",
    ),
    def!(
        UPSTREAM_SESSIONS,
        Gauge,
        None,
        [],
        None,
        "lro proxy: upstream sessions open now (one per client session).",
    ),
    def!(
        UPSTREAM_EXITS_TOTAL,
        Counter,
        None,
        [LabelDef::closed("reason", UpstreamExit::SET)],
        None,
        "lro proxy: upstream sessions that ended, by reason (shutdown, exited, failed, disconnected).",
    ),
    def!(
        UPSTREAM_RESTARTS_TOTAL,
        Counter,
        None,
        [],
        None,
        "lro proxy: upstream sessions opened again after one was lost (a respawned child or a reconnect).",
    ),
    def!(
        UPSTREAM_ERRORS_TOTAL,
        Counter,
        None,
        [
            LabelDef::closed("method", UpstreamMethod::SET),
            LabelDef::closed("code", UpstreamErrorCode::SET)
        ],
        None,
        "lro proxy: forwarded requests that failed, by method and JSON-RPC error code.",
    ),
    def!(
        UPSTREAM_REQUEST_DURATION_SECONDS,
        Histogram,
        Some(Unit::Seconds),
        [LabelDef::closed("method", UpstreamMethod::SET)],
        Some(DURATION_BUCKETS),
        "lro proxy: time from forwarding a request to its answer, by method.",
    ),
    def!(
        CONTEXT_REQUESTS_TOTAL,
        Counter,
        None,
        [LabelDef::open("mode")],
        None,
        "Context-offload calls (context_offload tool, HTTP service, CLI), by mode: compact, compress or auto (the request's context_manage_mode).",
    ),
    def!(
        CONTEXT_MESSAGES_COMPACTED_TOTAL,
        Counter,
        None,
        [],
        None,
        "Tool messages compacted: their content stored in a file, a preview left in the history.",
    ),
    def!(
        CONTEXT_GROUPS_COMPRESSED_TOTAL,
        Counter,
        None,
        [],
        None,
        "Message groups compressed into <state_snapshot> blocks on the system message.",
    ),
    def!(
        CONTEXT_TOKENS_BEFORE_TOTAL,
        Counter,
        None,
        [],
        None,
        "History tokens (characters / 4) before context offload, summed over calls.",
    ),
    def!(
        CONTEXT_TOKENS_AFTER_TOTAL,
        Counter,
        None,
        [],
        None,
        "History tokens (characters / 4) after context offload, summed over calls.",
    ),
    def!(
        CONTEXT_SUMMARISER_CALLS_TOTAL,
        Counter,
        None,
        [
            LabelDef::closed("kind", SummariserKind::SET),
            LabelDef::closed("outcome", SummariserOutcome::SET)
        ],
        None,
        "Summariser calls of compression, by kind (extractive, llm, plugin) and outcome (ok, fallback: failed, extractive used).",
    ),
    def!(
        CONTEXT_SUMMARISER_DURATION_SECONDS,
        Histogram,
        Some(Unit::Seconds),
        [LabelDef::closed("kind", SummariserKind::SET)],
        Some(DURATION_BUCKETS),
        "Time of one summariser call, by kind.",
    ),
    def!(
        CONTEXT_WRITE_FAILURES_TOTAL,
        Counter,
        None,
        [],
        None,
        "Context files (compacted results, compressed groups) that could not be written; the messages were kept whole.",
    ),
    def!(
        AUDIT_LEVEL,
        Gauge,
        None,
        [],
        None,
        "lro audit: the LRO conformance level (0-3) the last audit proved; written by `lro audit --textfile` for the node exporter's textfile collector.",
    ),
    def!(
        AUDIT_CHECK,
        Gauge,
        None,
        [LabelDef::open("check"), LabelDef::open("level")],
        None,
        "lro audit: each check of the last audit, 1 pass, 0 fail, -1 skip; level 0 marks checks reported outside any level.",
    ),
    def!(
        BUILD_INFO,
        Gauge,
        None,
        [
            LabelDef::open("version"),
            LabelDef::open("conformance_level")
        ],
        None,
        "Build information; always 1.",
    ),
];

/// The definition of the metric named `name`.
pub fn find(name: &str) -> Option<&'static MetricDef> {
    ALL.iter().find(|m| m.name == name)
}

/// The whole catalogue as JSON: every metric with its type, unit, help,
/// buckets and labels, and every closed label set by variant. This is what
/// `lro metrics --json` prints and `deploy/metrics.json` holds.
pub fn catalogue() -> Value {
    let mut sets = serde_json::Map::new();
    let metrics: Vec<Value> = ALL
        .iter()
        .map(|m| {
            let labels: Vec<Value> = m
                .labels
                .iter()
                .map(|l| match l.values {
                    Some(set) => {
                        let variants: serde_json::Map<String, Value> = set
                            .variants
                            .iter()
                            .map(|(variant, value)| ((*variant).to_owned(), json!(value)))
                            .collect();
                        sets.insert(set.name.to_owned(), Value::Object(variants));
                        json!({"name": l.name, "set": set.name, "values": set.values().collect::<Vec<_>>()})
                    }
                    None => json!({"name": l.name, "set": null, "values": null}),
                })
                .collect();
            json!({
                "key": m.key,
                "name": m.name,
                "type": m.kind.as_str(),
                "unit": m.unit.map(|u| u.as_str()),
                "help": m.help,
                "labels": labels,
                "buckets": m.buckets,
            })
        })
        .collect();
    json!({"metrics": metrics, "label_sets": sets})
}

/// [`catalogue`] as pretty JSON with a final newline: the exact text of
/// `deploy/metrics.json` and of `lro metrics --json`.
pub fn catalogue_text() -> String {
    let mut text = serde_json::to_string_pretty(&catalogue()).expect("JSON values serialize");
    text.push('\n');
    text
}

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
    for reason in WriteFailureReason::ALL {
        counter!(OFFLOAD_WRITE_FAILURES_TOTAL, "reason" => reason.as_str()).absolute(0);
    }
    for outcome in CleanupOutcome::ALL {
        counter!(CLEANUP_RUNS_TOTAL, "outcome" => outcome.as_str()).absolute(0);
    }
    for reason in ExpiryReason::ALL {
        counter!(OFFLOAD_FILES_EXPIRED_TOTAL, "reason" => reason.as_str()).absolute(0);
    }
}

/// Registers the store's error counters of writes and reads at zero
/// (adding 0: a counter already counting keeps its value), so the first
/// failure of an outage is an increase for `LroStoreErrors`.
pub fn register_store_zeroed() {
    for op in [StoreOp::Put, StoreOp::Get] {
        for kind in StoreErrorKind::ALL {
            counter!(STORE_ERRORS_TOTAL, "op" => op.as_str(), "kind" => kind.as_str()).increment(0);
        }
    }
}

/// Registers the upstream counters of `lro proxy` at zero, so its alerts
/// see the first exit or error as an increase.
pub fn register_upstream_zeroed() {
    for reason in UpstreamExit::ALL {
        counter!(UPSTREAM_EXITS_TOTAL, "reason" => reason.as_str()).absolute(0);
    }
    counter!(UPSTREAM_RESTARTS_TOTAL).absolute(0);
}

/// Registers the context-offload counters at zero, so rates and the
/// dashboard see the first increase.
pub fn register_context_zeroed() {
    for mode in ["compact", "compress", "auto"] {
        counter!(CONTEXT_REQUESTS_TOTAL, "mode" => mode).absolute(0);
    }
    for name in [
        CONTEXT_MESSAGES_COMPACTED_TOTAL,
        CONTEXT_GROUPS_COMPRESSED_TOTAL,
        CONTEXT_TOKENS_BEFORE_TOTAL,
        CONTEXT_TOKENS_AFTER_TOTAL,
        CONTEXT_WRITE_FAILURES_TOTAL,
    ] {
        counter!(name).absolute(0);
    }
}

/// Registers a tool's result counters at zero (done when tools are listed).
pub fn register_tool(tool: &str) {
    let tool = tool_label(tool);
    for outcome in ToolOutcome::ALL {
        counter!(TOOL_RESULTS_TOTAL, "tool" => tool.clone(), "outcome" => outcome.as_str())
            .absolute(0);
    }
}

/// Distinct `tool` label values kept before the rest share
/// [`OTHER_TOOLS`].
pub const MAX_TOOL_LABELS: usize = 100;

/// The `tool` label value shared by tools past [`MAX_TOOL_LABELS`].
pub const OTHER_TOOLS: &str = "other";

/// The `tool` label value for `tool`: its own name for the first
/// [`MAX_TOOL_LABELS`] distinct names this process sees, [`OTHER_TOOLS`]
/// after that. Tool names are arbitrary behind `lro proxy`, so without a cap
/// one upstream could create series without bound.
///
/// ```
/// assert_eq!(lro_core::metric::tool_label("search"), "search");
/// ```
pub fn tool_label(tool: &str) -> String {
    static SEEN: std::sync::Mutex<Option<std::collections::HashSet<String>>> =
        std::sync::Mutex::new(None);
    let mut seen = SEEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let seen = seen.get_or_insert_with(Default::default);
    if seen.contains(tool) {
        return tool.to_owned();
    }
    if seen.len() < MAX_TOOL_LABELS {
        seen.insert(tool.to_owned());
        return tool.to_owned();
    }
    OTHER_TOOLS.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_lists_every_metric_and_set() {
        let c = catalogue();
        assert_eq!(c["metrics"].as_array().unwrap().len(), ALL.len());
        assert_eq!(c["label_sets"]["ExpiryReason"]["Quota"], "quota");
        let build = &c["metrics"][ALL.len() - 1];
        assert_eq!(build["key"], "BUILD_INFO");
        assert_eq!(build["labels"][0]["values"], Value::Null);
        assert_eq!(
            find(EXTRACT_DURATION_SECONDS).unwrap().kind,
            Kind::Histogram
        );
    }

    #[test]
    fn tool_labels_are_capped() {
        // Names unique to this test; other tests of the process may have
        // taken some of the slots already, so fill up to the cap first.
        let names: Vec<String> = (0..=MAX_TOOL_LABELS)
            .map(|i| format!("cap-test-{i}"))
            .collect();
        let labels: Vec<String> = names.iter().map(|n| tool_label(n)).collect();
        assert_eq!(labels.last().unwrap(), OTHER_TOOLS);
        assert_eq!(
            tool_label(&names[0]),
            names[0],
            "a name seen before keeps its label"
        );
        assert_eq!(tool_label("cap-test-new"), OTHER_TOOLS);
    }

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
                assert!(!["path", "id", "session", "file"].contains(&label.name));
            }
            assert_eq!(m.buckets.is_some(), m.kind == Kind::Histogram, "{}", m.name);
        }
    }
}

//! The context-offload metrics, through the `metrics` facade with the
//! names and label values of the catalogue in `lro_core::metric`.

use lro_core::metric::{self, SummariserKind, SummariserOutcome};
use metrics::{counter, histogram};

use crate::{Mode, Stats};

/// Records one call's counts.
pub(crate) fn record(mode: Mode, stats: &Stats) {
    counter!(metric::CONTEXT_REQUESTS_TOTAL, "mode" => mode.as_str()).increment(1);
    counter!(metric::CONTEXT_MESSAGES_COMPACTED_TOTAL).increment(stats.compacted as u64);
    counter!(metric::CONTEXT_GROUPS_COMPRESSED_TOTAL).increment(stats.groups as u64);
    counter!(metric::CONTEXT_TOKENS_BEFORE_TOTAL).increment(stats.tokens_before);
    counter!(metric::CONTEXT_TOKENS_AFTER_TOTAL).increment(stats.tokens_after);
    counter!(metric::CONTEXT_WRITE_FAILURES_TOTAL).increment(stats.write_failures as u64);
    for call in &stats.summariser_calls {
        let kind = match call.kind {
            "extractive" => SummariserKind::Extractive,
            "llm" => SummariserKind::Llm,
            _ => SummariserKind::Plugin,
        };
        let outcome = if call.ok {
            SummariserOutcome::Ok
        } else {
            SummariserOutcome::Fallback
        };
        counter!(metric::CONTEXT_SUMMARISER_CALLS_TOTAL, "kind" => kind.as_str(), "outcome" => outcome.as_str())
            .increment(1);
        histogram!(metric::CONTEXT_SUMMARISER_DURATION_SECONDS, "kind" => kind.as_str())
            .record(call.duration.as_secs_f64());
    }
}

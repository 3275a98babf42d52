//! The native `lro_extract` tool the layer adds next to the server's tools.

use std::{sync::Arc, time::Instant};

use lro_core::{TokenEstimator, event, metric::label::ExtractOutcome};
use lro_extract::ExtractRequest;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use tracing::Span;

use super::{intercept::Shared, trace};

/// Name of the tool.
pub const EXTRACT_TOOL: &str = "lro_extract";

const DESCRIPTION: &str = "Query a result set that was offloaded to a JSONL file (the file_path of an \
offload descriptor) without reading the whole file. Give file_path and exactly one of: recipe (1-10, \
the descriptor's jq recipes, with optional params), query (a jq filter applied to each record; \
slurp=true applies it to the array of all records), the structured form (where conditions combined \
by match all/any, fields, sort_by, offset, limit, count, group_by) — best for several conditions at \
once, e.g. namespace equals X and priority >= 3 and content contains Y, with count=true — or, for any \
file, lines (a window by line number) or grep (a pattern with context lines).";

/// The tool definition, with an input schema generated from the request type.
pub(crate) fn tool() -> Tool {
    let schema =
        serde_json::to_value(schemars::schema_for!(ExtractRequest)).expect("schemas serialize");
    let schema: JsonObject = match schema {
        serde_json::Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    Tool::new(EXTRACT_TOOL, DESCRIPTION, Arc::new(schema))
}

/// Runs one `lro_extract` call. Never a protocol error: bad input and failed
/// queries come back as tool errors the model can read and correct.
pub(crate) async fn call(shared: &Arc<Shared>, arguments: Option<JsonObject>) -> CallToolResult {
    let Some(extractor) = shared.extractor.clone() else {
        return CallToolResult::error(vec![ContentBlock::text("lro_extract is disabled")]);
    };
    let args = serde_json::Value::Object(arguments.unwrap_or_default());
    let request: ExtractRequest = match serde_json::from_value(args) {
        Ok(r) => r,
        Err(e) => {
            trace::on_failure(&Span::current(), trace::TOOL_ERROR);
            return CallToolResult::error(vec![ContentBlock::text(format!(
                "invalid lro_extract arguments: {e}"
            ))]);
        }
    };
    let started = Instant::now();
    let req = request.clone();
    let ex = extractor.clone();
    let result = tokio::task::spawn_blocking(move || ex.run(&req))
        .await
        .unwrap_or_else(|join| {
            Err(lro_extract::ExtractError::Runtime {
                line: None,
                message: format!("extraction task failed: {join}"),
            })
        });
    event::emit(
        &*shared.sink,
        extractor.event(&request, &result, started.elapsed()),
    );
    match result {
        Ok(out) => {
            let mut text = out.text;
            let mut notice = out.notice;
            // An extraction result is never offloaded again (that would loop):
            // over the threshold it is cut at a line boundary with a notice.
            let threshold = shared.cfg.threshold_tokens as usize;
            if shared.estimator.estimate_against(&[&text], threshold) > threshold {
                let cut = lines_within(&text, threshold, &*shared.estimator);
                let shown = text[..cut].lines().count();
                text.truncate(cut);
                notice = Some(format!(
                    "Output truncated to about {threshold} tokens: showing {shown} of {} results. \
                     Narrow it with where, fields, limit or count.",
                    out.count
                ));
            }
            let mut content = vec![ContentBlock::text(text)];
            content.extend(notice.map(ContentBlock::text));
            CallToolResult::success(content)
        }
        Err(e) => {
            let error_type = match e.outcome() {
                ExtractOutcome::Timeout => ExtractOutcome::Timeout.as_str(),
                _ => trace::TOOL_ERROR,
            };
            trace::on_failure(&Span::current(), error_type);
            CallToolResult::error(vec![ContentBlock::text(e.to_string())])
        }
    }
}

/// The length of the longest run of whole lines at the start of `text` that
/// the estimator puts within `budget` tokens. Measured with the configured
/// estimator, so text in scripts that cost more per byte (CJK) is cut as
/// early as it must be, and no earlier.
fn lines_within(text: &str, budget: usize, estimator: &dyn TokenEstimator) -> usize {
    let ends: Vec<usize> = text.match_indices('\n').map(|(i, _)| i).collect();
    // Binary search for the last line end whose prefix fits: the estimate of
    // a prefix never decreases as the prefix grows. Compared against the
    // budget, so an exact tokenizer only counts prefixes near the cut.
    let fits =
        ends.partition_point(|&end| estimator.estimate_against(&[&text[..end]], budget) <= budget);
    match fits {
        0 => 0,
        n => ends[n - 1],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lro_core::ScriptAware;

    #[test]
    fn cuts_by_the_estimate_not_by_bytes() {
        // Three-byte CJK characters: one token each for the script-aware estimator.
        let line = "数据库连接超时错误".repeat(4);
        let text: String = (0..50).map(|_| format!("{line}\n")).collect();
        let cut = lines_within(&text, 100, &ScriptAware);
        assert!(ScriptAware.estimate(&text[..cut]) <= 100);
        // The next line would not have fitted.
        let next = cut + line.len() + 1;
        assert!(ScriptAware.estimate(&text[..next]) > 100);
        assert_eq!(lines_within("one very long line", 1, &ScriptAware), 0);
    }

    #[test]
    fn an_exact_estimator_only_counts_prefixes_near_the_cut() {
        use std::sync::{Arc, Mutex};

        use lro_core::Banded;

        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        // Stand-in tokenizer: one token per two bytes.
        let exact = move |t: &str| {
            log.lock().unwrap().push(t.len());
            t.len().div_ceil(2)
        };
        // 1000 lines of 40 bytes: 10 000 tokens by chars / 4, 20 000 exact.
        let text = format!("{}\n", "z".repeat(39)).repeat(1000);
        let cut = lines_within(&text, 100, &Banded::new(ScriptAware, exact));
        // Cut by the exact count: 200 bytes are 100 tokens.
        assert_eq!(cut, 199);
        let seen = seen.lock().unwrap();
        assert!(!seen.is_empty());
        // Only prefixes whose fast estimate is within 100 ± 50%.
        assert!(
            seen.iter().all(|&len| len.div_ceil(4).abs_diff(100) <= 50),
            "{seen:?}"
        );
    }
}

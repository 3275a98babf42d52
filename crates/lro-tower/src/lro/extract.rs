//! The native `lro_extract` tool the layer adds next to the server's tools.

use std::{sync::Arc, time::Instant};

use lro_core::{event, metric::label::ExtractOutcome, principal::Principal};
use lro_extract::ExtractRequest;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use tracing::Span;

use super::{shared::Shared, trace};

/// Name of the tool.
pub const EXTRACT_TOOL: &str = "lro_extract";

const DESCRIPTION: &str = "Query a result set that was offloaded to a JSONL file (the file_path of an \
offload descriptor) without reading the whole file. Give file_path and exactly one of: recipe (1-10, \
the descriptor's jq recipes, with optional params), query (a jq filter applied to each record; \
slurp=true applies it to the array of all records), the structured form (where conditions combined \
by match all/any, fields, sort_by, count, group_by) — best for several conditions at once, e.g. \
namespace equals X and priority >= 3 and content contains Y, with count=true — or, for any file, \
lines (a window by line number) or grep (a pattern with context lines). offset/limit page the \
output of recipe, query and the structured form: the results, or for slurp (and recipes 6, 8, 9) \
the elements of the one array returned. Output over the limit is cut between results, never inside \
one, and the notice gives the exact arguments for the next part.";

/// The tool definition, with an input schema generated from the request type
/// and the results' lifetime in the description.
pub(crate) fn tool(shared: &Shared) -> Tool {
    let schema =
        serde_json::to_value(schemars::schema_for!(ExtractRequest)).expect("schemas serialize");
    let schema: JsonObject = match schema {
        serde_json::Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    let description = match shared.access.lifetime() {
        Some(ttl) => format!(
            "{DESCRIPTION} Results expire after {}; after that, call the original tool again for a \
             new one.",
            lro_extract::access::lifetime(ttl)
        ),
        None => DESCRIPTION.to_owned(),
    };
    Tool::new(EXTRACT_TOOL, description, Arc::new(schema))
}

/// Runs one `lro_extract` call for `principal`, on its own results only.
/// Never a protocol error: bad input and failed queries come back as tool
/// errors the model can read and correct.
pub(crate) async fn call(
    shared: &Arc<Shared>,
    principal: &Principal,
    arguments: Option<JsonObject>,
) -> CallToolResult {
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
    // Expiry and the caller's folder are decided from the name alone, before
    // any lookup.
    let grant = match shared.access.check(principal, &request.file_path) {
        Ok(grant) => grant,
        Err(denied) => {
            trace::on_failure(&Span::current(), trace::TOOL_ERROR);
            return CallToolResult::error(vec![ContentBlock::text(denied.to_string())]);
        }
    };
    let extractor = extractor.root_dir(grant.root());
    let started = Instant::now();
    let req = request.clone();
    let ex = extractor.clone();
    // The admission gate is fair between principals: it counts the caller's.
    let caller = principal.clone();
    let result = tokio::task::spawn_blocking(move || ex.run_as(&caller, &req))
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
            // The extractor already kept the output within the threshold,
            // cut between results (never inside one): an extraction result
            // is never offloaded again, which would loop.
            let mut content = vec![ContentBlock::text(out.results())];
            content.extend(out.notice.map(ContentBlock::text));
            CallToolResult::success(content)
        }
        Err(e) => {
            let error_type = match e.outcome() {
                ExtractOutcome::Timeout => ExtractOutcome::Timeout.as_str(),
                _ => trace::TOOL_ERROR,
            };
            trace::on_failure(&Span::current(), error_type);
            // Another principal's result reads exactly like a missing one.
            let text = grant
                .conceal(&e)
                .map_or_else(|| e.to_string(), |denied| denied.to_string());
            CallToolResult::error(vec![ContentBlock::text(text)])
        }
    }
}

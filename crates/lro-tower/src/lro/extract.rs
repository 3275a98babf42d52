//! The native `lro_extract` tool the layer adds next to the server's tools.

use std::{sync::Arc, time::Instant};

use lro_core::{event, metric::label::ExtractOutcome, principal::Principal};
use lro_extract::ExtractRequest;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::json;
use tracing::Span;

use super::{shared::Shared, trace};

/// Name of the tool.
pub const EXTRACT_TOOL: &str = "lro_extract";

// Every tool definition goes to the model on every turn, and some clients
// cut descriptions at 2,048 characters: the description carries the call
// forms once, the schema only names and types (the errors teach the rest).
const DESCRIPTION: &str = "Query an offloaded result (the file_path of an offload descriptor) \
without reading the whole file. Give file_path and one form:
- recipe: 1-10, the descriptor's recipes (params sets their $variables);
- query: a jq filter run on each record (slurp: true runs it once on the array of all records);
- structured: where [{field, op, value}] (op: eq ne gt gte lt lte prefix contains regex in exists; \
contains is case-insensitive; field is a dotted path), match all|any, then fields, sort_by \
(-field for descending), count: true, or group_by. Best for several conditions at once, e.g. \
namespace prefix X and priority gte 3 and content contains Y, with count: true;
- lines: {offset, limit}, records as numbered text lines;
- grep: a regular expression, or {pattern, context, ignore_case}.
offset/limit page the output. Long output is cut between results, and the notice gives the \
arguments for the next part.";

/// The input schema: names and types of [`ExtractRequest`]'s fields.
fn input_schema() -> JsonObject {
    let int = json!({"type": "integer", "minimum": 0});
    let text = json!({"type": "string"});
    let json = json!({
        "type": "object",
        "properties": {
            "file_path": text,
            "recipe": {"type": "integer", "minimum": 1, "maximum": 10},
            "params": {"type": "object"},
            "query": text,
            "slurp": {"type": "boolean"},
            "where": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "field": text,
                    "op": {"enum": ["eq", "ne", "gt", "gte", "lt", "lte", "prefix", "contains",
                                    "regex", "in", "exists"]},
                    "value": {}
                },
                "required": ["field", "op"]
            }},
            "match": {"enum": ["all", "any"]},
            "fields": {"type": "array", "items": text},
            "sort_by": text,
            "count": {"type": "boolean"},
            "group_by": text,
            "offset": int,
            "limit": int,
            "lines": {"type": "object", "properties": {"offset": int, "limit": int, "max_chars": int}},
            "grep": {"type": ["string", "object"], "properties": {
                "pattern": text, "context": int, "ignore_case": {"type": "boolean"}, "max_matches": int
            }}
        },
        "required": ["file_path"],
        "additionalProperties": false
    });
    match json {
        serde_json::Value::Object(map) => map,
        _ => unreachable!("an object literal"),
    }
}

/// The tool definition, with the results' lifetime in the description.
pub(crate) fn tool(shared: &Shared) -> Tool {
    let description = match shared.access.lifetime() {
        Some(ttl) => format!(
            "{DESCRIPTION} Results expire after {}; then call the original tool again.",
            lro_extract::access::lifetime(ttl)
        ),
        None => DESCRIPTION.to_owned(),
    };
    Tool::new(EXTRACT_TOOL, description, Arc::new(input_schema()))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_names_exactly_the_request_fields() {
        let derived = serde_json::to_value(schemars::schema_for!(ExtractRequest)).unwrap();
        let names = |props: &serde_json::Value| -> Vec<String> {
            let mut v: Vec<String> = props.as_object().unwrap().keys().cloned().collect();
            v.sort();
            v
        };
        let ours = serde_json::Value::Object(input_schema());
        assert_eq!(names(&ours["properties"]), names(&derived["properties"]));
        let grep = &ours["properties"]["grep"]["properties"];
        assert_eq!(names(grep), names(&derived["$defs"]["Grep"]["properties"]));
        let lines = &ours["properties"]["lines"]["properties"];
        assert_eq!(
            names(lines),
            names(&derived["$defs"]["LineWindow"]["properties"])
        );
    }
}

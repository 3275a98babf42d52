//! The native `lro_extract` tool the layer adds next to the server's tools.

use std::{sync::Arc, time::Instant};

use lro_core::{
    descriptor::Location, error::chain, event, metric::label::ExtractOutcome, principal::Principal,
};
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
const DESCRIPTION: &str = "Query an offloaded result (the FIELD of an offload descriptor) \
without reading the whole file. Give FIELD and one form:
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

/// The input schema: names and types of [`ExtractRequest`]'s fields, the
/// result named by `location`'s field.
fn input_schema(location: Location, presign: bool) -> JsonObject {
    let int = json!({"type": "integer", "minimum": 0});
    let text = json!({"type": "string"});
    let json = json!({
        "type": "object",
        "properties": {
            location.field(): text,
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
        "required": [location.field()],
        "additionalProperties": false
    });
    match json {
        serde_json::Value::Object(mut map) => {
            if presign {
                map["properties"]["presign"] = json!({"type": "boolean"});
            }
            map
        }
        _ => unreachable!("an object literal"),
    }
}

/// Where this layer's results are: files, or handles in a store.
fn location(shared: &Shared) -> Location {
    if shared.remote.is_some() {
        Location::Handle
    } else {
        Location::FilePath
    }
}

/// The tool definition, with the results' lifetime in the description.
pub(crate) fn tool(shared: &Shared) -> Tool {
    let location = location(shared);
    let presign = shared.remote.is_some() && shared.cfg.presign;
    let mut description = DESCRIPTION.replace("FIELD", location.field());
    if presign {
        description.push_str(
            " presign: true with handle alone returns one download URL, valid 5 minutes, for a \
             client with a shell.",
        );
    }
    let description = match shared.access.lifetime() {
        Some(ttl) => format!(
            "{description} Results expire after {}; then call the original tool again.",
            lro_extract::access::lifetime(ttl)
        ),
        None => description,
    };
    Tool::new(
        EXTRACT_TOOL,
        description,
        Arc::new(input_schema(location, presign)),
    )
}

/// A tool error the model reads, with the span marked.
fn refuse(text: impl Into<String>) -> CallToolResult {
    trace::on_failure(&Span::current(), trace::TOOL_ERROR);
    CallToolResult::error(vec![ContentBlock::text(text.into())])
}

/// `presign: true`: one download URL of the caller's result, after the
/// same checks as a read. Never logged, never in a descriptor.
async fn presigned(
    shared: &Shared,
    principal: &Principal,
    handle: Option<String>,
    rest: &JsonObject,
) -> CallToolResult {
    let (Some(remote), Some(handle), true) = (&shared.remote, handle, shared.cfg.presign) else {
        return refuse("this server offers no download URLs (presign): use lro_extract's forms");
    };
    // Only the placeholder `take_handle` left.
    if rest.keys().any(|k| k != "file_path") {
        return refuse("presign takes handle alone");
    }
    match remote.presign(&shared.access, principal, &handle).await {
        Ok(url) => CallToolResult::success(vec![ContentBlock::text(format!(
            "One GET downloads {handle} within {}, no credentials needed: {url}\n\
             It is the JSONL file: line 1 the header, then one record a line \
             (curl -s 'URL' | tail -n +2 | jq …).",
            lro_extract::access::lifetime(super::remote::PRESIGN_LIFETIME)
        ))]),
        Err(denied) => refuse(denied.to_string()),
    }
}

/// With a store, the handle out of `args`, and a placeholder `file_path`
/// in its place until the copy is made.
fn take_handle(args: &mut JsonObject) -> Result<String, &'static str> {
    if args.contains_key("file_path") {
        return Err(
            "this server keeps results in a shared store: name one by the \
                    descriptor's handle (handle=\"lro:…\"), not file_path",
        );
    }
    match args.remove("handle") {
        Some(serde_json::Value::String(handle)) => {
            args.insert("file_path".into(), serde_json::Value::String(String::new()));
            Ok(handle)
        }
        Some(_) => Err("handle must be a string: the descriptor's handle (\"lro:…\")"),
        None => Err("lro_extract needs handle: the handle of an offload descriptor (\"lro:…\")"),
    }
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
    let mut arguments = arguments.unwrap_or_default();
    let handle = match &shared.remote {
        Some(_) => match take_handle(&mut arguments) {
            Ok(handle) => Some(handle),
            Err(text) => return refuse(text),
        },
        None => None,
    };
    let presign = match arguments.remove("presign") {
        None | Some(serde_json::Value::Bool(false)) => false,
        Some(serde_json::Value::Bool(true)) => true,
        Some(_) => return refuse("presign must be true or false"),
    };
    if presign {
        return presigned(shared, principal, handle, &arguments).await;
    }
    let mut request: ExtractRequest =
        match serde_json::from_value(serde_json::Value::Object(arguments)) {
            Ok(r) => r,
            Err(e) => return refuse(format!("invalid lro_extract arguments: {e}")),
        };
    // Expiry and the caller's folder are decided from the name alone, before
    // any lookup; a stored result is then copied for this call only.
    let (root, copy, named) = match (&shared.remote, handle) {
        (Some(remote), Some(handle)) => {
            match remote
                .fetch(&shared.access, principal, &handle, &request)
                .await
            {
                Ok(fetched) => {
                    request.file_path = fetched.path.to_string_lossy().into_owned();
                    (fetched.root().to_owned(), Some(fetched), handle)
                }
                Err(denied) => {
                    if let super::remote::FetchError::Scratch { source, .. } = &denied {
                        tracing::warn!(error = %source.kind(), "no working copy of a stored result");
                    }
                    // This level alone, not the chain: the store's error
                    // names its URL and keys, the scratch copy's this
                    // server's directories.
                    return refuse(denied.to_string());
                }
            }
        }
        _ => match shared.access.check(principal, &request.file_path) {
            Ok(grant) => (grant.root().to_owned(), None, request.file_path.clone()),
            Err(denied) => return refuse(denied.to_string()),
        },
    };
    // A working copy was checked as it was made (and a line window's is
    // partial on purpose).
    let extractor = extractor.root_dir(root).check_size(copy.is_none());
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
            let notice = match (&copy, out.notice) {
                // The next part is asked for by the handle: the copy is gone
                // when this call ends.
                (Some(copy), Some(notice)) => Some(by_handle(&notice, &copy.path, &named)),
                (_, notice) => notice,
            };
            content.extend(notice.map(ContentBlock::text));
            CallToolResult::success(content)
        }
        Err(e) => {
            let error_type = match e.outcome() {
                ExtractOutcome::Timeout => ExtractOutcome::Timeout.as_str(),
                _ => trace::TOOL_ERROR,
            };
            trace::on_failure(&Span::current(), error_type);
            // Another principal's result reads exactly like a missing one.
            let text = if e.is_guard() || matches!(e, lro_extract::ExtractError::BadRoot { .. }) {
                lro_extract::access::AccessError::Unknown { path: named }.to_string()
            } else {
                match &copy {
                    // The copy's path is this replica's business: the
                    // caller named the handle.
                    Some(copy) => chain(&e)
                        .to_string()
                        .replace(&*copy.path.to_string_lossy(), &named),
                    None => chain(&e).to_string(),
                }
            };
            CallToolResult::error(vec![ContentBlock::text(text)])
        }
    }
}

/// `notice` with the request for the next part naming `handle`, where it
/// named the working copy at `copy`.
fn by_handle(notice: &str, copy: &std::path::Path, handle: &str) -> String {
    let quoted = |v: &str| serde_json::to_string(v).expect("strings serialize");
    notice.replace(
        &format!("\"file_path\":{}", quoted(&copy.to_string_lossy())),
        &format!("\"handle\":{}", quoted(handle)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_part_names_the_handle_not_the_copy() {
        let copy = std::path::Path::new("/o/.fetch-x/atlatl-a-01K.jsonl");
        let notice = r#"cut; next part: {"file_path":"/o/.fetch-x/atlatl-a-01K.jsonl","query":".","offset":7}"#;
        assert_eq!(
            by_handle(notice, copy, "lro:a-01K"),
            r#"cut; next part: {"handle":"lro:a-01K","query":".","offset":7}"#
        );
    }

    #[test]
    fn the_schema_names_exactly_the_request_fields() {
        let derived = serde_json::to_value(schemars::schema_for!(ExtractRequest)).unwrap();
        let names = |props: &serde_json::Value| -> Vec<String> {
            let mut v: Vec<String> = props.as_object().unwrap().keys().cloned().collect();
            v.sort();
            v
        };
        let ours = serde_json::Value::Object(input_schema(Location::FilePath, false));
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

//! The context-offload tools the layer can add next to the server's:
//! `context_offload`, `context_grep` and `context_read_file`, with the
//! semantics of ReMe's HTTP API (crate `lro-context`).

use std::sync::Arc;

use lro_context::{ContextOffloader, FileContents};
use lro_core::{error::chain, principal::Principal};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::{Value, json};

use lro_store::mirror::{Mirror, Op};

/// The tools' names.
pub const CONTEXT_TOOLS: [&str; 3] = ["context_offload", "context_grep", "context_read_file"];

fn schema(v: Value) -> Arc<JsonObject> {
    Arc::new(v.as_object().cloned().unwrap_or_default())
}

/// The three tool definitions.
pub(crate) fn tools() -> Vec<Tool> {
    let int = json!({"type": "integer", "minimum": 0});
    vec![
        Tool::new(
            CONTEXT_TOOLS[0],
            "Shrink an agent's message history (OpenAI-style messages). mode compact stores each tool \
             result over max_tool_message_tokens (default 2000) in a file under store_dir and leaves a \
             preview pointing at it; compress summarises older messages into <state_snapshot> blocks on \
             the system message (originals stored as JSON); auto (default) compacts, then compresses when \
             compaction kept over compact_ratio_threshold (0.75) of the tokens. Nothing changes while the \
             changeable messages (not system, not the keep_recent_count recent ones) hold at most \
             max_total_tokens (default 20000). Returns {success, answer, messages, metadata: \
             {stored_files, stats, warnings}}; use messages as the new history, and context_read_file \
             to read a stored file back (include_file_contents: true also returns ReMe's \
             write_file_dict, path -> content).",
            schema(json!({
                "type": "object",
                "properties": {
                    "messages": {"type": "array", "items": {"type": "object"}},
                    "context_manage_mode": {"enum": ["compact", "compress", "auto"]},
                    "max_total_tokens": int, "max_tool_message_tokens": int, "group_token_threshold": int,
                    "keep_recent_count": int, "compact_ratio_threshold": {"type": "number"},
                    "store_dir": {"type": "string"}, "chat_id": {"type": "string"},
                    "preview_char_length": int, "exclude_tools": {"type": "array", "items": {"type": "string"}},
                    "include_file_contents": {"type": "boolean"}
                },
                "required": ["messages", "store_dir"]
            })),
        ),
        Tool::new(
            CONTEXT_TOOLS[1],
            "Find lines matching a regular expression in the files of a context store (e.g. where a \
             compacted result went). Returns the matches as File: name / Lnumber: line.",
            schema(json!({
                "type": "object",
                "properties": {"pattern": {"type": "string"}, "path": {"type": "string"},
                               "glob": {"type": "string"}, "limit": int},
                "required": ["pattern"]
            })),
        ),
        Tool::new(
            CONTEXT_TOOLS[2],
            "Read a file of a context store back, whole or limit lines from offset (0-based): a \
             compacted tool result exactly as it was, or a compressed group's original messages.",
            schema(json!({
                "type": "object",
                "properties": {"absolute_path": {"type": "string"}, "offset": int, "limit": int},
                "required": ["absolute_path"]
            })),
        ),
    ]
}

/// Runs one call of tool `name` for `principal`, who sees only its own
/// entries. Bad input is a tool error naming the field, never a protocol
/// error. With a shared store (`mirror`), entries are copied to it after an
/// offload, and copied back from it before a read or a grep on a replica
/// that lacks them (see `lro_store::mirror`).
pub(crate) async fn call(
    offloader: &ContextOffloader,
    mirror: Option<&Mirror>,
    principal: &Principal,
    name: &str,
    arguments: Option<JsonObject>,
) -> CallToolResult {
    let args = Value::Object(arguments.unwrap_or_default());
    if let Some(mirror) = mirror {
        let op = match name {
            "context_read_file" => Op::ReadFile,
            "context_grep" => Op::Grep,
            _ => Op::Offload,
        };
        mirror.before(principal, op, &args).await;
    }
    let offloader = offloader.clone();
    let name = name.to_owned();
    let who = principal.clone();
    let done = tokio::task::spawn_blocking(move || match name.as_str() {
        "context_offload" => offloader
            .offload_json(&who, args, FileContents::Omitted)
            .map(Answer::Offloaded),
        "context_grep" => offloader.grep_json(&who, args).map(Answer::Text),
        _ => offloader.read_file_json(&who, args).map(Answer::Text),
    })
    .await;
    match done {
        Ok(Ok(Answer::Offloaded(mut v))) => {
            if let Some(mirror) = mirror {
                mirror.share(principal, &mut v).await;
            }
            CallToolResult::success(vec![ContentBlock::text(v.to_string())])
        }
        Ok(Ok(Answer::Text(text))) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Ok(Err(e)) => CallToolResult::error(vec![ContentBlock::text(chain(&e).to_string())]),
        Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
            "the context tool failed: {}",
            chain(&e)
        ))]),
    }
}

enum Answer {
    Offloaded(Value),
    Text(String),
}

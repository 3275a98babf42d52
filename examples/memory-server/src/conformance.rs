//! The conformance suite's diagnostic tools, added by
//! [`MemoryServer::with_conformance_tools`] (`memory-server
//! --conformance-tools`) and by nothing else: they are test hooks, not
//! memory tools, so a model never sees them unless asked for.
//!
//! The `server-stateless` scenario of the MCP conformance suite can only
//! exercise three 2026-07-28 rules through tools of its own naming:
//!
//! | tool | rule |
//! |---|---|
//! | `test_missing_capability` | a request needing a capability the client did not declare in `_meta` gets -32021 (`requiredCapabilities: {"sampling": {}}`), HTTP 400 |
//! | `test_streaming_elicitation` | a response stream carries notifications and the result, never a request: the elicitation is asked for in an `InputRequiredResult` |
//! | `test_logging_tool` | `notifications/message` only when the request's `_meta` carries `io.modelcontextprotocol/logLevel` (at or below `info`) |
//!
//! rmcp 3.11 does not filter log messages by the request's `logLevel`, so
//! `test_logging_tool` does.
//!
//! ```
//! use lro_corpus::Corpus;
//! use memory_server::{MemoryServer, conformance::TOOLS};
//! use rmcp::ServerHandler;
//!
//! let server = MemoryServer::new(Corpus::generate(5, 1));
//! assert!(TOOLS.iter().all(|name| server.get_tool(name).is_none()));
//! let server = server.with_conformance_tools();
//! assert!(TOOLS.iter().all(|name| server.get_tool(name).is_some()));
//! ```

// Logging is deprecated by SEP-2577 (rmcp marks its types so), yet the
// 2026-07-28 per-request `logLevel` is exactly what `test_logging_tool` tests.
#![allow(deprecated)]

use rmcp::{
    ErrorData, RoleServer,
    handler::server::tool::InputResponses,
    model::{
        CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock, InputRequest,
        InputRequests, InputRequiredResult, LoggingLevel, LoggingMessageNotificationParam,
    },
    service::RequestContext,
    tool, tool_router,
};
use serde_json::{Value, json};

use crate::MemoryServer;

/// The names of the diagnostic tools.
pub const TOOLS: [&str; 3] = [
    "test_missing_capability",
    "test_streaming_elicitation",
    "test_logging_tool",
];

/// The key of `test_streaming_elicitation`'s one input request.
const CONFIRM: &str = "confirm";

#[tool_router(router = conformance_tool_router, vis = "pub(crate)")]
impl MemoryServer {
    /// Needs the client's `sampling` capability: -32021 without it.
    #[tool(
        name = "test_missing_capability",
        description = "Conformance diagnostic: needs the client's sampling capability \
                       (-32021 without it)."
    )]
    pub async fn test_missing_capability(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caps = context.client_capabilities().unwrap_or_default();
        if caps.sampling.is_none() {
            return Err(ErrorData::missing_required_client_capability(
                ClientCapabilities::builder().enable_sampling().build(),
            ));
        }
        Ok(text("the client declared sampling"))
    }

    /// Asks for a confirmation in an `InputRequiredResult`; needs elicitation.
    #[tool(
        name = "test_streaming_elicitation",
        description = "Conformance diagnostic: asks the user for a confirmation (an input \
                       request); needs the client's elicitation capability."
    )]
    pub async fn test_streaming_elicitation(
        &self,
        context: RequestContext<RoleServer>,
        InputResponses(responses): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        let caps = context.client_capabilities().unwrap_or_default();
        if caps.elicitation.is_none() {
            return Err(ErrorData::missing_required_client_capability(
                ClientCapabilities::builder().enable_elicitation().build(),
            ));
        }
        let answer = responses.as_ref().and_then(|r| r.get(CONFIRM));
        if let Some(content) = answer.and_then(accepted) {
            return Ok(text(format!("confirmed: {content}")).into());
        }
        let request: InputRequest = serde_json::from_value(json!({
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Please confirm",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"ok": {"type": "boolean"}},
                    "required": ["ok"],
                },
            },
        }))
        .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
        let requests = InputRequests::from([(CONFIRM.to_owned(), request)]);
        Ok(InputRequiredResult::from_input_requests(requests).into())
    }

    /// Logs one `info` message, only when the request asked for a log level.
    #[tool(
        name = "test_logging_tool",
        description = "Conformance diagnostic: sends an info log message when the request's \
                       _meta carries io.modelcontextprotocol/logLevel (info or lower)."
    )]
    pub async fn test_logging_tool(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if logs(context.meta.log_level(), LoggingLevel::Info) {
            let message = LoggingMessageNotificationParam::new(
                LoggingLevel::Info,
                Value::from("test_logging_tool ran"),
            )
            .with_logger("memory-server");
            // A client gone before the log is no reason to fail the call.
            let _ = context.peer.notify_logging_message(message).await;
        }
        Ok(text("Logging tool executed"))
    }
}

/// Whether a message at `level` is sent to a request that asked for
/// `requested`: never without a level, else at that level or above.
pub fn logs(requested: Option<LoggingLevel>, level: LoggingLevel) -> bool {
    requested.is_some_and(|requested| level as u8 >= requested as u8)
}

/// The content of an accepted elicitation answer.
fn accepted(answer: &Value) -> Option<&Value> {
    (answer.get("action")? == "accept")
        .then(|| answer.get("content"))
        .flatten()
        .filter(|content| content.is_object())
}

fn text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text.into())])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_only_at_or_above_the_requested_level() {
        assert!(!logs(None, LoggingLevel::Emergency));
        assert!(logs(Some(LoggingLevel::Debug), LoggingLevel::Info));
        assert!(logs(Some(LoggingLevel::Info), LoggingLevel::Info));
        assert!(!logs(Some(LoggingLevel::Warning), LoggingLevel::Info));
    }

    #[test]
    fn only_an_accepted_object_answer_counts() {
        let ok = json!({"action": "accept", "content": {"ok": true}});
        assert_eq!(accepted(&ok), Some(&json!({"ok": true})));
        assert_eq!(accepted(&json!({"action": "decline"})), None);
        assert_eq!(accepted(&json!({"action": "accept", "content": 1})), None);
    }

    #[test]
    fn missing_sampling_is_named_as_an_object() {
        let err = ErrorData::missing_required_client_capability(
            ClientCapabilities::builder().enable_sampling().build(),
        );
        assert_eq!(err.code.0, -32021);
        assert_eq!(
            err.data.unwrap()["requiredCapabilities"],
            json!({"sampling": {}})
        );
    }
}

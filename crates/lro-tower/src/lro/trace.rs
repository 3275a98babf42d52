//! The layer's spans: made in one place, failures marked in one place.
//!
//! Like tower-http's `trace/make_span.rs` and `on_failure.rs`: every
//! `tools/call` span carries the same fields whichever path serves it (a
//! server tool or `lro_extract`), and every failure — a protocol error, a
//! tool error, a failed or timed-out extraction — records `error.type` and
//! an error status, so it never exports as OK.

use rmcp::{
    RoleServer,
    model::{NumberOrString, RequestId},
    service::RequestContext,
};
use tracing::Span;

use super::intercept::Processed;

/// `error.type` of a result with `isError: true` (MCP semantic conventions).
pub(crate) const TOOL_ERROR: &str = "tool_error";

/// The `tools/call {tool}` server span, with every field the layer may
/// record declared (and left empty until then).
pub(crate) fn make_span(tool: &str, cx: &RequestContext<RoleServer>) -> Span {
    let span = tracing::info_span!(
        "tools/call",
        otel.name = format!("tools/call {tool}"),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        "mcp.method.name" = "tools/call",
        "gen_ai.tool.name" = %tool,
        "gen_ai.operation.name" = "execute_tool",
        "jsonrpc.request.id" = %request_id(&cx.id),
        "mcp.session.id" = tracing::field::Empty,
        "error.type" = tracing::field::Empty,
        "lro.decision" = tracing::field::Empty,
        "lro.estimated_tokens" = tracing::field::Empty,
        "lro.records" = tracing::field::Empty,
    );
    if let Some(session) = session_id(cx) {
        span.record("mcp.session.id", session.as_str());
    }
    span
}

/// Marks `span` as failed: `error.type` and an error status.
pub(crate) fn on_failure(span: &Span, error_type: &str) {
    span.record("error.type", error_type);
    span.record("otel.status_code", "ERROR");
}

/// Records what the layer did with the result.
pub(crate) fn on_result(span: &Span, processed: &Processed) {
    span.record("lro.decision", processed.decision.as_str());
    // Signed integers export as OTLP ints; usize would become a string.
    span.record("lro.estimated_tokens", processed.estimated_tokens as i64);
    span.record("lro.records", processed.records as i64);
}

fn session_id(cx: &RequestContext<RoleServer>) -> Option<String> {
    cx.extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.headers.get("mcp-session-id"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

fn request_id(id: &RequestId) -> String {
    match id {
        NumberOrString::Number(n) => n.to_string(),
        NumberOrString::String(s) => s.to_string(),
    }
}

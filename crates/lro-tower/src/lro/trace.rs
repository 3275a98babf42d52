//! The layer's spans: made in one place, failures marked in one place.
//!
//! Like tower-http's `trace/make_span.rs` and `on_failure.rs`: every
//! `tools/call` span carries the same fields whichever path serves it (a
//! server tool or `lro_extract`), and every failure — a protocol error, a
//! tool error, a failed or timed-out extraction — records `error.type` and
//! an error status, so it never exports as OK.
//!
//! A W3C `traceparent` (and `tracestate`) in the request's `_meta`, where
//! MCP 2026-07-28 lets the caller's trace context ride, joins the caller's
//! trace as [`CallerTrace`] says: by default the caller's span is the
//! parent of the layer's when the caller is authenticated (a principal),
//! and a span link when it is not, so an anonymous caller cannot graft the
//! server's spans into a trace of its choosing (or pick their sampling);
//! the link still leads from one trace to the other.

use std::str::FromStr;

use lro_core::{event::ToolOutcome, principal::Principal};
use opentelemetry::{
    Context,
    trace::{SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState},
};
use rmcp::{
    RoleServer,
    model::{NumberOrString, RequestId, RequestMetaObject},
    service::RequestContext,
};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

pub use lro_core::config::CallerTrace;

/// How the layer's span joins the caller's trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Join {
    Parent,
    Link,
}

/// How the layer's span joins the caller's trace, for `caller`'s setting.
fn join_for(caller: CallerTrace, principal: &Principal) -> Option<Join> {
    match caller {
        CallerTrace::ParentIfAuthenticated if principal.is_anonymous() => Some(Join::Link),
        CallerTrace::ParentIfAuthenticated | CallerTrace::Parent => Some(Join::Parent),
        CallerTrace::Link => Some(Join::Link),
        // Ignore, and any setting this layer does not know: not read.
        _ => None,
    }
}

/// `error.type` of a result with `isError: true` (MCP semantic conventions).
pub(crate) const TOOL_ERROR: &str = "tool_error";

/// The `tools/call {tool}` server span, with every field the layer may
/// record declared (and left empty until then), joined to the caller's
/// trace as `caller` says for a request from `principal`.
pub(crate) fn make_span(
    tool: &str,
    cx: &RequestContext<RoleServer>,
    principal: &Principal,
    caller: CallerTrace,
) -> Span {
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
    if let (Some(join), Some(remote)) = (join_for(caller, principal), remote_span(&cx.meta)) {
        match join {
            // Fails only when no OpenTelemetry layer is installed: then
            // there is no trace to join.
            Join::Parent => {
                let _ = span.set_parent(Context::new().with_remote_span_context(remote));
            }
            Join::Link => span.add_link(remote),
        }
    }
    span
}

/// The caller's span named by a valid W3C `traceparent` in `meta`, with
/// its `tracestate` when that is valid too. Versions other than `00` are
/// read by their first four fields, as the W3C says; `ff` is invalid.
fn remote_span(meta: &RequestMetaObject) -> Option<SpanContext> {
    let value = meta.get_traceparent()?.trim();
    let mut fields = value.split('-');
    let (version, trace, span, flags) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    let hex = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let valid = hex(version, 2)
        && version != "ff"
        && (version != "00" || fields.next().is_none())
        && hex(trace, 32)
        && hex(span, 16)
        && hex(flags, 2);
    if !valid {
        return None;
    }
    let trace = TraceId::from_hex(trace)
        .ok()
        .filter(|t| *t != TraceId::INVALID)?;
    let span = SpanId::from_hex(span)
        .ok()
        .filter(|s| *s != SpanId::INVALID)?;
    let flags = TraceFlags::new(u8::from_str_radix(flags, 16).ok()?) & TraceFlags::SAMPLED;
    let state = meta
        .get_tracestate()
        .and_then(|s| TraceState::from_str(s).ok())
        .unwrap_or_default();
    Some(SpanContext::new(trace, span, flags, true, state))
}

/// Marks `span` as failed: `error.type` and an error status.
pub(crate) fn on_failure(span: &Span, error_type: &str) {
    span.record("error.type", error_type);
    span.record("otel.status_code", "ERROR");
}

/// Records what the layer did with the result: its decision, the result's
/// estimated tokens and the records offloaded.
pub(crate) fn on_result(
    span: &Span,
    decision: ToolOutcome,
    estimated_tokens: usize,
    records: usize,
) {
    span.record("lro.decision", decision.as_str());
    // Signed integers export as OTLP ints; usize would become a string.
    span.record("lro.estimated_tokens", estimated_tokens as i64);
    span.record("lro.records", records as i64);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(traceparent: &str) -> RequestMetaObject {
        let mut meta = RequestMetaObject::new();
        meta.set_traceparent(traceparent);
        meta
    }

    #[test]
    fn a_valid_traceparent_names_the_callers_span() {
        let mut m = meta("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
        m.set_tracestate("congo=t61rcWkgMzE");
        let span = remote_span(&m).unwrap();
        assert_eq!(
            span.trace_id().to_string(),
            "0af7651916cd43dd8448eb211c80319c"
        );
        assert_eq!(span.span_id().to_string(), "b7ad6b7169203331");
        assert!(span.is_sampled() && span.is_remote());
        assert_eq!(span.trace_state().get("congo"), Some("t61rcWkgMzE"));
        // A later version may add fields.
        assert!(
            remote_span(&meta(
                "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00-x"
            ))
            .is_some()
        );
    }

    #[test]
    fn an_invalid_traceparent_is_ignored() {
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333g-01",
        ] {
            assert!(remote_span(&meta(bad)).is_none(), "{bad}");
        }
    }

    #[test]
    fn only_an_authenticated_caller_is_a_parent_by_default() {
        let alice = Principal::new("alice");
        let anonymous = Principal::anonymous();
        let join = join_for;
        assert_eq!(CallerTrace::default(), CallerTrace::ParentIfAuthenticated);
        assert_eq!(join(CallerTrace::default(), &alice), Some(Join::Parent));
        assert_eq!(join(CallerTrace::default(), &anonymous), Some(Join::Link));
        assert_eq!(join(CallerTrace::Parent, &anonymous), Some(Join::Parent));
        assert_eq!(join(CallerTrace::Link, &alice), Some(Join::Link));
        assert_eq!(join(CallerTrace::Ignore, &alice), None);
    }
}

//! A real OTLP/HTTP receiver: an axum route that accepts `POST /v1/traces`,
//! decodes the protobuf with `opentelemetry-proto` and hands each export to
//! the test over a channel. The telemetry tests use it, and so do the
//! memory-server's, which run the binary with `OTEL_EXPORTER_OTLP_ENDPOINT`
//! (`#[path]` to this file).

#![allow(dead_code, unreachable_pub, unused_imports)] // each test binary uses a different subset

use std::time::Duration;

use axum::{Router, body::Bytes, http::header::CONTENT_TYPE, routing::post};
pub use opentelemetry_proto::tonic::{
    collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse},
    common::v1::{AnyValue, KeyValue, any_value::Value},
    trace::v1::{Span, span::SpanKind, status::StatusCode},
};
use prost::Message;
use tokio::sync::mpsc;

/// How long a span may take to arrive once the server exits (a loaded
/// machine).
pub const PATIENCE: Duration = Duration::from_secs(30);

/// The exports, as they arrive.
pub type Exports = mpsc::UnboundedReceiver<ExportTraceServiceRequest>;

/// Starts the receiver on an ephemeral port; returns its base URL.
pub async fn receiver() -> (String, Exports) {
    let (tx, rx) = mpsc::unbounded_channel();
    let app = Router::new().route(
        "/v1/traces",
        post(move |body: Bytes| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(ExportTraceServiceRequest::decode(body).expect("OTLP protobuf"));
                (
                    [(CONTENT_TYPE, "application/x-protobuf")],
                    ExportTraceServiceResponse::default().encode_to_vec(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), rx)
}

/// The spans of one export, each with its resource's attributes.
pub fn spans(request: ExportTraceServiceRequest) -> impl Iterator<Item = (Span, Vec<KeyValue>)> {
    request.resource_spans.into_iter().flat_map(|rs| {
        let resource = rs.resource.map(|r| r.attributes).unwrap_or_default();
        rs.scope_spans
            .into_iter()
            .flat_map(|ss| ss.spans)
            .map(move |span| (span, resource.clone()))
    })
}

/// Waits for the first span named `name`; returns it with its resource's
/// attributes.
pub async fn span_named(rx: &mut Exports, name: &str) -> (Span, Vec<KeyValue>) {
    tokio::time::timeout(PATIENCE, async {
        loop {
            let request = rx.recv().await.expect("receiver open");
            if let Some(found) = spans(request).find(|(s, _)| s.name == name) {
                return found;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("span {name:?} not exported within {PATIENCE:?}"))
}

/// Every span exported so far, without waiting.
pub fn exported(rx: &mut Exports) -> Vec<Span> {
    let mut all = Vec::new();
    while let Ok(request) = rx.try_recv() {
        all.extend(spans(request).map(|(span, _)| span));
    }
    all
}

pub fn attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a Value> {
    attrs
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|AnyValue { value }| value.as_ref())
}

pub fn str_attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a str> {
    match attr(attrs, key) {
        Some(Value::StringValue(s)) => Some(s),
        _ => None,
    }
}

/// Panics unless `span` is the server span of a `tools/call` of `tool`, as
/// the MCP semantic conventions name it.
pub fn assert_tool_call_span(span: &Span, tool: &str) {
    assert_eq!(span.kind, SpanKind::Server as i32);
    assert_eq!(
        str_attr(&span.attributes, "mcp.method.name"),
        Some("tools/call")
    );
    assert_eq!(str_attr(&span.attributes, "gen_ai.tool.name"), Some(tool));
}

//! Traces reach an OTLP/HTTP receiver: a tiny in-process collector accepts
//! `POST /v1/traces`, decodes the protobuf with `opentelemetry-proto` and
//! hands each request to the test over a channel. One global install per
//! test binary, so this file holds a single test.

mod support;

use std::time::Duration;

use axum::{Router, body::Bytes, http::header::CONTENT_TYPE, routing::post};
use lro_core::event::{LroEvent, emit};
use lro_telemetry::Telemetry;
use opentelemetry_proto::tonic::{
    collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse},
    common::v1::{AnyValue, KeyValue, any_value::Value},
    trace::v1::{Span, span::SpanKind},
};
use prost::Message;
use tokio::sync::mpsc;

const PATIENCE: Duration = Duration::from_secs(20);

/// Starts the receiver on an ephemeral port; returns its base URL.
async fn receiver() -> (String, mpsc::UnboundedReceiver<ExportTraceServiceRequest>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let app = Router::new().route(
        "/v1/traces",
        post(move |body: Bytes| {
            let tx = tx.clone();
            async move {
                let request = ExportTraceServiceRequest::decode(body).expect("valid OTLP protobuf");
                let _ = tx.send(request);
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

fn string_attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a str> {
    attrs
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| match kv.value.as_ref() {
            Some(AnyValue {
                value: Some(Value::StringValue(s)),
            }) => Some(s.as_str()),
            _ => None,
        })
}

/// Waits for a span named `name`; returns it with its resource attributes.
async fn span_named(
    rx: &mut mpsc::UnboundedReceiver<ExportTraceServiceRequest>,
    name: &str,
) -> (Span, Vec<KeyValue>) {
    tokio::time::timeout(PATIENCE, async {
        loop {
            let request = rx.recv().await.expect("receiver stopped");
            for rs in request.resource_spans {
                let resource = rs.resource.map(|r| r.attributes).unwrap_or_default();
                for ss in rs.scope_spans {
                    if let Some(span) = ss.spans.into_iter().find(|s| s.name == name) {
                        return (span, resource);
                    }
                }
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("span {name:?} not exported within {PATIENCE:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_with_attributes_and_events_reach_the_collector() {
    let (endpoint, mut rx) = receiver().await;
    let telemetry = Telemetry::builder()
        .service_name("memory-server")
        .otlp_endpoint(Some(endpoint))
        .install()
        .unwrap();
    assert!(telemetry.otlp_enabled());

    {
        let span = tracing::info_span!(
            "tools/call recall_memories",
            otel.kind = "server",
            mcp.method.name = "tools/call",
            gen_ai.tool.name = "recall_memories",
            jsonrpc.request.id = "7",
        );
        let _entered = span.enter();
        emit(&(), LroEvent::Offloaded(support::sample_offloaded()));
    }

    // Flushing blocks until the receiver answers, and the receiver runs on
    // this runtime: flush from a blocking thread.
    let telemetry = tokio::task::spawn_blocking(move || {
        telemetry.force_flush().unwrap();
        telemetry
    })
    .await
    .unwrap();

    let (span, resource) = span_named(&mut rx, "tools/call recall_memories").await;
    assert_eq!(
        string_attr(&resource, "service.name"),
        Some("memory-server")
    );
    assert_eq!(span.kind, SpanKind::Server as i32);
    assert_eq!(
        string_attr(&span.attributes, "mcp.method.name"),
        Some("tools/call")
    );
    assert_eq!(
        string_attr(&span.attributes, "gen_ai.tool.name"),
        Some("recall_memories")
    );
    assert_eq!(
        string_attr(&span.attributes, "jsonrpc.request.id"),
        Some("7")
    );
    let event = span
        .events
        .iter()
        .find(|e| e.name == "result offloaded")
        .unwrap_or_else(|| panic!("no offload event on the span: {:?}", span.events));
    assert_eq!(string_attr(&event.attributes, "event"), Some("offloaded"));
    assert_eq!(
        string_attr(&event.attributes, "tool"),
        Some("recall_memories")
    );

    tokio::task::spawn_blocking(move || telemetry.shutdown())
        .await
        .unwrap()
        .unwrap();
}

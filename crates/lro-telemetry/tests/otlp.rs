//! Traces reach an OTLP/HTTP receiver: a tiny in-process collector
//! (`otlp_receiver`) accepts `POST /v1/traces`, decodes the protobuf with
//! `opentelemetry-proto` and hands each request to the test over a channel.
//! One global install per test binary, so this file holds a single test.

mod otlp_receiver;
mod support;

use lro_core::event::{LroEvent, emit};
use lro_telemetry::Telemetry;
use otlp_receiver::{assert_tool_call_span, receiver, span_named, str_attr};

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
    assert_eq!(str_attr(&resource, "service.name"), Some("memory-server"));
    assert_tool_call_span(&span, "recall_memories");
    assert_eq!(str_attr(&span.attributes, "jsonrpc.request.id"), Some("7"));
    let event = span
        .events
        .iter()
        .find(|e| e.name == "result offloaded")
        .unwrap_or_else(|| panic!("no offload event on the span: {:?}", span.events));
    assert_eq!(str_attr(&event.attributes, "event"), Some("offloaded"));
    assert_eq!(str_attr(&event.attributes, "tool"), Some("recall_memories"));

    tokio::task::spawn_blocking(move || telemetry.shutdown())
        .await
        .unwrap()
        .unwrap();
}

//! The layer's spans reach a real OTLP/HTTP receiver from the real binary:
//! OpenTelemetry MCP semantic-convention attributes, the offload decision,
//! and the offload events. A failed write that fell back to truncation is a
//! warning, not a span error.

#[path = "../../../crates/lro-telemetry/tests/otlp_receiver/mod.rs"]
mod otlp;

use std::path::Path;

use otlp::{
    PATIENCE, Span, StatusCode, Value, assert_tool_call_span, attr, exported, receiver, str_attr,
};
use rmcp::{
    ServiceExt,
    model::{CallToolRequestParams, ClientConfig},
    transport::TokioChildProcess,
};
use serde_json::{Value as Json, json};

/// Runs the server with one `list_memories` call, then closes stdin so it
/// exits and flushes its spans; returns the `tools/call list_memories` span.
async fn traced_call(output_dir: &Path) -> Span {
    let (span, is_error) = traced(output_dir, "list_memories", json!({"detail": "full"})).await;
    assert!(!is_error);
    span
}

/// Runs the server with one call of `tool`, then closes stdin so it exits
/// and flushes its spans; returns the call's `tools/call {tool}` span and
/// whether the result was a tool error.
async fn traced(output_dir: &Path, tool: &'static str, args: Json) -> (Span, bool) {
    let (endpoint, mut rx) = receiver().await;
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_memory-server"));
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
        .env("ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR", output_dir)
        .env("RUST_LOG", "info");
    let client = ClientConfig::default()
        .serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap();
    let result = client
        .call_tool(
            CallToolRequestParams::new(tool).with_arguments(args.as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    client.cancel().await.unwrap();
    let (span, _) = otlp::span_named(&mut rx, &format!("tools/call {tool}")).await;
    (span, result.is_error == Some(true))
}

#[tokio::test]
async fn an_offloaded_call_exports_a_semantic_convention_span_with_its_event() {
    let dir = tempfile::tempdir().unwrap();
    let span = traced_call(dir.path()).await;
    assert!(str_attr(&span.attributes, "error.type").is_none());
    assert_tool_call_span(&span, "list_memories");
    assert!(str_attr(&span.attributes, "jsonrpc.request.id").is_some());
    assert_eq!(
        str_attr(&span.attributes, "lro.decision"),
        Some("offloaded")
    );
    assert!(
        matches!(
            attr(&span.attributes, "lro.records"),
            Some(Value::IntValue(500))
        ),
        "{:?}",
        span.attributes
    );
    let event = span
        .events
        .iter()
        .find(|e| e.name == "result offloaded")
        .expect("offload event on the span");
    assert_eq!(str_attr(&event.attributes, "operation"), Some("list"));
    assert_ne!(span.status.map(|s| s.code), Some(StatusCode::Error as i32));
}

#[tokio::test]
async fn a_write_failure_is_a_warning_event_not_a_span_error() {
    let root = tempfile::tempdir().unwrap();
    let blocker = root.path().join("file");
    std::fs::write(&blocker, "x").unwrap();
    let span = traced_call(&blocker.join("out")).await;
    assert_eq!(
        str_attr(&span.attributes, "lro.decision"),
        Some("truncated")
    );
    let event = span
        .events
        .iter()
        .find(|e| e.name.contains("offload write failed"))
        .expect("write-failure event on the span");
    assert_eq!(str_attr(&event.attributes, "level"), Some("WARN"));
    assert_ne!(span.status.map(|s| s.code), Some(StatusCode::Error as i32));
    assert!(str_attr(&span.attributes, "error.type").is_none());
}

#[tokio::test]
async fn a_failed_extraction_exports_an_error_span() {
    let dir = tempfile::tempdir().unwrap();
    let (span, is_error) = traced(
        dir.path(),
        "lro_extract",
        json!({"file_path": "/etc/passwd", "recipe": 1}),
    )
    .await;
    assert!(is_error);
    assert_eq!(
        str_attr(&span.attributes, "gen_ai.tool.name"),
        Some("lro_extract")
    );
    assert_eq!(str_attr(&span.attributes, "error.type"), Some("tool_error"));
    assert_eq!(span.status.map(|s| s.code), Some(StatusCode::Error as i32));
}

/// A result's name is the capability to read it: at the default log level it
/// reaches neither the server's log nor its exported spans, only its digest.
#[tokio::test]
async fn no_result_name_reaches_the_log_or_the_exported_spans() {
    use tokio::io::AsyncReadExt;

    let dir = tempfile::tempdir().unwrap();
    let (endpoint, mut rx) = receiver().await;
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_memory-server"));
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
        .env("ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR", dir.path())
        .env_remove("RUST_LOG");
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = stderr.expect("stderr piped");
    let client = ClientConfig::default().serve(transport).await.unwrap();
    let call = |tool: &'static str, args: Json| {
        let params =
            CallToolRequestParams::new(tool).with_arguments(args.as_object().unwrap().clone());
        client.call_tool(params)
    };
    let offloaded = call("list_memories", json!({"detail": "full"}))
        .await
        .unwrap();
    // The descriptor is the text block: the tool declares no output schema.
    let text = &offloaded.content[0].as_text().unwrap().text;
    let path = serde_json::from_str::<Json>(text).unwrap()["file_path"]
        .as_str()
        .unwrap()
        .to_owned();
    let name = Path::new(&path)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let ulid = name
        .trim_end_matches(".jsonl")
        .rsplit('-')
        .next()
        .unwrap()
        .to_owned();
    let extracted = call(
        "lro_extract",
        json!({"file_path": path, "query": ".id", "limit": 2}),
    )
    .await
    .unwrap();
    assert_ne!(extracted.is_error, Some(true));
    client.cancel().await.unwrap();

    // The server exits on end of input, flushing its log and its spans.
    let mut log = String::new();
    tokio::time::timeout(PATIENCE, stderr.read_to_string(&mut log))
        .await
        .expect("the server exits")
        .unwrap();
    let exported = exported(&mut rx);
    for tool in ["list_memories", "lro_extract"] {
        let span = format!("tools/call {tool}");
        assert!(exported.iter().any(|s| s.name == span), "{span} exported");
    }
    // The facts are there, under the digest.
    let digest = lro_core::principal::short_digest(&name);
    assert!(log.contains("result offloaded"), "{log}");
    assert!(log.contains(&digest), "{log}");
    let spans = format!("{exported:?}");
    assert!(
        spans.contains(&digest),
        "the offload event carries the digest"
    );
    for secret in [&name, &ulid] {
        assert!(
            !log.contains(secret.as_str()),
            "{secret} in the log:\n{log}"
        );
        assert!(
            !spans.contains(secret.as_str()),
            "{secret} in exported spans"
        );
    }
}

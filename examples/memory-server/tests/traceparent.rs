//! A caller's W3C `traceparent` in a 2026-07-28 request's `_meta` joins its
//! trace, proven on the spans the real binary exports to a real OTLP/HTTP
//! receiver: from a caller the HTTP face authenticated (a bearer token) the
//! caller's span is the parent of the layer's `tools/call` span; from an
//! anonymous caller it is a span link, and the layer's span is in a trace
//! of the server's. Neither the token nor the offload file's path reaches
//! a span.
//!
//! The requests are raw sessionless 2026-07-28 POSTs: no HTTP client in the
//! example's dependencies, and the wire the `_meta` rides on is in plain
//! view.

#[path = "../../../crates/lro-telemetry/tests/otlp_receiver/mod.rs"]
mod otlp;
mod support;

use std::{path::Path, process::Stdio};

use otlp::{Exports, Span, receiver, span_named};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

const TOKEN: &str = "s3cret-bearer-token";
/// The caller's trace and span, as the W3C example writes them.
const TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN: &str = "b7ad6b7169203331";

/// A memory-server over streamable HTTP, exporting spans to a receiver.
struct Served {
    child: Child,
    authority: String,
    spans: Exports,
}

/// Starts the binary on an ephemeral port, with bearer tokens when
/// `token` is given (then every request must carry one), offloading
/// anything over 100 tokens into `out`.
async fn serve(out: &Path, token: Option<&str>) -> Served {
    serve_with(out, token, None).await
}

/// [`serve`] with `[prompt.offload] caller_trace` set through its
/// environment variable.
async fn serve_with(out: &Path, token: Option<&str>, caller_trace: Option<&str>) -> Served {
    let (endpoint, spans) = receiver().await;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memory-server"));
    cmd.args(["--http", "127.0.0.1:0", "--corpus-size", "40"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
        .env("ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR", out)
        .env("ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS", "100")
        .env("RUST_LOG", "info")
        .env_remove("LRO_BEARER_TOKENS")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(token) = token {
        cmd.env("LRO_BEARER_TOKENS", format!("{token}=alice"));
    }
    if let Some(setting) = caller_trace {
        cmd.env("ATLATL_PROMPT__OFFLOAD__CALLER_TRACE", setting);
    }
    let mut child = cmd.spawn().unwrap();
    let (authority, mut stderr) = support::listening(&mut child, otlp::PATIENCE).await;
    // Keep reading its log, so a full pipe never stalls it.
    tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });
    Served {
        child,
        authority,
        spans,
    }
}

impl Served {
    /// One sessionless 2026-07-28 `tools/call list_memories` carrying the
    /// caller's `traceparent`; the result.
    async fn call(&self, token: Option<&str>) -> Value {
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "trace-test", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {},
            "traceparent": format!("00-{TRACE_ID}-{CALLER_SPAN}-01"),
        });
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "list_memories", "arguments": {"detail": "full"}, "_meta": meta}})
        .to_string();
        let auth = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        // HTTP/1.0: the body ends with the connection, never chunked.
        let request = format!(
            "POST /mcp HTTP/1.0\r\nHost: {host}\r\n{auth}Content-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: tools/call\r\nMcp-Name: list_memories\r\nContent-Length: {len}\r\n\r\n{body}",
            host = self.authority,
            len = body.len()
        );
        let response = support::exchange(&self.authority, &request, otlp::PATIENCE).await;
        assert!(
            response.starts_with("HTTP/1.0 200") || response.starts_with("HTTP/1.1 200"),
            "{response}"
        );
        let message = response
            .lines()
            .find_map(|l| l.strip_prefix("data:").filter(|d| d.contains("\"result\"")))
            .unwrap_or_else(|| panic!("no result in {response}"));
        serde_json::from_str::<Value>(message.trim()).unwrap()["result"].clone()
    }

    /// Stops the server (SIGTERM: it flushes its spans on the way out) and
    /// returns the layer's span of the call, with every span exported.
    async fn stop(mut self) -> (Span, Vec<Span>) {
        let pid = self.child.id().expect("running").to_string();
        let killed = Command::new("kill").args(["-TERM", &pid]).status().await;
        assert!(killed.unwrap().success());
        let status = tokio::time::timeout(otlp::PATIENCE, self.child.wait())
            .await
            .expect("the server exits on SIGTERM")
            .unwrap();
        assert!(status.success(), "{status}");
        let (span, _) = span_named(&mut self.spans, "tools/call list_memories").await;
        let mut all = otlp::exported(&mut self.spans);
        all.push(span.clone());
        (span, all)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The offload file's path of an offloaded result.
fn file_path(result: &Value) -> String {
    let text = result["content"][0]["text"].as_str().unwrap();
    let descriptor: Value = serde_json::from_str(text).unwrap();
    assert_eq!(descriptor["offloaded"], true, "{descriptor}");
    descriptor["file_path"].as_str().unwrap().to_owned()
}

/// Neither a secret nor a result's path or name is in any exported span.
fn assert_nothing_secret(spans: &[Span], path: &str) {
    let text = format!("{spans:?}");
    let name = Path::new(path).file_name().unwrap().to_str().unwrap();
    for secret in [TOKEN, path, name] {
        assert!(!text.contains(secret), "{secret} in the exported spans");
    }
}

#[tokio::test]
async fn an_authenticated_callers_span_is_the_parent() {
    let out = tempfile::tempdir().unwrap();
    let served = serve(out.path(), Some(TOKEN)).await;
    caller_is_the_parent(served, Some(TOKEN)).await;
}

/// One call from `token`'s caller: its span is the parent of the server's.
async fn caller_is_the_parent(served: Served, token: Option<&str>) {
    let result = served.call(token).await;
    let path = file_path(&result);
    let (span, all) = served.stop().await;
    assert_eq!(hex(&span.trace_id), TRACE_ID, "the caller's trace");
    assert_eq!(hex(&span.parent_span_id), CALLER_SPAN, "the caller's span");
    assert!(span.links.is_empty(), "{:?}", span.links);
    assert_nothing_secret(&all, &path);
}

#[tokio::test]
async fn an_anonymous_callers_span_is_a_link() {
    let out = tempfile::tempdir().unwrap();
    let served = serve(out.path(), None).await;
    let result = served.call(None).await;
    let path = file_path(&result);
    let (span, all) = served.stop().await;
    assert_ne!(hex(&span.trace_id), TRACE_ID, "a trace of the server's");
    assert_ne!(hex(&span.parent_span_id), CALLER_SPAN);
    let links: Vec<(String, String)> = span
        .links
        .iter()
        .map(|l| (hex(&l.trace_id), hex(&l.span_id)))
        .collect();
    assert_eq!(links, [(TRACE_ID.to_owned(), CALLER_SPAN.to_owned())]);
    assert_nothing_secret(&all, &path);
}

#[tokio::test]
async fn an_operator_can_trust_anonymous_callers_by_configuration() {
    let out = tempfile::tempdir().unwrap();
    let served = serve_with(out.path(), None, Some("parent")).await;
    caller_is_the_parent(served, None).await;
}

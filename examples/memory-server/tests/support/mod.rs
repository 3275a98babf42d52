//! Shared helpers: a real rmcp client connected to a handler in-process
//! over `tokio::io::duplex`, and accessors for tool results.

#![allow(dead_code, unreachable_pub)] // each test binary uses a different subset

use rmcp::{
    RoleClient, ServerHandler, ServiceExt,
    model::{CallToolRequestParams, CallToolResult, ClientConfig},
    service::RunningService,
};
use serde_json::Value;

/// A connected client; dropping it ends the session.
pub type Client = RunningService<RoleClient, ClientConfig>;

/// Serves `handler` on one end of an in-memory pipe and connects a client to
/// the other, through the full MCP initialize handshake.
pub async fn connect<H: ServerHandler>(handler: H) -> Client {
    // Large buffer: a full listing is a few hundred KB, and both ends run
    // concurrently anyway, so this only saves wake-ups.
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = handler.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    ClientConfig::default()
        .serve(client_io)
        .await
        .expect("client initializes")
}

/// The built memory-server as a stdio transport: 40 memories, `args`, its
/// offloads in `out_dir`, its stderr dropped.
pub fn stdio_binary(
    args: &[&str],
    out_dir: &std::path::Path,
) -> rmcp::transport::TokioChildProcess {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_memory-server"));
    cmd.args(["--corpus-size", "40"])
        .args(args)
        .env("ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR", out_dir)
        .env("RUST_LOG", "warn");
    let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("memory-server starts");
    transport
}

/// Calls `tool` with `args` (a JSON object) and returns the result.
pub async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("tool arguments must be an object");
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("{tool} failed: {e}"))
}

/// The single text block of a result.
pub fn text(result: &CallToolResult) -> &str {
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect();
    assert_eq!(texts.len(), 1, "expected one text block: {result:?}");
    texts[0]
}

/// The single text block of a result, parsed as JSON.
pub fn json(result: &CallToolResult) -> Value {
    assert_ne!(result.is_error, Some(true), "tool error: {result:?}");
    serde_json::from_str(text(result)).expect("text block is JSON")
}

/// Calls `tool` and parses its JSON text.
pub async fn call_json(client: &Client, tool: &str, args: Value) -> Value {
    json(&call(client, tool, args).await)
}

/// The sorted field names of a JSON object.
pub fn keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value
        .as_object()
        .expect("an object")
        .keys()
        .cloned()
        .collect();
    keys.sort();
    keys
}

/// Waits for the binary's readiness line on its stderr, `memory-server
/// listening on http://HOST:PORT/mcp`; returns `HOST:PORT` and the rest of
/// its stderr.
pub async fn listening(
    child: &mut tokio::process::Child,
    patience: std::time::Duration,
) -> (
    String,
    tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStderr>>,
) {
    use tokio::io::AsyncBufReadExt as _;

    let stderr = child.stderr.take().expect("stderr piped");
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    let url = tokio::time::timeout(patience, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(url) = line.strip_prefix("memory-server listening on ") {
                return url.to_owned();
            }
        }
        panic!("exited before listening");
    })
    .await
    .expect("readiness line");
    let authority = url
        .strip_prefix("http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .unwrap_or_else(|| panic!("unexpected url {url}"))
        .to_owned();
    (authority, lines)
}

/// Writes the raw HTTP `request` to `authority` and reads the response to
/// the end (the request asks for the connection to close): enough to speak
/// to the HTTP face without an HTTP client in the example's dependencies.
pub async fn exchange(authority: &str, request: &str, patience: std::time::Duration) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    tokio::time::timeout(patience, async {
        let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        response
    })
    .await
    .expect("response")
}

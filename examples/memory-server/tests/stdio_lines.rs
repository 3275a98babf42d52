//! The built binary's stdio face answers every line, even one it cannot
//! serve: a line that is not JSON gets a parse error (-32700, `id` null), a
//! line over the cap an error that names the cap, with the request's `id`,
//! and the session serves the next request. rmcp's own stdio transport
//! answered neither, and the client waited for ever. Both MCP lifecycles
//! are spoken, as raw lines: `initialize` (2025-11-25) and requests that
//! carry their own protocol version (2026-07-28, `server/discover`). In
//! both, the capabilities it declares are exactly those it serves.

use std::{process::Stdio, time::Duration};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines},
    process::{Child, ChildStdin, ChildStdout, Command},
};

/// Upper bound on any single wait, so a silent server fails instead of hanging.
const PATIENCE: Duration = Duration::from_secs(60);

/// The padding of the over-long line: 20 MB, over the cap (checked when
/// compiling, should the cap grow).
const HUGE_PAD: usize = 20_000_000;
const _: () = assert!(HUGE_PAD > lro_stdio::MAX_LINE_BYTES);

/// The memory-server, spoken to in raw lines.
struct Raw {
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    _child: Child,
    _dir: tempfile::TempDir,
}

impl Raw {
    fn spawn() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_memory-server"))
            .args(["--corpus-size", "20"])
            .env("ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR", dir.path())
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        Self {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()).lines(),
            _child: child,
            _dir: dir,
        }
    }

    async fn send(&mut self, line: &[u8]) {
        self.stdin.write_all(line).await.unwrap();
        self.stdin.write_all(b"\n").await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    async fn send_json(&mut self, message: Value) {
        self.send(&serde_json::to_vec(&message).unwrap()).await;
    }

    /// The next answer (a message with an `id`), skipping notifications.
    async fn answer(&mut self) -> Value {
        tokio::time::timeout(PATIENCE, async {
            loop {
                let line = self.stdout.next_line().await.unwrap();
                let message: Value = serde_json::from_str(&line.expect("an answer")).unwrap();
                if message.get("id").is_some() {
                    return message;
                }
            }
        })
        .await
        .expect("the server answers")
    }

    /// Sends a line that is not JSON and checks its parse error.
    /// A 2025-11-25 `initialize` and `notifications/initialized`; the
    /// `initialize` answer.
    async fn initialize(&mut self) -> Value {
        self.send_json(json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        }))
        .await;
        let init = self.answer().await;
        self.send_json(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        init
    }

    async fn garbage_gets_a_parse_error(&mut self) {
        self.send(b"this is not json {").await;
        let garbage = self.answer().await;
        assert_eq!(garbage["error"]["code"], -32700, "{garbage}");
        assert_eq!(garbage["id"], Value::Null, "{garbage}");
    }

    /// Sends a 20 MB `tools/call` with `id` "huge" and checks its error.
    async fn a_huge_line_gets_an_error_naming_the_cap(&mut self, meta: Value) {
        self.send_json(json!({
            "jsonrpc": "2.0", "id": "huge", "method": "tools/call",
            "params": {"name": "list_memories", "arguments": {"pad": "x".repeat(HUGE_PAD)}, "_meta": meta},
        }))
        .await;
        let too_long = self.answer().await;
        assert_eq!(too_long["id"], "huge", "{too_long}");
        assert_eq!(too_long["error"]["code"], -32600, "{too_long}");
        let message = too_long["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&lro_stdio::MAX_LINE_BYTES.to_string()),
            "names the cap: {message}"
        );
    }

    /// Lists the tools with `id` and checks the server's own are there.
    async fn tools_are_listed(&mut self, id: u64, meta: Value) {
        self.send_json(json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"_meta": meta},
        }))
        .await;
        let tools = self.answer().await;
        assert_eq!(tools["id"], id, "{tools}");
        let names: Vec<&str> = tools["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("a tool list: {tools}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"list_memories"), "{names:?}");
    }
}

#[tokio::test]
async fn with_initialize_bad_lines_get_errors_and_the_session_goes_on() {
    let mut server = Raw::spawn();
    let init = server.initialize().await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    server.garbage_gets_a_parse_error().await;
    server.tools_are_listed(2, json!({})).await;
    server
        .a_huge_line_gets_an_error_naming_the_cap(json!({}))
        .await;
    server.tools_are_listed(3, json!({})).await;
}

#[tokio::test]
async fn without_a_session_bad_lines_get_errors_and_requests_are_served() {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let mut server = Raw::spawn();
    // Before any lifecycle is chosen, then between requests.
    server.garbage_gets_a_parse_error().await;
    server
        .send_json(json!({
            "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta},
        }))
        .await;
    let discover = server.answer().await;
    let versions = discover["result"]["supportedVersions"]
        .as_array()
        .unwrap_or_else(|| panic!("a discover result: {discover}"));
    assert!(versions.contains(&json!("2026-07-28")), "{discover}");
    server.garbage_gets_a_parse_error().await;
    server.tools_are_listed(2, meta.clone()).await;
    server
        .a_huge_line_gets_an_error_naming_the_cap(meta.clone())
        .await;
    server.tools_are_listed(3, meta).await;
}

/// Each list-like method and the capability that declares it.
const DECLARED_BY: [(&str, &str); 5] = [
    ("prompts/list", "prompts"),
    ("resources/list", "resources"),
    ("resources/templates/list", "resources"),
    ("completion/complete", "completions"),
    ("logging/setLevel", "logging"),
];

/// Sends each of [`DECLARED_BY`]'s methods and checks it is served exactly
/// when `capabilities` declares it (-32601 otherwise): a client reads the
/// capabilities to know what it may ask.
async fn serves_what_it_declares(server: &mut Raw, capabilities: &Value, meta: &Value) {
    assert!(capabilities.get("tools").is_some(), "{capabilities}");
    for (id, (method, capability)) in (10..).zip(DECLARED_BY) {
        let params = json!({
            "_meta": meta, "level": "info",
            "ref": {"type": "ref/prompt", "name": "none"},
            "argument": {"name": "a", "value": ""},
        });
        server
            .send_json(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let answer = server.answer().await;
        if capabilities.get(capability).is_some() {
            assert!(answer.get("result").is_some(), "{method}: {answer}");
        } else {
            assert_eq!(answer["error"]["code"], -32601, "{method}: {answer}");
        }
    }
}

#[tokio::test]
async fn each_lifecycle_declares_every_capability_it_serves() {
    let mut server = Raw::spawn();
    let init = server.initialize().await;
    serves_what_it_declares(&mut server, &init["result"]["capabilities"], &json!({})).await;

    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let mut server = Raw::spawn();
    server
        .send_json(json!({
            "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta},
        }))
        .await;
    let discover = server.answer().await;
    serves_what_it_declares(&mut server, &discover["result"]["capabilities"], &meta).await;
}

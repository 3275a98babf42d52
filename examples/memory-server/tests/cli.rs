//! The built `memory-server` binary: configuration errors, stdio and HTTP.

use std::{process::Stdio, time::Duration};

use rmcp::{
    ServiceExt,
    model::{CallToolRequestParams, ClientConfig},
    transport::TokioChildProcess,
};
use serde_json::{Value, json};
use tokio::process::Command;

mod support;

const BIN: &str = env!("CARGO_BIN_EXE_memory-server");

/// Upper bound on any single wait, so a broken binary fails instead of hanging.
const PATIENCE: Duration = Duration::from_secs(60);

/// A command for the binary with no `ATLATL_*` variables leaking in from the
/// environment the tests run in.
fn command() -> Command {
    let mut cmd = Command::new(BIN);
    for (key, _) in std::env::vars() {
        if key.starts_with("ATLATL_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("RUST_LOG", "warn").kill_on_drop(true);
    cmd
}

/// Runs the binary to completion with stdin closed; returns (success, stderr).
async fn run_to_exit(mut cmd: Command) -> (bool, String) {
    let out = tokio::time::timeout(PATIENCE, cmd.stdin(Stdio::null()).output())
        .await
        .expect("exits")
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn a_bad_environment_value_exits_non_zero_naming_the_key() {
    let mut cmd = command();
    cmd.env("ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS", "lots");
    let (ok, stderr) = run_to_exit(cmd).await;
    assert!(!ok);
    // figment names environment keys in upper case; accept either spelling.
    assert!(
        stderr.to_lowercase().contains("threshold_tokens"),
        "{stderr}"
    );
    assert!(stderr.contains("lots"), "{stderr}");
}

#[tokio::test]
async fn a_bad_file_value_exits_non_zero_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lro.toml");
    std::fs::write(&file, "[prompt.offload]\nttl_seconds = \"soon\"\n").unwrap();
    let mut cmd = command();
    cmd.arg("--config").arg(&file);
    let (ok, stderr) = run_to_exit(cmd).await;
    assert!(!ok);
    assert!(stderr.contains("ttl_seconds"), "{stderr}");

    std::fs::write(&file, "[prompt.offload]\nthreshold_tokens = 0\n").unwrap();
    let mut cmd = command();
    cmd.arg("--config").arg(&file);
    let (ok, stderr) = run_to_exit(cmd).await;
    assert!(!ok);
    assert!(
        stderr.contains("prompt.offload.threshold_tokens"),
        "{stderr}"
    );

    let mut cmd = command();
    cmd.arg("--config").arg(dir.path().join("missing.toml"));
    let (ok, stderr) = run_to_exit(cmd).await;
    assert!(!ok);
    assert!(stderr.contains("missing.toml"), "{stderr}");
}

#[tokio::test]
async fn serves_stdio_with_offloading_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = command();
    cmd.env("ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR", dir.path());
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = ClientConfig::default().serve(transport).await.unwrap();
    let result = client
        .call_tool(CallToolRequestParams::new("list_memories"))
        .await
        .unwrap();
    let descriptor = support::json(&result);
    assert_eq!(descriptor["offloaded"], true);
    assert_eq!(descriptor["summary"]["count"], 500);
    let path = descriptor["file_path"].as_str().unwrap();
    assert!(std::path::Path::new(path).starts_with(dir.path()), "{path}");
    assert_eq!(std::fs::read_to_string(path).unwrap().lines().count(), 501);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn no_lro_serves_everything_inline() {
    let mut cmd = command();
    cmd.args(["--no-lro", "--corpus-size", "300", "--seed", "9"]);
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = ClientConfig::default().serve(transport).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 4, "no lro_extract without the layer");
    let result = client
        .call_tool(CallToolRequestParams::new("list_memories"))
        .await
        .unwrap();
    let listing = support::json(&result);
    assert_eq!(listing["total"], 300);
    assert_eq!(listing["memories"].as_array().unwrap().len(), 300);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn serves_streamable_http_and_reports_the_bound_address() {
    let mut child = command()
        .args(["--http", "127.0.0.1:0", "--corpus-size", "20"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (authority, _stderr) = support::listening(&mut child, PATIENCE).await;
    let authority = authority.as_str();
    assert!(!authority.ends_with(":0"), "{authority}");

    // A raw initialize POST: enough to prove the endpoint is wired, without
    // pulling an HTTP client into the example's dependencies.
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "cli-test", "version": "0"}}
    })
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let response = support::exchange(authority, &request, PATIENCE).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let data = response
        .lines()
        .find_map(|l| l.strip_prefix("data:").filter(|d| d.contains("serverInfo")))
        .unwrap_or_else(|| panic!("no initialize result in {response}"));
    let message: Value = serde_json::from_str(data.trim()).unwrap();
    assert_eq!(message["result"]["serverInfo"]["name"], "memory-server");

    terminate(&mut child).await;
}

/// Stops the child gracefully (SIGTERM on Unix) and checks it exits cleanly.
async fn terminate(child: &mut tokio::process::Child) {
    #[cfg(unix)]
    {
        let pid = child.id().expect("running").to_string();
        let status = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .await
            .unwrap();
        assert!(status.success());
        let exit = tokio::time::timeout(PATIENCE, child.wait())
            .await
            .expect("exits after SIGTERM")
            .unwrap();
        assert!(exit.success(), "{exit}");
    }
    #[cfg(not(unix))]
    {
        child.kill().await.unwrap();
    }
}

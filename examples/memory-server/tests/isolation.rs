//! No filter can take the server down: the built `memory-server`, under a
//! 4 GiB address-space limit (`prlimit --as`), gets two string-doubling jq
//! filters at once through `lro_extract` from the session that owns the
//! result. In-process, either would abort the whole server when its string
//! passed the limit; in their worker processes each gets a clear tool error,
//! and the server answers a normal extraction right after.

use std::{process::Stdio, time::Duration};

use rmcp::{
    ServiceExt,
    model::{CallToolRequestParams, CallToolResult, ClientConfig},
    transport::TokioChildProcess,
};
use serde_json::{Value, json};
use tokio::process::Command;

mod support;

const BIN: &str = env!("CARGO_BIN_EXE_memory-server");
/// The server's own address-space limit.
const SERVER_LIMIT: u64 = 4 << 30;
/// Upper bound on any single wait, so a broken server fails instead of hanging.
const PATIENCE: Duration = Duration::from_secs(60);
const DOUBLING: &str = r#"reduce range(40) as $i ("x"; . + .) | length"#;

fn args(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("arguments are an object"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hostile_filters_at_once_get_errors_and_the_server_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new("prlimit");
    cmd.arg(format!("--as={SERVER_LIMIT}")).arg("--").arg(BIN);
    for (key, _) in std::env::vars() {
        if key.starts_with("ATLATL_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR", dir.path())
        .env("RUST_LOG", "warn")
        .env_remove("RUST_BACKTRACE")
        .kill_on_drop(true);
    // The workers' "memory allocation … failed" lines go to the server's
    // stderr, as an operator would see them.
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .expect("prlimit (util-linux) and the memory-server start");
    let client = ClientConfig::default().serve(transport).await.unwrap();
    let call = |name: &'static str, arguments: Value| {
        let request = CallToolRequestParams::new(name).with_arguments(args(arguments));
        let client = &client;
        async move {
            tokio::time::timeout(PATIENCE, client.call_tool(request))
                .await
                .expect("answered in time")
                .expect("a tool result, not a protocol error")
        }
    };

    let listed = call("list_memories", json!({})).await;
    let descriptor = support::json(&listed);
    assert_eq!(descriptor["offloaded"], true);
    let path = descriptor["file_path"].as_str().unwrap().to_owned();
    let hostile = json!({"file_path": path, "query": DOUBLING});

    let (a, b) = tokio::join!(
        call("lro_extract", hostile.clone()),
        call("lro_extract", hostile)
    );
    for result in [&a, &b] {
        assert_eq!(result.is_error, Some(true), "{result:?}");
        let text = support::text(result);
        assert!(
            text.contains("the query needed more than 512 MiB and was stopped"),
            "{text}"
        );
        assert!(text.contains("narrow it"), "{text}");
    }

    // Still up, and a normal extraction right after succeeds.
    let counted: CallToolResult = call(
        "lro_extract",
        json!({"file_path": path, "query": "length", "slurp": true}),
    )
    .await;
    assert_ne!(counted.is_error, Some(true), "{counted:?}");
    assert_eq!(support::text(&counted).trim(), "500");
    let again = call("list_memories", json!({"limit": 3})).await;
    assert_ne!(again.is_error, Some(true));
    client.cancel().await.unwrap();
}

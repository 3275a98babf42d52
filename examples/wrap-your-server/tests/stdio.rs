//! The example as a user runs it: a real rmcp client spawns the binary over
//! stdio. A small result passes inline and unchanged; a large one comes back
//! as a descriptor of a JSONL file that holds every record. The README shows
//! `src/main.rs` whole, and a test here keeps the two the same.

use std::path::Path;

use rmcp::{
    RoleClient, ServiceExt,
    model::{CallToolRequestParams, ClientConfig},
    service::RunningService,
    transport::TokioChildProcess,
};
use serde_json::{Value, json};

type Client = RunningService<RoleClient, ClientConfig>;

async fn spawn(dir: &Path) -> Client {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_wrap-your-server"));
    cmd.env("ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR", dir)
        .env("RUST_LOG", "warn");
    ClientConfig::default()
        .serve(TokioChildProcess::new(cmd).expect("spawn wrap-your-server"))
        .await
        .expect("initialize over stdio")
}

/// Calls `rows`; returns its text block and how many content blocks it has.
async fn rows(client: &Client, count: usize) -> (String, usize) {
    let args = json!({ "count": count }).as_object().cloned().unwrap();
    let result = client
        .call_tool(CallToolRequestParams::new("rows").with_arguments(args))
        .await
        .expect("rows succeeds");
    let text = result.content[0]
        .as_text()
        .expect("a text block")
        .text
        .clone();
    (text, result.content.len())
}

fn files_in(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect()
}

#[tokio::test]
async fn a_small_result_passes_inline_and_a_large_one_is_offloaded() {
    let dir = tempfile::tempdir().unwrap();
    let client = spawn(dir.path()).await;

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"rows"), "{names:?}");
    assert!(names.contains(&lro_tower::EXTRACT_TOOL), "{names:?}");

    // Three records are far under the default threshold (1600 tokens).
    let (small, blocks) = rows(&client, 3).await;
    assert_eq!(blocks, 1);
    let inline: Value = serde_json::from_str(&small).expect("the tool's own JSON");
    assert_eq!(inline.as_array().unwrap().len(), 3);
    assert_eq!(inline[2]["title"], "row 2");
    assert!(files_in(dir.path()).is_empty(), "nothing written");

    // 500 records are ~6,500 tokens: a descriptor alone (no resource link:
    // a client could not follow it), and the file holds them all.
    let (large, blocks) = rows(&client, 500).await;
    assert_eq!(blocks, 1);
    let descriptor: Value = serde_json::from_str(&large).expect("a descriptor");
    assert_eq!(descriptor["offloaded"], true, "{descriptor}");
    assert_eq!(descriptor["summary"]["count"], 500);
    assert_eq!(descriptor["jq_recipes"].as_array().unwrap().len(), 10);
    let path = Path::new(descriptor["file_path"].as_str().unwrap());
    assert_eq!(files_in(dir.path()), vec![path.to_path_buf()]);
    // atlatl-{operation}-{ulid}.jsonl, the operation named after the tool.
    let name = path.file_name().unwrap().to_string_lossy();
    assert!(
        name.starts_with("atlatl-rows-") && name.ends_with(".jsonl"),
        "{name}"
    );
    let lines: Vec<Value> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON value a line"))
        .collect();
    let (header, records) = lines.split_first().expect("a header line");
    assert_eq!(
        (&header["type"], &header["count"]),
        (&json!("lro_header"), &json!(500))
    );
    assert_eq!(records.len(), 500);
    assert_eq!(records[499]["title"], "row 499");

    client.cancel().await.unwrap();
}

#[test]
fn the_readme_shows_main_rs_as_it_is() {
    let readme = include_str!("../../../README.md");
    let main_rs = include_str!("../src/main.rs");
    assert!(
        readme.contains(&format!("```rust\n{main_rs}```\n")),
        "README.md must show examples/wrap-your-server/src/main.rs verbatim, in a ```rust block"
    );
}

#[tokio::test]
async fn a_line_that_is_not_json_gets_a_parse_error_and_the_next_is_served() {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

    let dir = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_wrap-your-server"))
        .env("ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR", dir.path())
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    // rmcp's own stdio() dropped this line without a word.
    stdin
        .write_all(b"not json\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
        .await
        .unwrap();
    let mut answer = async || -> Value {
        let line = tokio::time::timeout(std::time::Duration::from_secs(60), stdout.next_line())
            .await
            .expect("the server answers")
            .unwrap()
            .expect("a line");
        serde_json::from_str(&line).unwrap()
    };
    let garbage = answer().await;
    assert_eq!(
        (&garbage["error"]["code"], &garbage["id"]),
        (&json!(-32700), &Value::Null)
    );
    let ping = answer().await;
    assert_eq!((&ping["id"], &ping["result"]), (&json!(1), &json!({})));
}

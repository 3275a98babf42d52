//! The seed's examples as contract tests, over real HTTP on 127.0.0.1, and
//! the guards: store roots, Host/Origin, the bearer token, bad input.

use std::{net::SocketAddr, path::Path};

use lro_context::{ContextOffloader, Roots};
use lro_context_http::{Service, serve};
use lro_http::{Guard, auth::Tokens, serve::Limits};
use serde_json::{Value, json};
use tokio::sync::oneshot;

struct Running {
    base: String,
    client: reqwest::Client,
    _stop: oneshot::Sender<()>,
}

async fn start(root: &Path, token: Option<&str>) -> Running {
    let roots = Roots::new([root]).unwrap();
    let service = Service::new(ContextOffloader::new().roots(roots));
    let mut tokens = Tokens::new();
    if let Some(t) = token {
        tokens.add(t, "agent", "test").unwrap();
    }
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let guard = Guard::new(addr, tokens).limits(Limits::context());
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let (ready_tx, ready_rx) = oneshot::channel::<SocketAddr>();
    tokio::spawn(async move {
        let shutdown = async move {
            let _ = stop_rx.await;
        };
        serve(addr, service, guard, shutdown, move |a| {
            let _ = ready_tx.send(a);
        })
        .await
        .unwrap();
    });
    let addr = ready_rx.await.unwrap();
    Running {
        base: format!("http://{addr}"),
        client: reqwest::Client::builder().no_proxy().build().unwrap(),
        _stop: stop_tx,
    }
}

impl Running {
    async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.post_with(path, body, &[]).await
    }

    async fn post_with(&self, path: &str, body: &Value, headers: &[(&str, &str)]) -> (u16, Value) {
        let mut req = self
            .client
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(body.to_string());
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }
}

/// The seed's auto-mode example: a flat-shaped tool call, an 8,000-token
/// result, `keep_recent_count` 0.
fn seed_example(store: &Path) -> Value {
    json!({
        "messages": [
            {"role": "system", "content": "You are a helpful assistant"},
            {"role": "user", "content": "Search for AI papers"},
            {"role": "assistant", "content": "I will search for papers",
             "tool_calls": [{"id": "call_123", "name": "web_search", "arguments": {"q": "AI papers"}}]},
            {"role": "tool", "tool_call_id": "call_123", "content": format!("Found 20 papers on context management... {}", "paper ".repeat(5_400))},
            {"role": "assistant", "content": "I will read one", "tool_calls": [{"id": "call_456", "type": "function",
             "function": {"name": "read_webpage", "arguments": "{\"url\":\"u\"}"}}]},
            {"role": "tool", "tool_call_id": "call_456", "content": format!("Full webpage content... {}", "text ".repeat(6_000))}
        ],
        "context_manage_mode": "auto",
        "max_total_tokens": 2000,
        "max_tool_message_tokens": 2000,
        "keep_recent_count": 0,
        "store_dir": store,
        "chat_id": "research_session_001"
    })
}

#[tokio::test]
async fn the_seed_examples_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let svc = start(dir.path(), None).await;
    let store = dir.path().join("context_store");
    let request = seed_example(&store);

    let (status, r) = svc.post("/context_offload", &request).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["success"], true);
    let answer = r["answer"].as_str().unwrap();
    assert_eq!(
        answer
            .matches("Successfully created and wrote to new file: ")
            .count(),
        2,
        "{answer}"
    );
    let messages = r["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 6);
    assert_eq!(messages[0], request["messages"][0]);
    for (i, first) in [(3, "Found 20 papers"), (5, "Full webpage content")] {
        let content = messages[i]["content"].as_str().unwrap();
        assert!(
            content.starts_with(first) && content.contains("(detailed result is stored in "),
            "{content}"
        );
    }
    let files = r["metadata"]["write_file_dict"].as_object().unwrap();
    assert_eq!(files.len(), 2);
    let stored = r["metadata"]["stored_files"].as_array().unwrap();
    assert!(
        stored.len() == 2
            && stored
                .iter()
                .all(|p| files.contains_key(p.as_str().unwrap())),
        "{stored:?}"
    );

    // Every file reads back byte-identical, and grep finds it.
    for (path, content) in files {
        assert_eq!(
            content,
            &request["messages"][if path.contains("call_123") { 3 } else { 5 }]["content"]
        );
        let (status, read) = svc
            .post("/read_file", &json!({"absolute_path": path}))
            .await;
        assert_eq!(status, 200);
        assert_eq!(&read["answer"], content);
        assert_eq!(
            (
                read["success"].clone(),
                read["messages"].clone(),
                read["metadata"].clone()
            ),
            (json!(true), json!([]), json!({}))
        );
    }
    let (status, g) = svc
        .post(
            "/grep",
            &json!({"pattern": "Found 20 papers", "path": store, "glob": "*.txt", "limit": 100}),
        )
        .await;
    assert_eq!(status, 200);
    let g = g["answer"].as_str().unwrap();
    assert!(g.starts_with(&format!("Found 1 matches for pattern \"Found 20 papers\" in path \"{}\" (filter: \"*.txt\"):\n---\nFile: tool_call_call_123_", store.display())), "{g}");

    // Paging: offset 0-based, limit lines.
    let path = files.keys().next().unwrap();
    let (_, page) = svc
        .post(
            "/read_file",
            &json!({"absolute_path": path, "offset": 0, "limit": 1}),
        )
        .await;
    assert!(!page["answer"].as_str().unwrap().is_empty());

    // The same history again: the same messages, no new file. Asked to,
    // the answer leaves the contents out and still names the files.
    let mut without = request.clone();
    without["include_file_contents"] = json!(false);
    let (_, again) = svc.post("/context_offload", &without).await;
    assert_eq!(again["messages"], r["messages"]);
    assert!(
        again["metadata"].get("write_file_dict").is_none(),
        "{again}"
    );
    assert_eq!(
        &again["metadata"]["stored_files"],
        &r["metadata"]["stored_files"]
    );
    assert!(
        !again["answer"]
            .as_str()
            .unwrap()
            .contains("Successfully created"),
        "{}",
        again["answer"]
    );
    assert_eq!(std::fs::read_dir(&store).unwrap().count(), 2);
}

#[tokio::test]
async fn bad_input_is_a_400_naming_the_field_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let svc = start(dir.path(), None).await;
    let store = dir.path().join("s");
    let mut no_store = seed_example(&store);
    no_store.as_object_mut().unwrap().remove("store_dir");
    let cases = [
        (no_store, "`store_dir`: is required"),
        (
            json!({"messages": [], "store_dir": store, "context_manage_mode": "shrink"}),
            "`context_manage_mode`",
        ),
        (
            json!({"messages": [{"role": "tool", "content": "x"}], "store_dir": store}),
            "`messages[0]`",
        ),
        (
            json!({"messages": [], "store_dir": "/etc"}),
            "`store_dir`: /etc is outside the store roots",
        ),
        (
            json!({"messages": "nope", "store_dir": store}),
            "`messages`",
        ),
        (
            json!({"messages": [], "store_dir": store, "max_total_tokens": "lots"}),
            "`max_total_tokens`: invalid type",
        ),
        (
            json!({"messages": [], "store_dir": store, "exclude_tools": ["web", 3]}),
            "`exclude_tools[1]`",
        ),
    ];
    for (body, why) in cases {
        let (status, r) = svc.post("/context_offload", &body).await;
        assert_eq!(status, 400, "{r}");
        assert_eq!(r["success"], false);
        assert!(
            r["answer"].as_str().unwrap().starts_with(why),
            "{} vs {why}",
            r["answer"]
        );
    }
    assert!(!store.exists(), "nothing was written");
    let (status, r) = svc
        .post("/read_file", &json!({"absolute_path": "/etc/passwd"}))
        .await;
    assert_eq!(status, 400);
    assert!(
        r["answer"]
            .as_str()
            .unwrap()
            .contains("outside the store roots")
    );
    let (status, _) = svc
        .post("/grep", &json!({"pattern": "root", "path": "/etc"}))
        .await;
    assert_eq!(status, 400);
    let (status, r) = svc
        .post(
            "/read_file",
            &json!({"absolute_path": dir.path().join("missing.txt")}),
        )
        .await;
    assert_eq!(status, 404, "{r}");
    let (status, r) = svc.post("/grep", &json!({"path": "."})).await;
    assert_eq!(
        (status, r["answer"].as_str().unwrap()),
        (400, "`pattern`: is required")
    );
    let resp = svc
        .client
        .post(format!("{}/grep", svc.base))
        .header("content-type", "application/json")
        .body("{")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    // Malformed JSON, and a route that does not exist, answer ReMe's JSON.
    let r: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
    assert_eq!(r["success"], false);
    assert!(r["answer"].as_str().unwrap().contains("not JSON"), "{r}");
    let (status, r) = svc.post("/nowhere", &json!({})).await;
    assert_eq!((status, &r["success"]), (404, &json!(false)), "{r}");
}

#[tokio::test]
async fn host_origin_and_token_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let svc = start(dir.path(), Some("s3cret")).await;
    let body = json!({"pattern": "x", "path": "."});
    let ok = [("authorization", "Bearer s3cret")];
    assert_eq!(svc.post_with("/grep", &body, &ok).await.0, 200);
    let (status, r) = svc.post("/grep", &body).await;
    assert_eq!((status, &r["success"]), (401, &json!(false)), "{r}");
    assert_eq!(
        svc.post_with("/grep", &body, &[("authorization", "Bearer s3cre")])
            .await
            .0,
        401
    );
    let evil_host = [
        ("authorization", "Bearer s3cret"),
        ("host", "evil.example:80"),
    ];
    assert_eq!(svc.post_with("/grep", &body, &evil_host).await.0, 403);
    let evil_origin = [
        ("authorization", "Bearer s3cret"),
        ("origin", "http://evil.example"),
    ];
    assert_eq!(svc.post_with("/grep", &body, &evil_origin).await.0, 403);
    let local_origin = [
        ("authorization", "Bearer s3cret"),
        ("origin", "http://localhost:3000"),
    ];
    assert_eq!(svc.post_with("/grep", &body, &local_origin).await.0, 200);
}

#[tokio::test]
async fn a_directory_and_a_fifo_get_a_clear_400_quickly() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("folder")).unwrap();
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        root.join("pipe"),
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    let s = start(&root, None).await;
    let started = std::time::Instant::now();
    for (name, says) in [("folder", "is a directory"), ("pipe", "not a regular file")] {
        let path = root.join(name).display().to_string();
        let (status, body) = s.post("/read_file", &json!({"absolute_path": path})).await;
        assert_eq!(status, 400, "{body}");
        assert!(body.to_string().contains(says), "{body}");
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

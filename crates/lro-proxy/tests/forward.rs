//! The proxy forwards a real rmcp client's session to a real upstream on
//! streamable HTTP (127.0.0.1), with `LroLayer` around it: answers, errors,
//! `_meta`, progress, sampling, cancellation and offloading, and a
//! reconnect after the upstream comes back.

mod support;

use std::{sync::Arc, time::Duration};

use lro_core::OffloadConfig;
use lro_proxy::Upstream;
use rmcp::model::*;
use rmcp::service::ClientLifecycleMode;
use serde_json::{Value, json};
use support::{
    Seen, TASK_ID, TASK_RECORDS, call, connect, connect_on, discover, http_upstream, json_upstream,
};

fn cfg(dir: &std::path::Path) -> OffloadConfig {
    OffloadConfig::default()
        .threshold_tokens(400)
        .output_dir(dir)
}

#[tokio::test]
async fn answers_errors_and_meta_cross_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = http_upstream("127.0.0.1:0".parse().unwrap(), Arc::default()).await;
    let (client, _shared, _) =
        connect(Upstream::http(&upstream.url).unwrap(), cfg(dir.path())).await;

    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "upstreamer");
    assert_eq!(
        info.instructions.as_deref(),
        Some("an upstream for the proxy tests")
    );

    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(
        names,
        [
            "echo",
            "big",
            "fail",
            "progress",
            "sample",
            "slow",
            "ticks",
            "task",
            "lro_extract"
        ]
    );

    // `_meta` reaches the upstream; the answer comes back as the upstream sent it.
    let mut params = call("echo", json!({"n": 3}));
    let mut meta = RequestMetaObject::default();
    meta.insert("trace".into(), json!("abc"));
    params.meta = Some(meta);
    let echoed = client.call_tool(params).await.unwrap();
    assert_eq!(
        echoed.structured_content.unwrap(),
        json!({"args": {"n": 3}, "meta_seen": "abc"})
    );

    // A JSON-RPC error arrives with the upstream's code, message and data.
    let err = client.call_tool(call("fail", json!({}))).await.unwrap_err();
    let rmcp::service::ServiceError::McpError(err) = err else {
        panic!("not a JSON-RPC error: {err}")
    };
    assert_eq!(err.code, ErrorCode(-32042));
    assert_eq!(err.message, "the upstream says no");
    assert_eq!(err.data, Some(json!({"why": "test"})));
}

#[tokio::test]
async fn the_upstream_sees_a_proxy_and_large_results_are_offloaded_here() {
    let dir = tempfile::tempdir().unwrap();
    let seen = Arc::new(Seen::default());
    let upstream = http_upstream("127.0.0.1:0".parse().unwrap(), seen.clone()).await;
    let (client, _shared, _) =
        connect(Upstream::http(&upstream.url).unwrap(), cfg(dir.path())).await;

    assert_eq!(
        *seen.proxy_flags.lock().unwrap(),
        [Some(json!({"proxy": true}))]
    );
    let small = client
        .call_tool(call("big", json!({"n": 2})))
        .await
        .unwrap();
    let text = &small.content[0].as_text().unwrap().text;
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!([support::record(0), support::record(1)])
    );

    let big = client
        .call_tool(call("big", json!({"n": 300})))
        .await
        .unwrap();
    let descriptor: Value = serde_json::from_str(&big.content[0].as_text().unwrap().text).unwrap();
    assert_eq!(descriptor["offloaded"], true);
    assert_eq!(descriptor["summary"]["count"], 300);
    let path = descriptor["file_path"].as_str().unwrap();
    assert!(path.starts_with(dir.path().to_str().unwrap()), "{path}");
    let lines = std::fs::read_to_string(path).unwrap();
    assert_eq!(lines.lines().count(), 301, "header + 300 records");
}

#[tokio::test]
async fn progress_comes_back_with_the_clients_token_and_sampling_reaches_the_client() {
    let dir = tempfile::tempdir().unwrap();
    let seen = Arc::new(Seen::default());
    let upstream = http_upstream("127.0.0.1:0".parse().unwrap(), seen.clone()).await;
    let (client, _shared, handler) =
        connect(Upstream::http(&upstream.url).unwrap(), cfg(dir.path())).await;

    let handle = client
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(call("progress", json!({"n": 3})))),
            rmcp::service::PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    let mine = handle.progress_token.clone();
    let done = handle.await_response().await.unwrap();
    assert!(matches!(done, ServerResult::CallToolResult(_)), "{done:?}");
    let progress = handler.received.progress.lock().unwrap().clone();
    assert_eq!(progress.len(), 3, "{progress:?}");
    assert!(
        progress.iter().all(|p| p.progress_token == mine),
        "{progress:?}"
    );
    assert_eq!(progress[2].progress, 3.0);
    // The upstream got a token of the proxy's own, mapped back on the way.
    assert!(seen.progress_tokens.lock().unwrap()[0].is_some());

    let sampled = client.call_tool(call("sample", json!({}))).await.unwrap();
    assert!(
        sampled.content[0]
            .as_text()
            .unwrap()
            .text
            .contains("hi from the client"),
        "{sampled:?}"
    );
    assert_eq!(*handler.received.sampled.lock().unwrap(), 1);
}

#[tokio::test]
async fn a_cancelled_call_is_cancelled_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let seen = Arc::new(Seen::default());
    let upstream = http_upstream("127.0.0.1:0".parse().unwrap(), seen.clone()).await;
    let (client, _shared, _) =
        connect(Upstream::http(&upstream.url).unwrap(), cfg(dir.path())).await;

    let handle = client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(call("slow", json!({})))),
            Default::default(),
        )
        .await
        .unwrap();
    // The echo answers while `slow` is pending: one slow call blocks nothing.
    client.call_tool(call("echo", json!({}))).await.unwrap();
    handle.cancel(Some("changed my mind".into())).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), seen.cancelled.notified())
        .await
        .expect("the upstream saw the cancellation");
}

#[tokio::test]
async fn a_lost_http_upstream_fails_pending_calls_and_reconnects_on_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let seen = Arc::new(Seen::default());
    let upstream = http_upstream("127.0.0.1:0".parse().unwrap(), seen.clone()).await;
    let addr = upstream.addr;
    let (client, shared, _) =
        connect(Upstream::http(&upstream.url).unwrap(), cfg(dir.path())).await;
    client.call_tool(call("echo", json!({}))).await.unwrap();

    drop(upstream);
    let err = client.call_tool(call("echo", json!({}))).await.unwrap_err();
    assert!(err.to_string().contains("upstream"), "{err}");
    // Not final, unlike a child's exit: nothing tells `lro proxy` to stop
    // (a loss would have been reported before the error came back).
    assert_eq!(futures::FutureExt::now_or_never(shared.lost()), None);

    // Back on the same port: the next call opens a new upstream session.
    let _again = http_upstream(addr, seen.clone()).await;
    let echoed = client
        .call_tool(call("echo", json!({"n": 1})))
        .await
        .unwrap();
    assert_eq!(echoed.structured_content.unwrap()["args"], json!({"n": 1}));
    assert_eq!(
        seen.proxy_flags.lock().unwrap().len(),
        2,
        "a second initialize"
    );
}

/// The size of the file the proxy offloaded the upstream's `big` tool's
/// `n` records to, each of them counted in the descriptor.
async fn offloaded_bytes(client: &rmcp::Peer<rmcp::RoleClient>, n: u64) -> u64 {
    let big = client
        .call_tool(call("big", json!({"n": n})))
        .await
        .unwrap();
    let descriptor: Value = serde_json::from_str(&big.content[0].as_text().unwrap().text).unwrap();
    assert_eq!(descriptor["summary"]["count"], n);
    std::fs::metadata(descriptor["file_path"].as_str().unwrap())
        .unwrap()
        .len()
}

#[tokio::test]
async fn a_64_mib_result_passes_through_and_is_offloaded() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = http_upstream("127.0.0.1:0".parse().unwrap(), Arc::default()).await;
    let (client, _shared, _) =
        connect(Upstream::http(&upstream.url).unwrap(), cfg(dir.path())).await;
    // ~100 bytes a record: 700,000 records is over 64 MiB of JSON text,
    // four times rmcp's default cap for one SSE event.
    let bytes = offloaded_bytes(&client, 700_000).await;
    assert!(bytes > 64 << 20, "{bytes} bytes");
}

#[tokio::test]
async fn a_result_over_16_mib_in_one_json_reply_passes_through_and_is_offloaded() {
    let dir = tempfile::tempdir().unwrap();
    let seen = Arc::new(Seen::default());
    let upstream = json_upstream(seen.clone()).await;
    let (client, _shared, _) =
        connect(Upstream::http(&upstream.url).unwrap(), cfg(dir.path())).await;
    // ~100 bytes a record: 200,000 records is about 20 MiB, over rmcp's
    // default cap for a JSON reply (16 MiB).
    let bytes = offloaded_bytes(&client, 200_000).await;
    assert!(bytes > 16 << 20, "{bytes} bytes");
    let replies = seen.replies.lock().unwrap().clone();
    assert_eq!(
        replies.last().map(String::as_str),
        Some("application/json"),
        "the result came as one JSON body: {replies:?}"
    );
}

/// A task result crosses unchanged, and the completed result its
/// `tasks/get` fetches is offloaded like a call's (the file named for the
/// tool that started the task), on both wires.
#[tokio::test]
async fn a_task_passes_through_and_its_completed_result_is_offloaded() {
    for lifecycle in [ClientLifecycleMode::Initialize, discover()] {
        let dir = tempfile::tempdir().unwrap();
        let upstream = http_upstream("127.0.0.1:0".parse().unwrap(), Arc::default()).await;
        let proxy = lro_proxy::ProxyConfig::new(Upstream::http(&upstream.url).unwrap());
        let (client, _shared, _) = connect_on(proxy, cfg(dir.path()), lifecycle.clone()).await;
        let info = client.peer_info().expect("the proxy described itself");
        assert!(
            info.capabilities.supports_tasks(),
            "{lifecycle:?}: the upstream's tasks extension is declared: {:?}",
            info.capabilities
        );

        let started = client
            .call_tool_once(call("task", json!({})))
            .await
            .unwrap();
        let CallToolResponse::Task(created) = started else {
            panic!("{lifecycle:?}: expected a task, got {started:?}")
        };
        assert_eq!(created.task.task_id, TASK_ID);
        assert_eq!(created.task.status, TaskStatus::Working);

        let got = client
            .get_task(GetTaskParams::new(TASK_ID.to_owned()))
            .await
            .unwrap();
        assert_eq!(got.task.task.status, TaskStatus::Completed);
        let TaskPayload::Completed { result } = got.task.payload else {
            panic!("{lifecycle:?}: expected a completed task")
        };
        let result: CallToolResult = serde_json::from_value(Value::Object(result)).unwrap();
        let text = &result.content[0].as_text().expect("a text block").text;
        let descriptor: Value = serde_json::from_str(text).unwrap();
        assert_eq!(descriptor["offloaded"], true, "{lifecycle:?}: {text}");
        let path = descriptor["file_path"].as_str().unwrap();
        assert!(path.contains("atlatl-task-"), "{path}");
        assert_eq!(std::path::Path::new(path).parent(), Some(dir.path()));
        let lines = std::fs::read_to_string(path).unwrap().lines().count() as u64;
        assert_eq!(lines, 1 + TASK_RECORDS, "a header and every record");
        client.cancel().await.unwrap();
    }
}

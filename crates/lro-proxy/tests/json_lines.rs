//! An HTTP upstream that answers as the MCP conformance suite's reference
//! server does: several messages as JSON lines under `application/json`, a
//! tool's progress before its answer, and a `subscriptions/listen` stream
//! that stays open, its subscription id written as a string. The proxy
//! reads them all, on both wires.

mod support;

use axum::{Json, http::StatusCode, response::IntoResponse};
use futures::StreamExt as _;
use lro_core::OffloadConfig;
use lro_proxy::{ProxyConfig, Upstream};
use rmcp::{model::*, service::ClientLifecycleMode};
use serde_json::{Value, json};
use support::{call, connect_on, discover, record, serve_router};
use tokio_util::sync::CancellationToken;

const RECORDS: u64 = 60;
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// One reply of the upstream to `request`; a `modern` one speaks
/// 2026-07-28, the other refuses `server/discover`.
async fn answer(modern: bool, request: Value) -> axum::response::Response {
    let id = request["id"].clone();
    let reply = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
    let lines = match request["method"].as_str().unwrap_or_default() {
        "server/discover" if modern => vec![reply(json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {"listChanged": true}},
            "ttlMs": 0,
            "cacheScope": "private",
        }))],
        "subscriptions/listen" => {
            // The id as a string, a change at once, and the stream open.
            let meta = json!({SUBSCRIPTION_ID: id.to_string()});
            let lines = [
                json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                    "params": {"_meta": meta, "notifications": {"toolsListChanged": true}}}),
                json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                    "params": {"_meta": meta}}),
            ]
            .map(|line| Ok::<_, std::io::Error>(format!("{line}\n")));
            let body = futures::stream::iter(lines).chain(futures::stream::pending());
            return (
                [(http::header::CONTENT_TYPE, "application/json")],
                axum::body::Body::from_stream(body),
            )
                .into_response();
        }
        // A legacy server: the proxy falls back to `initialize`.
        "server/discover" => {
            let error = json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "Method not found"}});
            return (StatusCode::BAD_REQUEST, Json(error)).into_response();
        }
        "initialize" => vec![reply(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "json-lines", "version": "1"},
        }))],
        "tools/list" => vec![reply(json!({"tools": [
            {"name": "count", "inputSchema": {"type": "object"}},
        ]}))],
        "tools/call" => {
            let token = request["params"]["_meta"]["progressToken"].clone();
            let records: Vec<Value> = (0..RECORDS).map(record).collect();
            vec![
                json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": 1, "total": 1}}),
                reply(json!({"content": [
                    {"type": "text", "text": serde_json::to_string(&records).unwrap()},
                ]})),
            ]
        }
        // Notifications.
        _ => return StatusCode::ACCEPTED.into_response(),
    };
    let body: String = lines.iter().map(|line| format!("{line}\n")).collect();
    ([(http::header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// The upstream, at `/legacy` and `/modern`; returns its address.
async fn json_lines_upstream(stop: &CancellationToken) -> String {
    let router = axum::Router::new()
        .route(
            "/legacy",
            axum::routing::post(|Json(request): Json<Value>| answer(false, request)),
        )
        .route(
            "/modern",
            axum::routing::post(|Json(request): Json<Value>| answer(true, request)),
        );
    let addr = serve_router("127.0.0.1:0".parse().unwrap(), router, stop).await;
    format!("http://{addr}")
}

#[tokio::test]
async fn json_lines_under_application_json_are_read_as_messages() {
    let stop = CancellationToken::new();
    let url = format!("{}/legacy", json_lines_upstream(&stop).await);
    for lifecycle in [ClientLifecycleMode::Initialize, discover()] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = OffloadConfig::default()
            .threshold_tokens(400)
            .output_dir(dir.path());
        let proxy = ProxyConfig::new(Upstream::http(&url).unwrap());
        let (client, _shared, seen) = connect_on(proxy, cfg, lifecycle.clone()).await;

        let handle = client
            .send_request_with_option(
                ClientRequest::CallToolRequest(CallToolRequest::new(call("count", json!({})))),
                rmcp::service::PeerRequestOptions::no_options(),
            )
            .await
            .unwrap();
        let mine = handle.progress_token.clone();
        let answer = handle
            .await_response()
            .await
            .unwrap_or_else(|err| panic!("{lifecycle:?}: {err}"));
        let ServerResult::CallToolResult(result) = answer else {
            panic!("{lifecycle:?}: {answer:?}")
        };
        let text = &result.content[0].as_text().expect("a text block").text;
        let descriptor: Value = serde_json::from_str(text).unwrap();
        assert_eq!(descriptor["offloaded"], true, "{lifecycle:?}: {text}");
        assert_eq!(descriptor["summary"]["count"], RECORDS);
        let progress = seen.received.progress.lock().unwrap().clone();
        assert_eq!(
            progress.len(),
            1,
            "{lifecycle:?}: the line before the answer"
        );
        assert_eq!(progress[0].progress_token, mine);
        client.cancel().await.unwrap();
    }
    stop.cancel();
}

#[tokio::test]
async fn a_listen_streamed_as_json_lines_reaches_the_client() {
    let stop = CancellationToken::new();
    let url = format!("{}/modern", json_lines_upstream(&stop).await);
    let dir = tempfile::tempdir().unwrap();
    let cfg = OffloadConfig::default().output_dir(dir.path());
    let proxy = ProxyConfig::new(Upstream::http(&url).unwrap());
    let (client, _shared, _) = connect_on(proxy, cfg, discover()).await;

    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    let mut listen = client.listen(filter).await.unwrap();
    let next = tokio::time::timeout(std::time::Duration::from_secs(30), listen.next())
        .await
        .expect("the upstream's change arrives");
    assert!(
        matches!(
            next,
            Ok(Some(ServerNotification::ToolListChangedNotification(_)))
        ),
        "{next:?}"
    );
    drop(listen);
    client.cancel().await.unwrap();
    stop.cancel();
}

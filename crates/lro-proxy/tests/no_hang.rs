//! No call through the proxy waits for ever. A fake streamable-HTTP upstream
//! (axum on 127.0.0.1) answers `initialize` and `tools/list`, then either
//! rejects every `tools/call` with HTTP 400 and a JSON-RPC error whose `id`
//! is null, as a TypeScript SDK server rejects a request it cannot read, or
//! never answers it. A real upstream whose call reports progress shows that
//! progress keeps a call alive past the timeout.

mod support;

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{
    body::Bytes,
    extract::State,
    http::{Method, StatusCode},
    response::{IntoResponse, Response},
};
use lro_core::OffloadConfig;
use lro_proxy::{ProxyConfig, Upstream};
use rmcp::{model::ErrorCode, service::ServiceError};
use serde_json::{Value, json};
use support::{Seen, call, connect_with, http_upstream};
use tokio::sync::Notify;

/// Upper bound on a wait that should end at once or at a short timeout.
const PATIENCE: Duration = Duration::from_secs(20);

/// How the fake answers `tools/call`.
#[derive(Clone, Copy)]
enum Calls {
    /// HTTP 400 with `{"id": null, "error": …}`.
    Rejected,
    /// Never.
    Unanswered,
}

struct Fake {
    calls: Calls,
    /// The methods of the notifications it got, in order.
    notified: Mutex<Vec<String>>,
    notification: Notify,
}

async fn mcp(State(fake): State<Arc<Fake>>, method: Method, body: Bytes) -> Response {
    if method != Method::POST {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    let message: Value = serde_json::from_slice(&body).unwrap();
    let name = message["method"].as_str().unwrap_or_default().to_owned();
    let Some(id) = message.get("id").cloned() else {
        fake.notified.lock().unwrap().push(name);
        fake.notification.notify_waiters();
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match name.as_str() {
        // The newest version with a handshake, as a TypeScript SDK server answers.
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fake", "version": "0"},
        }),
        "tools/list" => json!({"tools": [{"name": "stuck", "inputSchema": {"type": "object"}}]}),
        _ => match fake.calls {
            Calls::Rejected => {
                let error = json!({"jsonrpc": "2.0", "id": null,
                    "error": {"code": -32000, "message": "Bad Request: Unsupported protocol version"}});
                return (StatusCode::BAD_REQUEST, axum::Json(error)).into_response();
            }
            Calls::Unanswered => std::future::pending().await,
        },
    };
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

/// The fake on 127.0.0.1; its URL.
async fn fake_upstream(fake: Arc<Fake>) -> String {
    let router = axum::Router::new()
        .route("/mcp", axum::routing::any(mcp))
        .with_state(fake);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    url
}

fn fake(calls: Calls) -> Arc<Fake> {
    Arc::new(Fake {
        calls,
        notified: Mutex::default(),
        notification: Notify::new(),
    })
}

fn offload(dir: &std::path::Path) -> OffloadConfig {
    OffloadConfig::default().output_dir(dir)
}

fn mcp_error(err: ServiceError) -> rmcp::ErrorData {
    match err {
        ServiceError::McpError(err) => err,
        other => panic!("not a JSON-RPC error: {other}"),
    }
}

/// The error a call of the upstream's `stuck` tool ends with, and after
/// how long.
async fn stuck_call_fails(client: &rmcp::Peer<rmcp::RoleClient>) -> (rmcp::ErrorData, Duration) {
    let started = Instant::now();
    let err = tokio::time::timeout(PATIENCE, client.call_tool(call("stuck", json!({}))))
        .await
        .expect("the call ends")
        .unwrap_err();
    (mcp_error(err), started.elapsed())
}

#[tokio::test]
async fn an_http_400_with_a_null_id_fails_the_call_it_answers_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let url = fake_upstream(fake(Calls::Rejected)).await;
    // A timeout far off, so only the answer itself can end the call.
    let proxy = ProxyConfig::new(Upstream::http(&url).unwrap())
        .request_timeout(Some(Duration::from_secs(600)));
    let (client, _shared, _) = connect_with(proxy, offload(dir.path())).await;

    let (err, elapsed) = stuck_call_fails(&client).await;
    assert_eq!(err.code, ErrorCode(-32000), "{err:?}");
    assert_eq!(err.message, "Bad Request: Unsupported protocol version");
    eprintln!("the rejected call failed after {elapsed:?}");
}

#[tokio::test]
async fn an_unanswered_call_fails_at_the_request_timeout_and_is_cancelled_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = fake(Calls::Unanswered);
    let url = fake_upstream(upstream.clone()).await;
    let timeout = Duration::from_secs(1);
    let proxy = ProxyConfig::new(Upstream::http(&url).unwrap()).request_timeout(Some(timeout));
    let (client, _shared, _) = connect_with(proxy, offload(dir.path())).await;

    let cancelled = upstream.notification.notified();
    tokio::pin!(cancelled);
    cancelled.as_mut().enable();
    let (err, elapsed) = stuck_call_fails(&client).await;
    assert_eq!(err.code, ErrorCode::INTERNAL_ERROR, "{err:?}");
    assert!(
        err.message.contains("request timeout of 1s"),
        "names the timeout: {}",
        err.message
    );
    assert_eq!(err.data, Some(json!({"timeoutSeconds": 1.0})));
    assert!(elapsed >= timeout, "{elapsed:?}");
    eprintln!("the unanswered call failed after {elapsed:?}");

    tokio::time::timeout(PATIENCE, async {
        while !upstream
            .notified
            .lock()
            .unwrap()
            .iter()
            .any(|m| m == "notifications/cancelled")
        {
            cancelled.as_mut().await;
            cancelled.set(upstream.notification.notified());
            cancelled.as_mut().enable();
        }
    })
    .await
    .expect("the upstream is told the call is cancelled");
}

#[tokio::test]
async fn progress_keeps_a_call_alive_past_the_request_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = http_upstream("127.0.0.1:0".parse().unwrap(), Arc::new(Seen::default())).await;
    let timeout = Duration::from_secs(1);
    let proxy =
        ProxyConfig::new(Upstream::http(&upstream.url).unwrap()).request_timeout(Some(timeout));
    let (client, _shared, _) = connect_with(proxy, offload(dir.path())).await;

    // Eight reports a quarter second apart: twice the timeout in all.
    let started = Instant::now();
    let done = client
        .call_tool(call("ticks", json!({"n": 8})))
        .await
        .unwrap();
    assert!(started.elapsed() > timeout * 2, "{:?}", started.elapsed());
    assert_eq!(done.content[0].as_text().unwrap().text, "ticked");
}

//! Shared helpers: an upstream MCP server on streamable HTTP (127.0.0.1),
//! the proxy wrapped by `LroLayer`, and a client that answers sampling and
//! records notifications, connected to the proxy over an in-memory pipe.
#![allow(dead_code, unreachable_pub)]
// Sampling is deprecated by SEP-2577, but clients and servers still use it,
// and the proxy must relay it.
#![allow(deprecated)]

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
};

use lro_core::OffloadConfig;
use lro_proxy::{Proxy, ProxyConfig, ProxyShared, Upstream};
use rmcp::{
    ClientHandler, ErrorData as McpError, RoleClient, RoleServer, ServerHandler, ServiceExt as _,
    model::*,
    service::{
        ClientLifecycleMode, ClientServiceExt as _, NotificationContext, RequestContext,
        RunningService,
    },
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tower_layer::Layer as _;

/// What the upstream saw, for the tests to check.
#[derive(Default)]
pub struct Seen {
    /// `capabilities.extensions["io.atlatl/lro"]` of each `initialize`.
    pub proxy_flags: Mutex<Vec<Option<Value>>>,
    /// Notified when a `slow` call is cancelled.
    pub cancelled: Notify,
    /// The progress token each `progress` call arrived with.
    pub progress_tokens: Mutex<Vec<Option<ProgressToken>>>,
    /// The `Content-Type` of each reply to a POST.
    pub replies: Mutex<Vec<String>>,
}

/// The upstream: a hand-written handler, so every answer is exactly known.
#[derive(Clone)]
pub struct Upstreamer {
    pub seen: Arc<Seen>,
}

fn tool(name: &'static str, description: &'static str) -> Tool {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    Tool::new(
        name,
        description,
        Arc::new(schema.as_object().unwrap().clone()),
    )
}

pub fn record(i: u64) -> Value {
    let kind = ["alpha", "beta"][(i % 2) as usize];
    json!({"id": format!("r{i:05}"), "kind": kind, "rank": i % 7, "body": "x".repeat(80)})
}

impl ServerHandler for Upstreamer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("upstreamer", "7.0"))
        .with_instructions("an upstream for the proxy tests")
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        let flag = request
            .capabilities
            .extensions
            .as_ref()
            .and_then(|e| e.get("io.atlatl/lro"))
            .map(|m| Value::Object(m.clone()));
        self.seen.proxy_flags.lock().unwrap().push(flag);
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(vec![
            tool("echo", "returns its arguments"),
            tool("big", "n records as a JSON array"),
            tool("fail", "a JSON-RPC error"),
            tool("progress", "n progress notifications, then done"),
            tool("sample", "asks the client to sample"),
            tool("slow", "waits until cancelled"),
            tool(
                "ticks",
                "n progress notifications a quarter second apart, then done",
            ),
            tool("task", "runs as a task of TASK_RECORDS records"),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let n = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("n"))
            .and_then(Value::as_u64)
            .unwrap_or(1);
        let result = match request.name.as_ref() {
            "echo" => CallToolResult::structured(
                json!({"args": request.arguments, "meta_seen": context.meta.get("trace").cloned()}),
            ),
            "big" => {
                let records: Vec<Value> = (0..n).map(record).collect();
                CallToolResult::success(vec![ContentBlock::text(
                    serde_json::to_string(&records).unwrap(),
                )])
            }
            "fail" => {
                return Err(McpError::new(
                    ErrorCode(-32042),
                    "the upstream says no",
                    Some(json!({"why": "test"})),
                ));
            }
            "progress" => {
                let token = context.meta.get_progress_token();
                self.seen
                    .progress_tokens
                    .lock()
                    .unwrap()
                    .push(token.clone());
                if let Some(token) = token {
                    for step in 1..=n {
                        let _ = context
                            .peer
                            .notify_progress(
                                ProgressNotificationParam::new(token.clone(), step as f64)
                                    .with_total(n as f64),
                            )
                            .await;
                    }
                }
                CallToolResult::success(vec![ContentBlock::text("done")])
            }
            "ticks" => {
                let token = context
                    .meta
                    .get_progress_token()
                    .expect("rmcp gives every request a token");
                for step in 1..=n {
                    // The work a long call does between two reports.
                    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                    let _ = context
                        .peer
                        .notify_progress(ProgressNotificationParam::new(token.clone(), step as f64))
                        .await;
                }
                CallToolResult::success(vec![ContentBlock::text("ticked")])
            }
            "sample" => {
                let answer = context
                    .peer
                    .create_message(CreateMessageRequestParams::new(
                        vec![SamplingMessage::user_text("say hi")],
                        16,
                    ))
                    .await
                    .map_err(|e| McpError::internal_error(e.to_string(), None))?;
                CallToolResult::success(vec![ContentBlock::text(format!("{:?}", answer))])
            }
            "task" => {
                return Ok(CallToolResponse::Task(CreateTaskResult::new(Task::new(
                    TASK_ID,
                    TaskStatus::Working,
                    TASK_TIME,
                    TASK_TIME,
                ))));
            }
            "slow" => {
                context.ct.cancelled().await;
                self.seen.cancelled.notify_one();
                CallToolResult::success(vec![ContentBlock::text("cancelled")])
            }
            other => return Err(McpError::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(result.into())
    }

    /// Every task is `task`'s, completed with [`TASK_RECORDS`] records.
    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let records: Vec<Value> = (0..TASK_RECORDS).map(record).collect();
        let result = CallToolResult::success(vec![ContentBlock::text(
            serde_json::to_string(&records).unwrap(),
        )]);
        let Value::Object(result) = serde_json::to_value(result).unwrap() else {
            unreachable!("a result is an object")
        };
        Ok(GetTaskResult::new(DetailedTask::new(
            Task::new(request.task_id, TaskStatus::Completed, TASK_TIME, TASK_TIME),
            TaskPayload::Completed { result },
        )))
    }
}

/// The id of the task the upstream's `task` tool starts.
pub const TASK_ID: &str = "task-1";
/// The time every task of the upstream was created and updated.
pub const TASK_TIME: &str = "2026-01-01T00:00:00Z";
/// Records of a completed task's result: over the tests' threshold.
pub const TASK_RECORDS: u64 = 60;

/// The upstream on streamable HTTP at 127.0.0.1; dropping the guard stops it.
pub struct HttpUpstream {
    pub url: String,
    pub addr: SocketAddr,
    pub seen: Arc<Seen>,
    stop: CancellationToken,
}

impl Drop for HttpUpstream {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

pub async fn http_upstream(addr: SocketAddr, seen: Arc<Seen>) -> HttpUpstream {
    serve_upstream(addr, seen, StreamableHttpServerConfig::default()).await
}

/// The upstream without sessions, answering each request with one JSON
/// body, not an SSE stream (as many HTTP servers do).
pub async fn json_upstream(seen: Arc<Seen>) -> HttpUpstream {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true);
    serve_upstream("127.0.0.1:0".parse().unwrap(), seen, config).await
}

async fn serve_upstream(
    addr: SocketAddr,
    seen: Arc<Seen>,
    config: StreamableHttpServerConfig,
) -> HttpUpstream {
    let stop = CancellationToken::new();
    let handler = Upstreamer { seen: seen.clone() };
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        config.with_cancellation_token(stop.child_token()),
    );
    let replies = seen.clone();
    let router =
        axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::map_response(
                move |response: axum::response::Response| {
                    let replies = replies.clone();
                    async move {
                        let kind = response
                            .headers()
                            .get(http::header::CONTENT_TYPE)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default();
                        replies.replies.lock().unwrap().push(kind.to_owned());
                        response
                    }
                },
            ));
    let addr = serve_router(addr, router, &stop).await;
    HttpUpstream {
        url: format!("http://{addr}/mcp"),
        addr,
        seen,
        stop,
    }
}

/// Serves `router` on `addr` (port 0 picks one) until `stop` is
/// cancelled; returns the bound address.
pub async fn serve_router(
    addr: SocketAddr,
    router: axum::Router,
    stop: &CancellationToken,
) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = stop.clone();
    tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await
            .unwrap();
    });
    addr
}

/// What the client received.
#[derive(Default)]
pub struct Received {
    pub progress: Mutex<Vec<ProgressNotificationParam>>,
    pub sampled: Mutex<u32>,
}

/// A client that answers sampling and records progress.
#[derive(Clone, Default)]
pub struct Client {
    pub received: Arc<Received>,
}

impl ClientHandler for Client {
    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, McpError> {
        *self.received.sampled.lock().unwrap() += 1;
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text("hi from the client"),
            "test-model".into(),
        ))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.received.progress.lock().unwrap().push(params);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder()
                .enable_sampling()
                .enable_tasks()
                .build(),
            Implementation::new("proxy-test-client", "1.0"),
        )
    }
}

/// The proxy in front of `upstream`, wrapped by `LroLayer` with `cfg`, and a
/// client connected to it over an in-memory pipe.
pub async fn connect(
    upstream: Upstream,
    cfg: OffloadConfig,
) -> (RunningService<RoleClient, Client>, ProxyShared, Client) {
    connect_with(ProxyConfig::new(upstream), cfg).await
}

/// [`connect`], with the proxy's settings.
pub async fn connect_with(
    proxy: ProxyConfig,
    cfg: OffloadConfig,
) -> (RunningService<RoleClient, Client>, ProxyShared, Client) {
    connect_on(proxy, cfg, ClientLifecycleMode::Initialize).await
}

/// [`connect_with`], the client speaking the wire `lifecycle` picks.
pub async fn connect_on(
    proxy: ProxyConfig,
    cfg: OffloadConfig,
    lifecycle: ClientLifecycleMode,
) -> (RunningService<RoleClient, Client>, ProxyShared, Client) {
    let shared = ProxyShared::new(proxy);
    let handler = lro_tower::LroLayer::new(cfg).layer(Proxy::new(shared.clone()));
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = handler.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = Client::default();
    let running = client
        .clone()
        .serve_with_lifecycle(client_io, lifecycle)
        .await
        .expect("client starts");
    (running, shared, client)
}

/// The sessionless wire of MCP 2026-07-28.
pub fn discover() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    }
}

/// A tools/call with `args`.
pub fn call(name: &'static str, args: Value) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(name);
    params.arguments = args.as_object().cloned();
    params
}

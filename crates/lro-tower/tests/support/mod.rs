//! Shared helpers: a small tool server, clients over in-memory pipes and
//! streamable HTTP, and file checks.
#![allow(dead_code, unreachable_pub)]

use std::{collections::HashMap, net::SocketAddr, path::Path};

use axum::{extract::Request, middleware::Next};
use lro_core::{OffloadConfig, file::OffloadFileName, principal::Principal};
use rmcp::{
    ErrorData as McpError, RoleClient, ServerHandler, ServiceExt,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{
        CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
        ServerCapabilities, ServerConfig,
    },
    schemars,
    service::RunningService,
    tool, tool_handler, tool_router,
    transport::{
        StreamableHttpClientTransport,
        streamable_http_client::StreamableHttpClientTransportConfig,
        streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
        },
    },
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Arguments of the `items` tool.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ItemsArgs {
    /// How many records.
    pub n: usize,
    /// Characters of filler per record.
    #[serde(default)]
    pub size: usize,
}

/// A tool server whose results have a chosen size.
#[derive(Debug, Clone)]
pub struct TestServer {
    tool_router: ToolRouter<Self>,
}

impl Default for TestServer {
    fn default() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }
}

pub fn item(i: usize, size: usize) -> Value {
    let kind = ["alpha", "beta", "gamma"][i % 3];
    json!({"id": format!("item-{i:05}"), "kind": kind, "rank": i % 7, "body": "x".repeat(size)})
}

/// The output schema `typed` declares: any object.
fn object_schema() -> std::sync::Arc<rmcp::model::JsonObject> {
    std::sync::Arc::new(serde_json::Map::from_iter([(
        "type".to_owned(),
        json!("object"),
    )]))
}

#[tool_router]
impl TestServer {
    /// `n` records as a JSON array in one text block.
    #[tool(description = "Return n records as a JSON array")]
    fn items(&self, Parameters(ItemsArgs { n, size }): Parameters<ItemsArgs>) -> String {
        let items: Vec<Value> = (0..n).map(|i| item(i, size)).collect();
        serde_json::to_string(&items).unwrap()
    }

    /// `n` records whose text is Chinese: one token per character for the
    /// script-aware estimator, three bytes each.
    #[tool(description = "Return n records of Chinese text as a JSON array")]
    fn cjk(&self, Parameters(ItemsArgs { n, size }): Parameters<ItemsArgs>) -> String {
        let items: Vec<Value> = (0..n)
            .map(|i| json!({"id": format!("note-{i:05}"), "text": "数据库连接超时".repeat(size.max(1))}))
            .collect();
        serde_json::to_string(&items).unwrap()
    }

    /// `n` lines of plain text.
    #[tool(description = "Return n lines of text")]
    fn lines(&self, Parameters(ItemsArgs { n, size }): Parameters<ItemsArgs>) -> String {
        (0..n)
            .map(|i| format!("line {i} {}", "y".repeat(size)))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Records as structured content, the object's only array field.
    #[tool(description = "Return records as structured content")]
    fn structured(
        &self,
        Parameters(ItemsArgs { n, size }): Parameters<ItemsArgs>,
    ) -> Result<CallToolResult, McpError> {
        let items: Vec<Value> = (0..n).map(|i| item(i, size)).collect();
        Ok(CallToolResult::structured(
            json!({"items": items, "total": n}),
        ))
    }

    /// The same, from a tool that declares an output schema: its
    /// descriptor goes out as structured content too.
    #[tool(
        description = "Return records as structured content, with an output schema",
        output_schema = object_schema()
    )]
    fn typed(
        &self,
        Parameters(ItemsArgs { n, size }): Parameters<ItemsArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.structured(Parameters(ItemsArgs { n, size }))
    }

    /// A large tool error.
    #[tool(description = "Fail with a long message")]
    fn fail(&self) -> Result<CallToolResult, McpError> {
        Ok(CallToolResult::error(vec![ContentBlock::text(
            "e".repeat(20_000),
        )]))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

pub type Client = RunningService<RoleClient, ClientConfig>;

/// Serves `handler` over an in-memory duplex pipe and connects a client.
pub async fn connect<H: ServerHandler>(handler: H) -> Client {
    connect_with(handler, ClientConfig::default()).await
}

pub async fn connect_with<H: ServerHandler>(handler: H, client: ClientConfig) -> Client {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024 * 1024);
    tokio::spawn(async move {
        let running = handler.serve(server_io).await.expect("server starts");
        let _ = running.waiting().await;
    });
    client.serve(client_io).await.expect("client connects")
}

/// A client that declares itself an LRO proxy.
pub fn proxy_client() -> ClientConfig {
    let mut ext = rmcp::model::ExtensionCapabilities::new();
    ext.insert(
        lro_tower::PROXY_EXTENSION.to_owned(),
        serde_json::from_value(json!({"proxy": true})).unwrap(),
    );
    let mut caps = ClientCapabilities::default();
    caps.extensions = Some(ext);
    ClientConfig::new(
        caps,
        rmcp::model::Implementation::new("lro-proxy-test", "0"),
    )
}

/// The header a test client names its principal in: [`serve_http_as`]'s
/// stand-in for the HTTP face's authentication.
pub const PRINCIPAL_HEADER: &str = "x-test-principal";

/// Serves `make()` over streamable HTTP on 127.0.0.1 with sessions and
/// returns the address.
pub async fn serve_http<H, F>(make: F, ct: CancellationToken) -> SocketAddr
where
    H: ServerHandler,
    F: Fn() -> H + Send + Sync + 'static,
{
    serve_http_as(make, true, &ct).await
}

/// Serves `make()` over streamable HTTP on 127.0.0.1, with sessions
/// (`stateful`) or without, and returns the address. A tiny tower layer
/// plays the HTTP face's authentication: it turns the [`PRINCIPAL_HEADER`]
/// into a `Principal` in the request's extensions, which the layer's default
/// `FromHttpRequest` source reads.
pub async fn serve_http_as<H, F>(make: F, stateful: bool, ct: &CancellationToken) -> SocketAddr
where
    H: ServerHandler,
    F: Fn() -> H + Send + Sync + 'static,
{
    let service: StreamableHttpService<H, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(make()),
        Default::default(),
        StreamableHttpServerConfig::default()
            .with_sse_keep_alive(None)
            .with_legacy_session_mode(stateful)
            .with_cancellation_token(ct.child_token()),
    );
    let authenticate = axum::middleware::from_fn(|mut req: Request, next: Next| async move {
        let principal = req
            .headers()
            .get(PRINCIPAL_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(Principal::new);
        if let Some(p) = principal {
            req.extensions_mut().insert(p);
        }
        next.run(req).await
    });
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(authenticate);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let ct = ct.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move { ct.cancelled_owned().await })
            .await;
    });
    addr
}

pub async fn connect_http(addr: SocketAddr) -> Client {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("http://{addr}/mcp")),
    );
    ClientConfig::default()
        .serve(transport)
        .await
        .expect("http client connects")
}

/// A client of [`serve_http_as`] authenticated as `principal`.
pub async fn connect_http_as(addr: SocketAddr, principal: &str, client: ClientConfig) -> Client {
    let headers = HashMap::from([(
        http::HeaderName::from_static(PRINCIPAL_HEADER),
        http::HeaderValue::from_str(principal).unwrap(),
    )]);
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("http://{addr}/mcp"))
            .custom_headers(headers),
    );
    client.serve(transport).await.expect("http client connects")
}

pub async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    client.call_tool(params).await.expect("tool call succeeds")
}

/// `lro_extract` with `args`: the answer's text blocks joined, and whether
/// it is a tool error.
pub async fn extract(client: &Client, args: Value) -> (String, bool) {
    let r = call(client, "lro_extract", args).await;
    let text = r
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    (text, r.is_error == Some(true))
}

pub fn config(dir: &Path, threshold: u32) -> OffloadConfig {
    OffloadConfig::default()
        .output_dir(dir)
        .threshold_tokens(threshold)
}

/// The first text block parsed as JSON.
pub fn first_json(result: &CallToolResult) -> Value {
    let text = &result.content[0].as_text().expect("text block").text;
    serde_json::from_str(text).expect("first block is JSON")
}

/// Checks an offload file: name pattern, header, one JSON value per line,
/// header count equal to record lines. Returns the records.
pub fn check_file(path: &Path) -> Vec<Value> {
    let name = path.file_name().unwrap().to_str().unwrap();
    assert!(OffloadFileName::parse(name).is_some(), "bad name {name}");
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(header["type"], "lro_header");
    let records: Vec<Value> = lines.map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(header["count"].as_u64().unwrap() as usize, records.len());
    records
}

pub fn offload_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .map(|rd| rd.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

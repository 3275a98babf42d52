//! Run with `cargo run -p wrap-your-server`
//!
//! An rmcp server with one tool, wrapped in `LroLayer` and served over stdio:
//! `rows {"count": N}` answers N records inline while they fit under the
//! threshold, and a descriptor of a JSONL file once they do not.

use lro_core::OffloadConfig;
use lro_scheduler::OffloadCleanup;
use lro_tower::LroLayer;
use rmcp::{
    ServerHandler, ServiceExt,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{ServerCapabilities, ServerConfig},
    tool, tool_handler, tool_router,
};
use serde_json::json;
use tower::ServiceBuilder;

/// The arguments of `rows`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct RowsArgs {
    /// How many records to return.
    count: usize,
}

/// Any `rmcp::ServerHandler` will do; this one has a single tool.
#[derive(Clone)]
struct Rows {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Rows {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Returns `count` records as a JSON array.")]
    async fn rows(&self, Parameters(args): Parameters<RowsArgs>) -> String {
        let rows: Vec<_> = (0..args.count)
            .map(|i| json!({"id": i, "title": format!("row {i}"), "namespace": "demo/rows"}))
            .collect();
        json!(rows).to_string()
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Rows {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // `lro_extract` runs queries in worker processes of this program, each
    // bounded in memory: in a worker, this line serves them and exits.
    lro_extract::worker::run_if_worker();
    // The `[prompt.offload]` section of a TOML file, if one is named, then the
    // `ATLATL_PROMPT__OFFLOAD__*` environment variables.
    let file = std::env::args_os().nth(1).map(std::path::PathBuf::from);
    let cfg = OffloadConfig::load(file.as_deref())?;
    // Offload files expire: the cleanup task deletes them after `ttl_seconds`.
    let cleanup = OffloadCleanup::from_config(&cfg).start().await?;
    let handler = ServiceBuilder::new()
        .layer(LroLayer::new(cfg))
        .service(Rows::new());
    // lro_stdio::stdio() is rmcp's stdio() that answers a line that is not
    // JSON, or over 16 MiB, with a JSON-RPC error instead of dropping it.
    handler.serve(lro_stdio::stdio()).await?.waiting().await?;
    cleanup.shutdown().await?;
    Ok(())
}

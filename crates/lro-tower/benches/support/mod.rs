//! Shared by the benches: full-detail MIF memories and a server that
//! returns them.

use rmcp::{
    ServerHandler,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{ServerCapabilities, ServerConfig},
    schemars, tool, tool_handler, tool_router,
};
use serde_json::{Value, json};

/// A full-detail MIF memory of about 880 characters (~220 tokens).
pub(crate) fn memory(i: usize) -> Value {
    let ns = [
        "_semantic/knowledge",
        "_semantic/decisions",
        "_procedural/patterns",
        "_episodic/incidents",
        "_episodic/sessions",
    ][i % 5];
    let memory_type = ["semantic", "episodic", "procedural"][i % 3];
    json!({
        "id": format!("7f3c{i:04}-1b2d-4e5f-8a9b-0c1d2e3f{i:04}"),
        "memory_type": memory_type,
        "content": format!("Memory {i}: the Atlas cache warming job regressed after the Borealis rollout; latency rose for cold keys and the on-call engineer pinned the previous build while the team studied eviction traces and agreed on a staged fix."),
        "created": format!("2025-0{}-1{}T10:00:00Z", 1 + i % 9, i % 10),
        "modified": format!("2025-0{}-1{}T12:00:00Z", 1 + i % 9, i % 10),
        "namespace": ns,
        "title": format!("Cache warming regression {i}"),
        "tags": ["performance", "cache", "incident"],
        "status": "active",
        "priority": 1 + i % 5,
        "entities": [{"name": "Atlas", "type": "product"}, {"name": "Borealis", "type": "release"}],
        "relationships": [{"type": "relates_to", "target": format!("7f3c{:04}-1b2d-4e5f-8a9b-0c1d2e3f0000", (i + 1) % 200)}],
        "provenance": {"confidence": 0.3 + (i % 70) as f64 / 100.0, "trust_level": "verified", "source_type": "agent", "agent": "claude"},
        "temporal": {"valid_from": "2025-01-01T00:00:00Z", "valid_until": null, "decay": {"half_life_days": 30}}
    })
}

/// `n` memories as one JSON array.
pub(crate) fn memories(n: usize) -> String {
    serde_json::to_string(&(0..n).map(memory).collect::<Vec<_>>()).unwrap()
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct Args {
    n: usize,
}

/// One tool, `memories`, that returns `n` memories.
#[derive(Debug, Clone)]
pub(crate) struct Small {
    tool_router: ToolRouter<Self>,
}

impl Small {
    pub(crate) fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }
}

#[tool_router]
impl Small {
    #[tool(description = "n memories")]
    fn memories(&self, Parameters(Args { n }): Parameters<Args>) -> String {
        memories(n)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Small {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

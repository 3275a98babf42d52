//! Shared by the benches: the memory-server's memories at full detail and a
//! server that returns them.

use lro_core::Detail;
use lro_corpus::{Corpus, DEFAULT_SEED};
use rmcp::{
    ServerHandler,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{ServerCapabilities, ServerConfig},
    schemars, tool, tool_handler, tool_router,
};

/// The first `n` memories of the memory-server's corpus (lro-corpus, its
/// default seed) at full detail, as one JSON array: the product's own data,
/// about 880 characters (~220 tokens) a memory.
pub(crate) fn memories(n: usize) -> String {
    let corpus = Corpus::generate(n, DEFAULT_SEED);
    Corpus::to_json_array(corpus.memories(), Detail::Full)
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

//! The LRO middleware: [`LroLayer`] and the [`LroService`] handler it produces.
//!
//! `LroService<H>` implements `rmcp::ServerHandler` for any `H: ServerHandler`. It
//! forwards every method, and intercepts `tools/call` (and completed task
//! results from `tasks/get`): at or under the threshold a result passes
//! through unchanged; over it the full result set goes to a JSONL file and
//! the tool returns the descriptor as JSON text and the same object as
//! structured content (no `resource_link`: see `intercept.rs`). A failed write
//! falls back to a truncated inline result with a warning. Clients that
//! declare the [`PROXY_EXTENSION`] capability get full results inline.
//!
//! rmcp's handler methods return `impl Future`, so unlike most tower
//! middleware there is no named response future here.
//!
//! ```
//! use lro_core::OffloadConfig;
//! use lro_tower::{LroService, LroLayer};
//! use rmcp::{ServerHandler, model::ServerConfig};
//! use tower::ServiceBuilder;
//!
//! #[derive(Clone)]
//! struct MyServer;
//! impl ServerHandler for MyServer {
//!     fn get_info(&self) -> ServerConfig {
//!         ServerConfig::default()
//!     }
//! }
//!
//! let cfg = OffloadConfig::default().threshold_tokens(800);
//! let handler: LroService<MyServer> = ServiceBuilder::new()
//!     .layer(LroLayer::new(cfg))
//!     .service(MyServer);
//! assert_eq!(handler.config().threshold_tokens, 800);
//! // `handler` now serves like any rmcp handler: `handler.serve(rmcp::transport::stdio())`.
//! ```

#[cfg(feature = "context")]
mod context;
mod error;
mod extract;
mod forward;
mod intercept;
mod layer;
mod remote;
mod service;
mod shared;
mod tasks;
mod tools;
mod trace;

#[cfg(feature = "context")]
pub use context::CONTEXT_TOOLS;
pub use error::Error;
pub use extract::EXTRACT_TOOL;
pub use layer::LroLayer;
pub use service::{LroService, PROXY_EXTENSION};
pub use trace::CallerTrace;

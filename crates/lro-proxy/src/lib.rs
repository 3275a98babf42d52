//! Large Result Offloading in front of any MCP server, local or remote.
//!
//! [`Proxy`] is an `rmcp::ServerHandler` that forwards every request of one
//! client session to its own upstream session, a child process over stdio
//! or a streamable-HTTP endpoint, and relays the upstream's requests
//! (sampling, elicitation, roots) and notifications (progress, logging,
//! list changes, resource updates) back to the client. It has no offload
//! logic of its own: wrap it in `lro_tower::LroLayer`, and large results are
//! offloaded exactly as for a Rust server.
//!
//! ```no_run
//! use lro_proxy::{Proxy, ProxyConfig, ProxyShared, Upstream};
//! use rmcp::ServiceExt as _;
//! use tower_layer::Layer as _;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let shared = ProxyShared::new(ProxyConfig::new(Upstream::command("python3", ["server.py"])));
//! let layer = lro_tower::LroLayer::new(lro_core::OffloadConfig::default());
//! let running = layer
//!     .layer(Proxy::new(shared.clone()))
//!     .serve(lro_stdio::stdio())
//!     .await?;
//! running.waiting().await?;
//! shared.shutdown().await; // every child ended and reaped
//! # Ok(()) }
//! ```
//!
//! The proxy declares itself a proxy to the upstream in both forms: the
//! [`lro_core::proxy_flag::PROXY_EXTENSION`] client capability extension, which an
//! rmcp server can read, and the spec's `clientInfo.proxy: true`, added on
//! the wire of both upstream transports because rmcp's `Implementation` type
//! drops unknown keys.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod child;
mod config;
mod connection;
mod error;
mod exit;
mod flag;
mod forward;
mod listen;
mod pool;
mod post;
mod reclaim;
mod refusal;
mod relay;
pub mod serve;
mod session;
mod shared;
mod slots;
mod telemetry;
mod transport;
pub mod watchdog;
mod wire;

pub use config::{DEFAULT_REQUEST_TIMEOUT, DEFAULT_SESSIONLESS_IDLE_TIMEOUT, ProxyConfig};
pub use error::ProxyError;
pub use lro_upstream::{Upstream, UpstreamError};
pub use session::Proxy;
pub use shared::ProxyShared;

//! The LRO demo: an MCP memory server over a deterministic corpus of MIF
//! memories, built so that its results are big enough to be offloaded.
//!
//! - The memories, their detail levels, recall and search: [`lro_corpus`],
//!   the crate the benches and tests share.
//! - [`server`]: [`MemoryServer`], the four MCP tools.
//! - [`catalog`]: its prompt (`recall`) and resources (`memory://namespaces`,
//!   `memory://memories/{id}`).
//! - [`conformance`]: the conformance suite's diagnostic tools, off unless
//!   asked for ([`MemoryServer::with_conformance_tools`]).
//!
//! The binary (`memory-server`) wraps the server in `lro_tower::LroLayer`
//! and serves it over stdio or streamable HTTP. Tests and other crates can
//! build the same handler in-process:
//!
//! ```
//! use lro_core::OffloadConfig;
//! use lro_tower::{LroService, LroLayer};
//! use lro_corpus::Corpus;
//! use memory_server::MemoryServer;
//! use tower_layer::Layer;
//!
//! let server = MemoryServer::new(Corpus::default_corpus());
//! let handler: LroService<MemoryServer> = LroLayer::new(OffloadConfig::default()).layer(server);
//! assert_eq!(handler.get_ref().corpus().len(), 500);
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod catalog;
pub mod conformance;
pub mod server;

pub use server::MemoryServer;

//! Large Result Offloading for any rmcp server, as one tower layer.
//!
//! ```text
//! ServiceBuilder::new().layer(LroLayer::new(cfg)).service(handler)
//! ```
//!
//! See [`lro`](crate::lro) for what the layer does, [`principal`] for how it
//! learns who is calling, and [`scope`] for how a tool hands its untrimmed
//! result set to the layer.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod lro;
pub mod principal;
pub mod scope;

#[cfg(feature = "context")]
pub use lro::CONTEXT_TOOLS;
pub use lro::{CallerTrace, EXTRACT_TOOL, Error, LroLayer, LroService, PROXY_EXTENSION};
pub use principal::{FromHttpRequest, PrincipalSource};
pub use scope::{LroScope, ScopeHints};

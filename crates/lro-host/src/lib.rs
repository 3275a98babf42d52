//! The host wiring of an LRO server, written once: `lro proxy` and the
//! memory-server both run through it.
//!
//! A host, in order:
//!
//! 1. installs telemetry ([`lro_telemetry`]: logs on stderr, Prometheus,
//!    OTLP traces) and prints `NAME metrics on http://ADDR/metrics` on
//!    stderr when a metrics address is set ([`HostBuilder::install`]);
//! 2. starts the `offload_cleanup` task ([`lro_scheduler`]), which also runs
//!    once at start-up;
//! 3. builds the [`LroLayer`](lro_tower::LroLayer), with the context tools
//!    when context store roots are given;
//! 4. hands the layer and the [`Shutdown`] future (ctrl-c or SIGTERM) to the
//!    caller's serve step, which wraps its handler and serves it until the
//!    future resolves: over stdio with [`serve_stdio`] (through
//!    [`lro_stdio`], which answers a bad or over-long line with a JSON-RPC
//!    error), or streamable HTTP as it likes;
//! 5. shuts down in order: the cleanup task, then telemetry (flushing
//!    spans).
//!
//! Steps 2 to 5 are [`Host::run`]; [`Host::run_bare`] serves without the
//! layer and the cleanup task. Between `install` and `run` the caller may
//! do what must come after telemetry and before cleanup (the proxy checks
//! its upstream there).
//!
//! Only binaries and examples depend on this crate, as on `lro-telemetry`
//! (`lro-tidy`): a library installs no exporter.
//!
//! ```no_run
//! use lro_core::OffloadConfig;
//! use lro_host::{Host, Offload};
//! use rmcp::ServerHandler;
//! use tower_layer::Layer as _;
//!
//! #[derive(Clone)]
//! struct MyServer;
//! impl ServerHandler for MyServer {}
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//!     let cfg = OffloadConfig::load(None)?;
//!     let host = Host::builder("my-server").install()?;
//!     host.run(Offload::new(cfg), |layer, shutdown| async move {
//!         lro_host::serve_stdio(layer.layer(MyServer), shutdown).await?;
//!         Ok(())
//!     })
//!     .await
//! }
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
mod host;
mod signal;
mod stdio;

pub use error::HostError;
pub use host::{Host, HostBuilder, Offload, folder_key};
pub use signal::{Shutdown, shutdown_signal};
pub use stdio::serve_stdio;

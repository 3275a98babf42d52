//! MCP over stdio with a line cap, written once for every stdio face of the
//! project: `lro proxy`'s, and the one `lro-host` serves for the
//! memory-server.
//!
//! rmcp's own stdio transport drops a line that is not JSON, or is over its
//! cap, without an answer, so the client waits for ever. [`ServerStdio`]
//! answers such a line with a JSON-RPC error and reads on; [`stdio`] is it
//! over the process's stdin and stdout, a drop-in for
//! `rmcp::transport::stdio()`:
//!
//! ```no_run
//! use rmcp::{ServerHandler, ServiceExt as _};
//!
//! #[derive(Clone)]
//! struct MyServer;
//! impl ServerHandler for MyServer {}
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! MyServer.serve(lro_stdio::stdio()).await?.waiting().await?;
//! # Ok(()) }
//! ```
//!
//! [`line`] is the capped line reader underneath, which `lro proxy` also
//! reads its upstream child's answers with.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod line;
mod server;

pub use server::{MAX_LINE_BYTES, ServerStdio, StdinReader, StdoutWriter, stdio};

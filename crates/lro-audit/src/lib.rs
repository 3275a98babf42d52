//! A black-box LRO conformance auditor: Levels 1–3 of the LRO spec,
//! judged from outside, for any implementation in any language.
//!
//! [`audit`] launches a stdio server (as often as it needs, configured by
//! the spec's `ATLATL_PROMPT__OFFLOAD__*` variables) or connects to a
//! running streamable-HTTP server, calls the spec's tools (or the
//! [`Probe`]s given) over MCP 2026-07-28 or, for a legacy server,
//! 2025-11-25 ([`WireMode`]; the report names the [`Wire`]), and judges
//! what comes back: the threshold, the JSONL
//! file, the descriptor, the recipes (run with the real `jq`, never a
//! shell), the line schema, cleanup, the write-failure fallback and the
//! events. Each requirement is one named [`Check`]; the [`Report`] gives the
//! level proven and what blocked the next one.
//!
//! ```no_run
//! use lro_audit::{AuditConfig, Upstream, audit};
//!
//! # async fn run() -> Result<(), lro_audit::AuditError> {
//! let target = Upstream::command("python3", ["my_server.py"]);
//! let report = audit(&target, &AuditConfig::new()).await?;
//! println!("{}", report.to_table());
//! assert!(report.level() >= 2, "{}", report.verdict());
//! # Ok(()) }
//! ```
//!
//! The auditor shares no judgement with this project's implementation: it
//! uses `lro-core` for the spec's names only, so it can judge others.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod audit;
mod check;
mod config;
mod error;
mod events;
mod evidence;
mod negotiation;
mod probe;
mod recipe;
pub mod report;
mod result;
mod target;

pub use audit::audit;
pub use check::catalogue;
pub use config::AuditConfig;
pub use error::AuditError;
pub use lro_upstream::Upstream;
pub use negotiation::{UnknownWire, Wire, WireMode};
pub use probe::{Probe, ProbeError};
pub use report::{Check, Report, Status};

//! The Large Result Offloading protocol as data and pure functions.
//!
//! When a tool result is estimated above a token threshold, the full result
//! set goes to a JSONL file (`atlatl-{operation}-{ulid}.jsonl`: a header line,
//! then one record per line) and the model gets a compact descriptor instead:
//! file path, summary, line schema, ten jq recipes and guidance.
//!
//! This crate knows nothing about MCP, tokio or HTTP, and touches no file
//! system: `lro-store` writes and reads results (the local directory, or an
//! object store), `lro-tower` puts it in front of rmcp servers,
//! `lro-scheduler` cleans up, `lro-extract` queries.
//!
//! | module | what it owns |
//! |---|---|
//! | [`config`] | `[prompt.offload]` and `ATLATL_PROMPT__OFFLOAD__*` |
//! | [`tokens`] | token estimation: characters, exact BPE counts near the threshold |
//! | [`records`] | turning a result into records |
//! | [`schema`] | the inferred line schema |
//! | [`recipes`] | the ten recipes per detail level |
//! | [`descriptor`] | `OffloadHeader`, `OffloadResponse`, guidance |
//! | [`fit`] | the descriptor's token ceilings, and fitting within them |
//! | [`file`] | naming, the JSONL encoding, the header parser |
//! | [`object`] | [`ObjectSink`](object::ObjectSink): where results are written |
//! | [`offload`] | the pipeline and the truncation fallback |
//! | [`error`] | how an error becomes text: [`error::chain`], every cause once |
//! | [`event`] | observability events and sinks |
//! | [`metric`] | the metric catalogue and its typed label values (a leaf) |
//! | [`principal`] | who is calling: the owner of a result |
//! | [`quota`] | per-principal and total byte quotas, a ledger checked at write time |
//! | [`proxy_flag`] | the proxy flag: its names on the MCP wire and its marking |
//!
//! ```
//! use lro_core::{descriptor::Detail, recipes::RecipeSet, records::RecordSet, tokens::{ScriptAware, TokenEstimator}};
//!
//! let result = serde_json::to_string(&vec![serde_json::json!({"msg": "a fairly long log line"}); 400]).unwrap();
//! let tokens = ScriptAware.estimate(&result);
//! assert!(tokens > 1600);
//! let records = RecordSet::from_text(&result);
//! assert_eq!(records.len(), 400);
//! let recipes = RecipeSet::derive(records.head(), Detail::Full);
//! assert_eq!(recipes.to_compact_recipes().len(), 10);
//! ```
//!
//! [`Offloader`] puts these together and writes through an
//! [`ObjectSink`](object::ObjectSink) (see [`offload`]).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

// The test sink shared with the integration tests names this crate.
#[cfg(test)]
extern crate self as lro_core;

pub mod config;
pub mod descriptor;
pub mod error;
pub mod event;
pub mod example;
pub mod fields;
pub mod file;
pub mod fit;
mod frequency;
pub mod handle;
pub mod integrity;
pub mod metric;
pub mod object;
pub mod offload;
pub mod principal;
pub mod proxy_flag;
pub mod quota;
mod quote;
pub mod recipes;
pub mod records;
pub mod schema;
pub mod tokens;

pub use config::{
    ConfigError, DescriptorProfile, Estimator, ExtractionLimits, OffloadConfig, ToolConfig,
};
pub use descriptor::{
    Detail, GuidanceStyle, JqRecipe, OffloadHeader, OffloadResponse, OffloadSummary,
    OffloadedResult,
};
pub use event::{EventSink, LroEvent};
pub use offload::{Descriptor, OffloadInput, OffloadOutput, Offloader};
pub use records::RecordSet;
pub use tokens::{Banded, ScriptAware, TokenEstimator};

//! In-process extraction over LRO offload files: the engine behind the
//! native `lro_extract` tool and the `lro extract` command.
//!
//! One [`ExtractRequest`] selects one mode:
//!
//! | mode | what runs |
//! |---|---|
//! | `recipe` | recipe N of the descriptor (same derivation as the descriptor), via jaq |
//! | `query` | a jq filter per record (or over all records with `slurp`), via jaq |
//! | `structured` | `where`/`fields`/`sort_by`/`offset`/`limit`/`count`/`group_by`, native Rust, streaming |
//! | `lines` | a window of record lines |
//! | `grep` | regex search over record lines with context |
//!
//! Every call is guarded (only offload files directly inside the
//! configured directory) and bounded: it runs on a worker thread that is
//! stopped at the timeout (cooperatively, at every jq term), and its output is cut at
//! `max_output_values` / `max_output_bytes` / `max_output_tokens`, between
//! results, with a notice and the request for the next part.
//!
//! On a shared server the layer first checks the caller with [`access`]:
//! an expired name is refused from its timestamp, and a name is looked up
//! only in the caller's own folder.
//!
//! ```
//! use lro_core::{offload::{Offloader, OffloadInput}, records::RecordSet};
//! use lro_store::DirSink;
//! use lro_extract::{ExtractConfig, ExtractRequest, Extractor};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let text = serde_json::to_string(&(0..30).map(|i| serde_json::json!({
//!     "id": format!("m{i}"), "title": format!("Note {i}"), "memory_type": "semantic",
//!     "namespace": if i % 2 == 0 { "_semantic/knowledge" } else { "_episodic/sessions" },
//!     "tags": ["t"], "created": format!("2025-01-{:02}", i % 28 + 1),
//! })).collect::<Vec<_>>()).unwrap();
//! let records = RecordSet::from_text(&text);
//! let written = Offloader::new(DirSink::new(dir.path()))
//!     .offload(OffloadInput::new("list", "list", &records, 5000), &|| false)
//!     .unwrap();
//! let path = written.result.path.to_string_lossy().into_owned();
//!
//! let extractor = Extractor::new(ExtractConfig::new(dir.path()));
//! let req = ExtractRequest::new(&path).recipe(6); // count by namespace
//! let out = extractor.run(&req).unwrap();
//! assert_eq!(out.values[0][0]["count"], 15);
//!
//! let req = ExtractRequest::new(&path).query("select(.id == \"m7\") | .title");
//! assert_eq!(extractor.run(&req).unwrap().text, "\"Note 7\"\n");
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]
pub mod access;
mod config;
mod error;
mod execute;
mod extractor;
mod failures;
pub mod fair;
mod fast;
mod frame;
mod gate;
mod guard;
mod isolation;
mod jq;
mod output;
mod plan;
mod pool;
mod protocol;
mod render;
mod request;
mod slurp;
mod structured;
mod text;
mod thread;
pub mod worker;

// The record scanner is lro-core's: the offload reads its summaries with it.
use lro_core::records::scan;

pub use config::{
    DEFAULT_MAX_CONCURRENT, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_OUTPUT_VALUES,
    DEFAULT_MAX_PER_PRINCIPAL, DEFAULT_MEMORY_BUDGET, DEFAULT_QUEUE_TIMEOUT, DEFAULT_TIMEOUT,
    ExtractConfig,
};
pub use error::ExtractError;
pub use extractor::Extractor;
pub use guard::{ResolvedFile, resolve};
pub use isolation::{Isolation, Job};
pub use output::ExtractOutput;
pub use pool::{DEFAULT_HANDSHAKE_TIMEOUT, WorkerPool};
pub use request::{
    Condition, DEFAULT_LINE_LIMIT, DEFAULT_MAX_CHARS, DEFAULT_MAX_MATCHES, ExtractRequest, Grep,
    LineWindow, MAX_CONTEXT, Match, Op,
};

/// A record line as jq 1.6 reads it, as a `serde_json` value (a lone low
/// surrogate escape is U+FFFD); jq's reason when jq does not read it (a
/// lone high surrogate escape, nesting past its 256 entries, not JSON).
///
/// ```
/// let v = lro_extract::read_record(br#"{"s":"x\udc00y"}"#).unwrap();
/// assert_eq!(v["s"], "x\u{fffd}y");
/// assert!(lro_extract::read_record(br#"{"s":"\ud800"}"#).is_err());
/// ```
pub fn read_record(line: &[u8]) -> Result<serde_json::Value, String> {
    jq::record_value(line)
}

//! Context offload for agent message histories: compact, compress and auto,
//! with the semantics of ReMe's `MessageOffloadOp` (ReMe 0.3.1.10 was its
//! last release), as a library that knows nothing about transports.
//!
//! - **Compact** stores each large tool result, outside the recent
//!   messages, in a file and leaves a preview that points at it: reversible,
//!   and idempotent (the same history sent again writes nothing new).
//! - **Compress** summarises older messages, in groups that never split a
//!   tool call from its results, into `<state_snapshot>` blocks on the
//!   system message, and stores the originals as JSON.
//! - **Auto** compacts, then compresses when compaction kept more than
//!   `compact_ratio_threshold` of the tokens.
//!
//! ```
//! use lro_context::{ContextOffloader, OffloadRequest};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let body = serde_json::json!({
//!     "messages": [
//!         {"role": "user", "content": "Read the log."},
//!         {"role": "assistant", "content": null, "tool_calls": [
//!             {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
//!         {"role": "tool", "tool_call_id": "call_1", "content": "line\n".repeat(4_000)},
//!         {"role": "assistant", "content": "The log is clean."}
//!     ],
//!     "context_manage_mode": "compact",
//!     "max_total_tokens": 1000,
//!     "store_dir": dir.path(),
//! });
//! let (messages, params) = serde_json::from_value::<OffloadRequest>(body).unwrap().check().unwrap();
//! let out = ContextOffloader::new()
//!     .offload(&lro_core::principal::Principal::anonymous(), messages, &params)
//!     .unwrap();
//! assert_eq!(out.files.len(), 1);
//! assert_eq!(out.files[0].content, "line\n".repeat(4_000));
//! assert!(out.answer().starts_with("Successfully created and wrote to new file: "));
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod api;
mod error;
mod llm;
mod message;
mod offload;
mod params;
mod scope;
mod store;
mod summary;
mod telemetry;
mod tokens;
mod tree;

pub use error::ContextError;
pub use llm::OpenAiSummariser;
pub use message::{Message, parse_messages};
pub use offload::{ContextOffloader, FileKind, Offloaded, Stats, StoredFile, SummariserCall};
pub use params::{FileContents, Mode, OffloadRequest, Params, PreviewFormat};
pub use store::{Expired, GREP_MAX_MATCHES, READ_CAP, Roots, expire, grep, read_file};
pub use summary::{Extractive, Summariser};
pub use tokens::{CharsPerToken, TokenCounter};

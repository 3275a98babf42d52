//! Custodial cleanup of LRO offload files: the spec's `offload_cleanup` task.
//!
//! Offload files are ephemeral: each lives `ttl_seconds` (one hour by
//! default) from the moment its ULID was minted. This crate deletes expired
//! files, removes temp files of interrupted writes, optionally enforces a disk
//! quota (oldest first), and reports through `lro_core::event::emit`:
//! one `OffloadFileExpired` per deleted file and one `CleanupCompleted` per
//! run, which also sets the `lro_offload_files` / `lro_offload_disk_bytes`
//! gauges.
//!
//! | module | what it owns |
//! |---|---|
//! | [`cleanup`] | one synchronous pass: [`run_once`], [`CleanupPolicy`] |
//! | `store` | one pass over a shared object store: `run_store_once` (cargo feature `store`) |
//! | [`task`] | the scheduled task: [`OffloadCleanup`], [`CleanupHandle`] |
//!
//! It knows nothing about MCP: any process that writes offload files (the
//! `LroLayer`, the `lro proxy`) can run it.
//!
//! ```
//! use std::time::{Duration, SystemTime};
//! use lro_core::event::MemorySink;
//! use lro_scheduler::{CleanupPolicy, run_once};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let done = run_once(dir.path(), &CleanupPolicy::new(), SystemTime::now(), &MemorySink::new());
//! assert_eq!(done.files_remaining, 0);
//! assert_eq!(done.errors, 0);
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cleanup;
#[cfg(feature = "store")]
pub mod store;
pub mod task;

pub use cleanup::{CleanupPolicy, run_once};
#[cfg(feature = "store")]
pub use store::run_store_once;
pub use task::{CleanupHandle, OffloadCleanup, SchedulerError};

//! Workspace-wide checks that keep `ARCHITECTURE.md` true, in the manner of
//! rust-analyzer's tidy tests. The crate has no code: its tests read
//! `cargo metadata` and the repository's files.
//!
//! - `tests/dependencies.rs`: the dependency rules between crates (lro-core
//!   knows nothing of tokio, rmcp, hyper or axum; no library depends on
//!   lro-telemetry; ...).
//! - `tests/architecture_md.rs`: the code map names every crate, and the
//!   document links only to files inside the repository.
//! - `tests/error_display.rs`: no error prints its own source in its
//!   `Display` (the cause is `source()`'s alone).
//!
//! Run them with `cargo test -p lro-tidy`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

//! Everything that can go wrong in an extraction, each with a message a
//! model can act on.
//!
//! ```
//! use lro_extract::ExtractError;
//!
//! let err = ExtractError::InvalidRequest("recipe must be 1..=10, got 11".into());
//! assert_eq!(err.to_string(), "invalid request: recipe must be 1..=10, got 11");
//! assert_eq!(err.outcome(), lro_core::metric::label::ExtractOutcome::Error);
//! ```

use std::{path::PathBuf, time::Duration};

use lro_core::metric::label::ExtractOutcome;

/// Why an extraction failed.
///
/// Guard errors (`OutsideRoot`, `NotOffloadFile`, `SymlinkEscape`,
/// `NotFound`) are raised before a single byte of the file is read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExtractError {
    /// The path (after resolving `..` and symlinks) is not directly inside
    /// the configured offload directory.
    #[error(
        "{path} is outside the offload directory {root}; pass a file_path from an offload descriptor"
    )]
    OutsideRoot {
        /// The path as given.
        path: String,
        /// The configured offload directory.
        root: PathBuf,
    },
    /// The file name is not `atlatl-{operation}-{ULID}.jsonl`, or the path is
    /// not a regular file.
    #[error(
        "{path} is not an offload file (expected a regular file named atlatl-<operation>-<ULID>.jsonl)"
    )]
    NotOffloadFile {
        /// The path as given.
        path: String,
    },
    /// The path is a symlink whose target lies outside the offload directory
    /// or whose target is not an offload file.
    #[error(
        "{path} is a symlink to {target}, which is not an offload file in the offload directory"
    )]
    SymlinkEscape {
        /// The path as given.
        path: String,
        /// Where the symlink points.
        target: PathBuf,
    },
    /// No file at that path (it may have expired and been cleaned up).
    #[error("{path} does not exist (offload files expire; re-run the tool to get a fresh one)")]
    NotFound {
        /// The path as given.
        path: String,
    },
    /// The offload directory itself cannot be resolved.
    #[error("offload directory {root} is not usable")]
    BadRoot {
        /// The configured offload directory.
        root: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The first line is not a valid `lro_header`.
    #[error("bad offload file header: {0}")]
    BadHeader(String),
    /// The file does not hold what its header says was written (see
    /// `lro_core::integrity`).
    #[error("the offloaded result {path} cannot be read: {what}")]
    Damaged {
        /// The path as given.
        path: String,
        /// How it differs, for the reader.
        what: String,
    },
    /// Reading the file failed.
    #[error("cannot read {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The request is malformed: wrong combination of fields, value out of
    /// range, unknown parameter, invalid regex, and so on.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The jq filter does not parse or uses an undefined name; the message is
    /// jaq's, with the offending position.
    #[error("jq filter does not compile: {0}")]
    Compile(String),
    /// The jq filter failed while running (type error, `error(...)`, ...).
    #[error("jq error{}: {message}", .line.map(|l| format!(" at record line {l}")).unwrap_or_default())]
    Runtime {
        /// 1-based file line of the record being processed, when per-record.
        line: Option<usize>,
        /// jaq's message, shortened.
        message: String,
    },
    /// The query did not finish within the configured timeout; it was
    /// stopped.
    #[error("query stopped after {}ms timeout (it may loop forever or the file is too large); narrow it, e.g. with select(...) or limit(n; ...)", .limit.as_millis())]
    Timeout {
        /// The configured timeout.
        limit: Duration,
    },
    /// The first result alone is larger than `max_output_bytes` and is not an
    /// array or string that could be shortened.
    #[error(
        "the first result is larger than the {limit}-byte output limit; select fewer fields (e.g. {{id, title}}) or smaller parts"
    )]
    OutputLimit {
        /// The bytes of output still available when the result came.
        limit: usize,
    },
    /// The query needed more memory than its budget; its worker process was
    /// stopped (and replaced), nothing else was affected.
    #[error(
        "the query needed more than {} MiB and was stopped ({how}); narrow it: select the records and fields you need first (select(...), {{id, title}}, limit(n; ...), or the structured form), and avoid building large values such as big strings or slurped copies",
        .budget / (1024 * 1024)
    )]
    MemoryLimit {
        /// The memory budget in bytes.
        budget: usize,
        /// How the worker ended, e.g. `its worker ended with SIGABRT`.
        how: String,
    },
    /// Every extraction slot stayed taken for the whole queue timeout.
    #[error(
        "lro_extract is busy: {reason}, and no slot freed up in {}s; try again in a moment",
        .waited.as_secs()
    )]
    Busy {
        /// Which limit was full (per caller or in total).
        reason: String,
        /// How long the call waited.
        waited: Duration,
    },
    /// The isolation could not run the query at all: the worker program
    /// did not start, did not answer the handshake, or broke the protocol.
    /// The query was not run in-process instead.
    #[error("lro_extract cannot run the query in a worker process: {0}")]
    Isolation(String),
}

impl ExtractError {
    /// How a call that failed with this error ended, for events and metrics.
    pub fn outcome(&self) -> ExtractOutcome {
        match self {
            ExtractError::Timeout { .. } => ExtractOutcome::Timeout,
            _ => ExtractOutcome::Error,
        }
    }

    /// Whether the error comes from a path guard (nothing was read).
    pub fn is_guard(&self) -> bool {
        matches!(
            self,
            ExtractError::OutsideRoot { .. }
                | ExtractError::NotOffloadFile { .. }
                | ExtractError::SymlinkEscape { .. }
                | ExtractError::NotFound { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_message_names_the_line_when_known() {
        let e = ExtractError::Runtime {
            line: Some(7),
            message: "cannot index string".into(),
        };
        assert_eq!(
            e.to_string(),
            "jq error at record line 7: cannot index string"
        );
        let e = ExtractError::Runtime {
            line: None,
            message: "x".into(),
        };
        assert_eq!(e.to_string(), "jq error: x");
    }

    #[test]
    fn outcomes_and_guard_flags() {
        let t = ExtractError::Timeout {
            limit: Duration::from_millis(300),
        };
        assert_eq!(t.outcome(), ExtractOutcome::Timeout);
        assert!(t.to_string().contains("300ms"));
        assert!(!t.is_guard());
        assert!(ExtractError::NotFound { path: "x".into() }.is_guard());
    }
}

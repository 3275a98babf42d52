//! The CLI's errors, and the exit-status table every subcommand follows.
//!
//! | status | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | a failure at run time: an unreadable or refused file, a timeout, cleanup errors, a proxy upstream that cannot be started or reached, or that exits |
//! | 2 | a usage error: bad flags or values, conflicting modes, a filter that does not compile |
//!
//! A subcommand may add codes of its own above 2; it documents them in its
//! `--help`. `lro audit` exits 3 when its target cannot be launched or
//! reached, and 1 when `--require-level` is not met. `lro extract` exits
//! as jq 1.6 does on the same records: 5 when the filter failed on the
//! last record, 4 when a record is one jq cannot read (nested too deep, or
//! a lone high surrogate escape). For these two it prints nothing more:
//! jq's error lines and one line per record left out said it all
//! ([`CliError::is_told`]).
//!
//! ```
//! use lro_cli::error::{CliError, EXIT_FAILURE, EXIT_USAGE};
//!
//! assert_eq!(CliError::Usage("--lines needs OFFSET:LIMIT".into()).exit_status(), EXIT_USAGE);
//! assert_eq!(CliError::CleanupErrors(2).exit_status(), EXIT_FAILURE);
//! ```

use std::{io, path::PathBuf};

use lro_extract::ExtractError;

/// Exit status on success.
pub const EXIT_SUCCESS: u8 = 0;
/// Exit status of a failure at run time.
pub const EXIT_FAILURE: u8 = 1;
/// Exit status of a usage error (the same as clap's for bad flags).
pub const EXIT_USAGE: u8 = 2;
/// Exit status of `lro audit` when the target cannot be launched or reached.
pub const EXIT_UNREACHABLE: u8 = 3;
/// Exit status of `lro extract` when a record is one jq 1.6 cannot read
/// (jq's own status for text it cannot read).
pub const EXIT_UNREAD: u8 = 4;
/// Exit status of `lro extract` when the filter failed on the last record
/// (jq 1.6's).
pub const EXIT_FILTER_FAILED: u8 = 5;

/// The exit-status table, as printed at the end of `lro --help`.
pub const EXIT_STATUS_HELP: &str = "\
Exit status (every subcommand):
  0  success
  1  failure at run time: an unreadable or refused file, a timeout, cleanup errors,
     an upstream that cannot be started or reached, or that exits
  2  usage error: bad flags or values, conflicting modes, a filter that does not compile
  3  lro audit only: the target cannot be launched or reached
  4  lro extract only: a record jq 1.6 cannot read (nested too deep, a lone
     high surrogate escape) was left out
  5  lro extract only: the filter failed on the last record, as jq 1.6 exits";

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// The command line asks for something impossible.
    #[error("{0}")]
    Usage(String),
    /// Extraction (or the path guard in front of it) failed.
    #[error(transparent)]
    Extract(#[from] ExtractError),
    /// The offload file's header could not be read.
    #[error(transparent)]
    Read(#[from] lro_core::file::ReadError),
    /// A path could not be resolved or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// Writing to stdout failed.
    #[error("cannot write the output: {0}")]
    Output(io::Error),
    /// `lro gc` was given something that is not a directory.
    #[error("{} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// Cleanup ran but could not remove some files.
    #[error("{0} files could not be cleaned up")]
    CleanupErrors(usize),
    /// The proxy's upstream could not be started, reached or kept.
    #[error(transparent)]
    Proxy(#[from] lro_proxy::ProxyError),
    /// `lro audit` could not launch or reach its target.
    #[error(transparent)]
    Unreachable(lro_audit::AuditError),
    /// `lro audit` proved a lower level than `--require-level` asks.
    #[error("--require-level {required} not met: {verdict}")]
    LevelNotMet {
        /// The level asked for.
        required: u8,
        /// The audit's verdict line.
        verdict: String,
    },
    /// `lro extract`: records jq 1.6 cannot read were left out.
    #[error("{0} record(s) that jq 1.6 cannot read were left out")]
    Unread(usize),
    /// `lro extract`: the filter failed on the last record; every error was
    /// printed as jq prints it.
    #[error("the filter failed on the last record ({0} record(s) failed)")]
    FilterFailed(usize),
    /// A failure at run time with its own sentence (the upstream was lost, a
    /// runtime or exporter could not start).
    #[error("{0}")]
    Runtime(String),
}

impl CliError {
    /// The process exit status for this error (see the table above).
    pub fn exit_status(&self) -> u8 {
        match self {
            CliError::Usage(_)
            | CliError::Extract(ExtractError::InvalidRequest(_) | ExtractError::Compile(_)) => {
                EXIT_USAGE
            }
            CliError::Unreachable(_) => EXIT_UNREACHABLE,
            CliError::Unread(_) => EXIT_UNREAD,
            CliError::FilterFailed(_) => EXIT_FILTER_FAILED,
            _ => EXIT_FAILURE,
        }
    }
}

impl CliError {
    /// Whether what went wrong was told already, on the error stream, as
    /// jq 1.6 tells it (`lro extract`'s failed and unread records): the
    /// exit status is then all that is added, as jq adds nothing.
    pub fn is_told(&self) -> bool {
        matches!(self, CliError::Unread(_) | CliError::FilterFailed(_))
    }
}

/// Every reason an HTTP face refuses to start is the operator's to fix:
/// a bad token entry or origin, or a non-loopback address without tokens.
impl From<lro_http::GuardError> for CliError {
    fn from(err: lro_http::GuardError) -> Self {
        Self::Usage(err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_errors_are_told_apart_from_run_time_failures() {
        let usage = CliError::from(ExtractError::Compile("map(".into()));
        assert_eq!(usage.exit_status(), EXIT_USAGE);
        let timeout = CliError::from(ExtractError::Timeout {
            limit: std::time::Duration::from_millis(1),
        });
        assert_eq!(timeout.exit_status(), EXIT_FAILURE);
        assert_ne!(EXIT_SUCCESS, EXIT_FAILURE);
    }
}

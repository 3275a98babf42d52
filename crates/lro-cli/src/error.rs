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

use std::{error::Error, io, path::PathBuf};

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

/// Why a command failed. Its `Display` is this level alone; the causes
/// are its `source()` chain, which `lro` prints on stderr through
/// [`lro_core::error::chain`], `lro: what: cause: cause`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// The command line asks for something impossible.
    #[error("{0}")]
    Usage(String),
    /// A value from the command line or stdin was refused by what reads it;
    /// the text names the flag or input (`--config`, `--store-root`).
    #[error("{what}")]
    Refused {
        /// The flag or input, or what was being done with it.
        what: String,
        /// Why it was refused.
        #[source]
        source: Box<dyn Error + Send + Sync>,
    },
    /// The offload configuration (file or environment) is invalid.
    #[error(transparent)]
    Config(#[from] lro_core::ConfigError),
    /// A context request is invalid, or its store cannot be used.
    #[error(transparent)]
    Context(#[from] lro_context::ContextError),
    /// An HTTP face refuses to start: a bad token entry or origin, or a
    /// non-loopback address without tokens; each is the operator's to fix.
    #[error(transparent)]
    Guard(#[from] lro_http::GuardError),
    /// Extraction (or the path guard in front of it) failed.
    #[error(transparent)]
    Extract(#[from] ExtractError),
    /// The offload file's header could not be read.
    #[error(transparent)]
    Read(#[from] lro_core::file::ReadError),
    /// A path could not be resolved or read.
    #[error("{}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// Writing to stdout failed.
    #[error("cannot write the output")]
    Output(#[source] io::Error),
    /// `lro gc` was given something that is not a directory.
    #[error("{} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// Cleanup ran but could not remove some files.
    #[error("{0} files could not be cleaned up")]
    CleanupErrors(usize),
    /// The proxy's upstream could not be started, reached or kept.
    #[error(transparent)]
    Proxy(#[from] lro_proxy::ProxyError),
    /// A host could not start: telemetry, the cleanup task, the store or
    /// the principal key.
    #[error(transparent)]
    Host(lro_host::HostError),
    /// `lro context serve` could not listen or serve.
    #[error(transparent)]
    ContextServe(#[from] lro_context_http::ServeError),
    /// `lro install` could not read or write a client's configuration.
    #[error(transparent)]
    Install(#[from] lro_install::Error),
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
    /// A failure at run time, and what was being done (starting the
    /// runtime, opening the offload store).
    #[error("{what}")]
    Failed {
        /// What was being done.
        what: &'static str,
        /// Why it failed.
        #[source]
        source: Box<dyn Error + Send + Sync>,
    },
    /// A failure at run time with its own sentence (the upstream was lost,
    /// no configuration file was found).
    #[error("{0}")]
    Runtime(String),
}

impl CliError {
    /// The process exit status for this error (see the table above).
    pub fn exit_status(&self) -> u8 {
        match self {
            CliError::Usage(_)
            | CliError::Refused { .. }
            | CliError::Config(_)
            | CliError::Context(_)
            | CliError::Guard(_)
            | CliError::Extract(ExtractError::InvalidRequest(_) | ExtractError::Compile(_)) => {
                EXIT_USAGE
            }
            CliError::Unreachable(_) => EXIT_UNREACHABLE,
            CliError::Unread(_) => EXIT_UNREAD,
            CliError::FilterFailed(_) => EXIT_FILTER_FAILED,
            _ => EXIT_FAILURE,
        }
    }

    /// A value refused by what reads it: a usage error naming `what`.
    pub(crate) fn refused(
        what: impl Into<String>,
        source: impl Into<Box<dyn Error + Send + Sync>>,
    ) -> Self {
        Self::Refused {
            what: what.into(),
            source: source.into(),
        }
    }

    /// A failure at run time while doing `what`.
    pub(crate) fn failed(
        what: &'static str,
        source: impl Into<Box<dyn Error + Send + Sync>>,
    ) -> Self {
        Self::Failed {
            what,
            source: source.into(),
        }
    }
}

/// The host's start-up failures in the exit-status table: a bad context
/// store root is the caller's (2), the rest are run-time failures (1).
impl From<lro_host::HostError> for CliError {
    fn from(err: lro_host::HostError) -> Self {
        match err {
            lro_host::HostError::ContextStoreRoots(source) => {
                Self::refused("--context-store-root", source)
            }
            other => Self::Host(other),
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

    #[test]
    fn a_cause_is_kept_as_the_source_not_glued_into_the_text() {
        let refused = CliError::refused("--config", io::Error::other("no such key"));
        assert_eq!(refused.to_string(), "--config");
        assert_eq!(
            lro_core::error::chain(&refused).to_string(),
            "--config: no such key"
        );
        assert_eq!(refused.exit_status(), EXIT_USAGE);
        let failed = CliError::failed("cannot start the runtime", io::Error::other("no threads"));
        assert!(std::error::Error::source(&failed).is_some());
        assert_eq!(failed.exit_status(), EXIT_FAILURE);
    }
}

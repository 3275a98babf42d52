//! How a stdio child ended, and how long it is given to end: what both the
//! child's keeper ([`crate::child`]) and its transport
//! ([`crate::transport`]) need.

use std::{fmt, process::ExitStatus, time::Duration};

use lro_core::metric::UpstreamExit;

/// How long a child has to exit after its stdin closes, and again after
/// SIGTERM, before the next step.
pub(crate) const GRACE: Duration = Duration::from_secs(2);

/// How a child ended.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChildExit {
    pub(crate) status: ExitStatus,
    /// The proxy ended it (session over), rather than the child on its own.
    pub(crate) by_proxy: bool,
}

impl fmt::Display for ChildExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use std::os::unix::process::ExitStatusExt as _;
        match (self.status.code(), self.status.signal()) {
            (Some(code), _) => write!(f, "exited with status {code}"),
            (None, Some(signal)) => write!(f, "was killed by signal {signal}"),
            (None, None) => write!(f, "ended ({})", self.status),
        }
    }
}

impl ChildExit {
    pub(crate) fn reason(&self) -> UpstreamExit {
        if self.by_proxy {
            UpstreamExit::Shutdown
        } else if self.status.success() {
            UpstreamExit::Exited
        } else {
            UpstreamExit::Failed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_read_as_sentences() {
        use std::os::unix::process::ExitStatusExt as _;
        let code = ChildExit {
            status: ExitStatus::from_raw(3 << 8),
            by_proxy: false,
        };
        assert_eq!(code.to_string(), "exited with status 3");
        assert_eq!(code.reason(), UpstreamExit::Failed);
        let signal = ChildExit {
            status: ExitStatus::from_raw(9),
            by_proxy: true,
        };
        assert_eq!(signal.to_string(), "was killed by signal 9");
        assert_eq!(signal.reason(), UpstreamExit::Shutdown);
    }
}

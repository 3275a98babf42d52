//! What can go wrong when the proxy sets up or loses its upstream.

use std::{error::Error, fmt, io};

use lro_upstream::redact_urls;

/// A failure to set up the proxy or to open an upstream session.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// The upstream command could not be started.
    #[error("cannot start upstream command `{command}`")]
    Spawn {
        /// The command as given.
        command: String,
        /// Why the operating system refused.
        #[source]
        source: io::Error,
    },
    /// The upstream did not complete the MCP `initialize` handshake.
    #[error("upstream {upstream} did not initialize")]
    Initialize {
        /// The command or URL.
        upstream: String,
        /// What happened instead: rmcp's error, the child's exit status when
        /// it died, or the timeout. An HTTP upstream's error reads with its
        /// URLs redacted, its causes too.
        #[source]
        source: Box<dyn Error + Send + Sync>,
    },
    /// The HTTP upstream cannot be reached.
    #[error("upstream {url} is unreachable")]
    Unreachable {
        /// The URL.
        url: String,
        /// Why: the URL does not parse, the connection failed, or it timed
        /// out.
        #[source]
        source: Box<dyn Error + Send + Sync>,
    },
    /// Every child slot of a command upstream is in use (`--max-sessions`)
    /// by calls in progress or other principals' sessions.
    #[error(
        "too many sessions: all {max} upstream children are in use (--max-sessions); retry shortly, or close an idle session"
    )]
    TooManySessions {
        /// The configured maximum.
        max: usize,
    },
    /// The caller's principal holds its share of the child slots, each
    /// with a call in progress.
    #[error(
        "too many sessions for one caller: each holds at most {share} of the {max} upstream children (--max-sessions), and all of yours have a call in progress; retry when one ends, or close a session"
    )]
    PrincipalShare {
        /// The most one principal may hold.
        share: usize,
        /// The configured maximum.
        max: usize,
    },
    /// The HTTP face could not bind its address.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// Why binding failed.
        #[source]
        source: io::Error,
    },
    /// Serving the client failed: rmcp's error on stdio (the session never
    /// started), the server's I/O error on HTTP.
    #[error("serving the client failed")]
    Serve(#[source] Box<dyn Error + Send + Sync>),
}

impl ProxyError {
    /// This error as the JSON-RPC error the client receives, its causes
    /// in the message.
    pub(crate) fn into_mcp(self) -> rmcp::ErrorData {
        rmcp::ErrorData::internal_error(lro_core::error::chain(&self).to_string(), None)
    }

    /// The HTTP status of a refusal at a slot cap: 503 when every slot is
    /// taken, 429 when the caller holds its share; `None` for the rest.
    pub(crate) fn cap_status(&self) -> Option<http::StatusCode> {
        match self {
            Self::TooManySessions { .. } => Some(http::StatusCode::SERVICE_UNAVAILABLE),
            Self::PrincipalShare { .. } => Some(http::StatusCode::TOO_MANY_REQUESTS),
            _ => None,
        }
    }
}

/// An error whose text, and each of its causes' texts, has its URLs
/// redacted (see [`redact_urls`]): the causes of an HTTP upstream's failure
/// name its URL, which may hold credentials. The chain keeps its shape; the
/// original types are dropped with the URLs in them.
#[derive(Debug)]
pub(crate) struct Redacted {
    text: String,
    source: Option<Box<Redacted>>,
}

impl Redacted {
    pub(crate) fn new(err: &(dyn Error + 'static)) -> Self {
        Self {
            text: redact_urls(&err.to_string()),
            source: err.source().map(|cause| Box::new(Self::new(cause))),
        }
    }
}

impl fmt::Display for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Error for Redacted {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source
            .as_deref()
            .map(|cause| cause as &(dyn Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacted_errors_hide_urls_down_the_chain() {
        let inner = io::Error::other("refused by https://u:p@h/mcp?k=v");
        let outer = ProxyError::Bind {
            addr: "127.0.0.1:1".parse().unwrap(),
            source: inner,
        };
        let redacted = Redacted::new(&outer);
        assert_eq!(
            redacted.source().unwrap().to_string(),
            "refused by https://…@h/mcp?…"
        );
        assert!(!redacted.to_string().contains("u:p"), "{redacted}");
    }
}

/// The source of a [`ProxyError::Initialize`] whose handshake the upstream
/// answered with a JSON-RPC error: it is up, and refuses `initialize` (a
/// server that speaks MCP 2026-07-28 only, say).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub(crate) struct Refused(pub(crate) Box<dyn Error + Send + Sync>);

impl ProxyError {
    /// Whether the upstream answered the handshake with an error (see
    /// [`Refused`]).
    pub(crate) fn refused_handshake(&self) -> bool {
        matches!(self, ProxyError::Initialize { source, .. } if source.is::<Refused>())
    }
}

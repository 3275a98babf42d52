//! What can go wrong when the proxy sets up or loses its upstream.

use std::io;

/// A failure to set up the proxy or to open an upstream session.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// The upstream command could not be started.
    #[error("cannot start upstream command `{command}`: {source}")]
    Spawn {
        /// The command as given.
        command: String,
        /// Why the operating system refused.
        #[source]
        source: io::Error,
    },
    /// The upstream did not complete the MCP `initialize` handshake.
    #[error("upstream {upstream} did not initialize: {reason}")]
    Initialize {
        /// The command or URL.
        upstream: String,
        /// What happened instead, with the child's exit status when it died.
        reason: String,
    },
    /// A `--header` is not `Name: value`, or names an unset variable.
    #[error("invalid header `{header}`: {reason}")]
    Header {
        /// The header as given, with its value elided.
        header: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The upstream URL is not an `http` or `https` URL.
    #[error("invalid upstream URL `{url}`: {reason}")]
    Url {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The HTTP upstream cannot be reached.
    #[error("upstream {url} is unreachable: {reason}")]
    Unreachable {
        /// The URL.
        url: String,
        /// The connection error.
        reason: String,
    },
    /// Every child slot of a command upstream is in use (`--max-sessions`).
    #[error(
        "too many sessions: {max} upstream children are running, one per session (raise --max-sessions, or close a session)"
    )]
    TooManySessions {
        /// The configured maximum.
        max: usize,
    },
    /// The HTTP face could not bind its address.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// Why binding failed.
        #[source]
        source: io::Error,
    },
    /// Serving the client failed.
    #[error("serving the client failed: {0}")]
    Serve(String),
}

impl ProxyError {
    /// This error as the JSON-RPC error the client receives.
    pub(crate) fn into_mcp(self) -> rmcp::ErrorData {
        rmcp::ErrorData::internal_error(self.to_string(), None)
    }
}

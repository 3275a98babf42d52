//! The flags every HTTP face takes (feature `clap`), flattened into each
//! host's command line so the three read alike.
//!
//! ```
//! use clap::Parser;
//! use lro_http::cli::HttpArgs;
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     http: HttpArgs,
//! }
//!
//! let cli = Cli::parse_from(["x", "--bearer", "tok=alice", "--header-read-timeout", "5"]);
//! let guard = cli.http.guard("0.0.0.0:8080".parse()?, lro_http::serve::Limits::mcp(), |_| None)?;
//! assert!(guard.authenticated());
//! assert_eq!(guard.bounds().header_read_timeout.as_secs(), 5);
//! let bare = Cli::parse_from(["x"]);
//! assert!(bare.http.guard("0.0.0.0:8080".parse()?, lro_http::serve::Limits::mcp(), |_| None).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use clap::Args;

use crate::{
    Guard, GuardError,
    auth::{TOKENS_ENV, Tokens},
    serve::Limits,
};

/// Authentication, origins and bounds of an HTTP face.
#[derive(Debug, Clone, Default, Args)]
#[non_exhaustive]
pub struct HttpArgs {
    /// Require `Authorization: Bearer TOKEN` and call its bearer PRINCIPAL;
    /// repeat for more. Visible in `ps`: prefer --bearer-file or the
    /// LRO_BEARER_TOKENS variable (TOKEN=PRINCIPAL entries separated by
    /// newlines or commas), which add to these.
    #[arg(long = "bearer", value_name = "TOKEN=PRINCIPAL")]
    pub bearer: Vec<String>,
    /// Read TOKEN=PRINCIPAL lines from FILE (`#` starts a comment); repeat
    /// for more.
    #[arg(long = "bearer-file", value_name = "FILE")]
    pub bearer_files: Vec<PathBuf>,
    /// Listen on a non-loopback address without any token.
    #[arg(long)]
    pub allow_unauthenticated: bool,
    /// Also accept requests from this browser origin (scheme://host[:port]);
    /// loopback pages are always accepted. Repeat for more.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origins: Vec<String>,
    /// Connections open at once; past it, a new one closes the connection
    /// idle longest (never one in a request), or waits to be accepted when
    /// every one is in a request [default: 1024, or half the open-file
    /// limit when lower].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: Option<u32>,
    /// Requests in progress at once; past it, a request waits, then gets 503
    /// [default: 256; lro context serve: 2 per CPU].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_requests: Option<u32>,
    /// Close a connection whose request head has not arrived after this
    /// many seconds (also an idle keep-alive connection) [default: 10].
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub header_read_timeout: Option<u64>,
    /// Refuse a request whose body has not arrived whole after this many
    /// seconds [default: 30; lro context serve: 60].
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub body_read_timeout: Option<u64>,
}

impl HttpArgs {
    /// The tokens of `--bearer`, `--bearer-file` and the
    /// [`TOKENS_ENV`] variable, read through `env`.
    ///
    /// # Errors
    ///
    /// A refused entry or an unreadable file, named.
    pub fn tokens(&self, env: impl Fn(&str) -> Option<String>) -> Result<Tokens, GuardError> {
        let mut tokens = Tokens::new();
        for entry in &self.bearer {
            tokens.add_entry(entry, "--bearer")?;
        }
        for file in &self.bearer_files {
            tokens.add_file(file)?;
        }
        if let Some(list) = env(TOKENS_ENV) {
            tokens.add_list(&list, TOKENS_ENV)?;
        }
        Ok(tokens)
    }

    /// The face's [`Guard`] on `bind`, with `defaults` overridden by the
    /// flags, refusing a non-loopback address without tokens unless
    /// `--allow-unauthenticated`.
    ///
    /// # Errors
    ///
    /// [`GuardError`]: a usage error, every variant.
    pub fn guard(
        &self,
        bind: SocketAddr,
        defaults: Limits,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Guard, GuardError> {
        let mut limits = defaults;
        if let Some(n) = self.max_connections {
            limits = limits.max_connections(n as usize);
        }
        if let Some(n) = self.max_requests {
            limits = limits.max_requests(n as usize);
        }
        if let Some(s) = self.header_read_timeout {
            limits = limits.header_read_timeout(Duration::from_secs(s));
        }
        if let Some(s) = self.body_read_timeout {
            limits = limits.body_read_timeout(Duration::from_secs(s));
        }
        Guard::new(bind, self.tokens(env)?)
            .allow_origins(&self.allow_origins)?
            .limits(limits)
            .protected(self.allow_unauthenticated)
    }
}

//! The MCP server a command talks to, as `lro proxy` and `lro audit` both
//! take it: a command after `--`, or `--url` with `--header`s. Each command
//! words the help for its own case (`mut_arg`).
//!
//! ```
//! use clap::Parser;
//! use lro_cli::cli::{Cli, Command};
//!
//! let cli = Cli::try_parse_from(["lro", "proxy", "--url", "http://127.0.0.1:1/mcp", "-H", "A: b"]).unwrap();
//! let Command::Proxy(args) = cli.command else { panic!() };
//! assert_eq!(args.server.url.as_deref(), Some("http://127.0.0.1:1/mcp"));
//! assert_eq!(args.server.headers, ["A: b"]);
//! assert!(args.server.command.is_empty());
//! ```

use std::ffi::OsString;

use clap::Args;
use lro_proxy::{Upstream, UpstreamError};

use crate::error::CliError;

/// A server named by a command or a URL, never both.
#[derive(Debug, Args)]
#[non_exhaustive]
pub struct ServerArgs {
    /// The server's command and arguments, after `--`.
    #[arg(
        last = true,
        value_name = "COMMAND",
        required_unless_present = "url",
        conflicts_with = "url"
    )]
    pub command: Vec<OsString>,
    /// A streamable-HTTP server instead of a command.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// A header sent to the URL, `Name: value`; `${VAR}` in the value is
    /// read from the environment. Repeat for more.
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
}

/// A streamable-HTTP upstream from `--url` and `--header` values, with
/// `${VAR}` in header values expanded from `env`: one parsing, so both
/// commands take the same headers.
///
/// # Errors
///
/// A usage error naming the flag.
pub(crate) fn http_upstream(
    url: &str,
    headers: &[String],
    env: impl Fn(&str) -> Option<String>,
) -> Result<Upstream, CliError> {
    let usage = |flag: &str, err: UpstreamError| CliError::refused(flag, err);
    headers.iter().try_fold(
        Upstream::http(url).map_err(|e| usage("--url", e))?,
        |upstream, header| {
            upstream
                .header(header, &env)
                .map_err(|e| usage("--header", e))
        },
    )
}

//! `lro proxy`: Large Result Offloading in front of any MCP server. A thin
//! shell over `lro_proxy`, wrapped by `lro_tower::LroLayer`, with the same
//! configuration, metrics, traces and cleanup as the demo server.
//!
//! ```
//! use clap::Parser;
//! use lro_cli::cli::{Cli, Command};
//!
//! let cli = Cli::try_parse_from(["lro", "proxy", "--", "python3", "server.py", "--port", "1"]).unwrap();
//! let Command::Proxy(args) = cli.command else { panic!() };
//! assert_eq!(args.server.command, ["python3", "server.py", "--port", "1"]);
//! assert!(Cli::try_parse_from(["lro", "proxy"]).is_err(), "an upstream is required");
//! ```

use std::{net::SocketAddr, path::PathBuf};

use clap::Args;
use lro_core::OffloadConfig;
use lro_host::{Host, Offload};
use lro_proxy::{Proxy, ProxyConfig, ProxyShared, Upstream, serve};
use tower_layer::Layer as _;

use crate::{
    error::CliError,
    server::{ServerArgs, http_upstream},
};

/// `lro proxy`.
#[derive(Debug, Args)]
#[non_exhaustive]
#[command(
    after_help = "Examples:\n  lro proxy -- npx -y @modelcontextprotocol/server-everything\n  lro proxy --url https://mcp.example.com/mcp --header 'Authorization: Bearer ${TOKEN}'\n  lro proxy --http 127.0.0.1:8080 -- python3 server.py\n\nConfiguration: --config FILE ([prompt.offload]) and ATLATL_PROMPT__OFFLOAD__* variables;\nper-tool overrides are keyed by the upstream's tool names.",
    mut_arg("command", |a| a.help("The upstream server's command and arguments, after `--`: spawned as a stdio child (one per client session)")),
    mut_arg("url", |a| a.help("A streamable-HTTP upstream instead of a command")),
    mut_arg("headers", |a| a.help("A header sent to the HTTP upstream, `Name: value`; `${VAR}` in the value is read from the environment. Repeat for more. Values are never logged")),
)]
pub struct ProxyArgs {
    /// The upstream: a command (one stdio child per client session) or a
    /// URL.
    #[command(flatten)]
    pub server: ServerArgs,
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio. Port 0
    /// picks a free port; the bound address is printed to stderr.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Authentication, origins and bounds of the --http face.
    #[command(flatten)]
    pub http_face: lro_http::cli::HttpArgs,
    /// Children of a command upstream running at once behind --http: one
    /// per 2025-11-25 session, one per principal for sessionless (MCP
    /// 2026-07-28) requests, counted together. With bearer tokens each
    /// principal holds at most half (at least one); at the limit a newcomer
    /// takes its own principal's idle session or child, or another's idle
    /// sessionless child, never another's session; else it gets HTTP 503
    /// (429 at its share) with a JSON-RPC error.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_sessions: u32,
    /// Behind --http, end a session after this many seconds without a
    /// message in either direction and with no call in progress, with its
    /// upstream child: a client that vanished without closing its session
    /// frees its --max-sessions slot. A call in progress is activity, however
    /// long it runs. The same holds for the upstream that serves one
    /// principal's sessionless (MCP 2026-07-28) requests. 0 never ends an
    /// idle session.
    #[arg(long, value_name = "SECONDS", default_value_t = lro_proxy::serve::DEFAULT_SESSION_IDLE_TIMEOUT.as_secs())]
    pub session_idle_timeout: u64,
    /// End a request the upstream has not answered within this many
    /// seconds, counted again from each of its progress notifications: the
    /// client gets a JSON-RPC error naming the timeout, the upstream a
    /// cancellation. 0 waits for ever.
    #[arg(long, value_name = "SECONDS", default_value_t = lro_proxy::DEFAULT_REQUEST_TIMEOUT.as_secs())]
    pub request_timeout: u64,
    /// TOML file with a `[prompt.offload]` section; `ATLATL_PROMPT__OFFLOAD__*`
    /// variables override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR", value_parser = lro_telemetry::parse_metrics_addr)]
    pub metrics: Option<SocketAddr>,
    /// Add the context-offload tools (context_offload, context_grep,
    /// context_read_file), confined to this store root; repeat for more.
    #[arg(long = "context-store-root", value_name = "DIR")]
    pub context_store_roots: Vec<PathBuf>,
}

impl ProxyArgs {
    /// `--request-timeout`, `None` for 0 (no timeout).
    pub fn request_timeout(&self) -> Option<std::time::Duration> {
        (self.request_timeout > 0).then(|| std::time::Duration::from_secs(self.request_timeout))
    }

    /// The upstream these arguments name, with header variables expanded
    /// from `env`.
    ///
    /// # Errors
    ///
    /// A usage error naming the flag.
    pub fn upstream(&self, env: impl Fn(&str) -> Option<String>) -> Result<Upstream, CliError> {
        match (&self.server.url, self.server.command.split_first()) {
            (Some(url), _) => http_upstream(url, &self.server.headers, env),
            (None, _) if !self.server.headers.is_empty() => Err(CliError::Usage(
                "--header: headers go to an HTTP upstream; add --url".into(),
            )),
            (None, Some((program, args))) => Ok(Upstream::command(program, args)),
            (None, None) => Err(CliError::Usage(
                "name the upstream: `lro proxy -- COMMAND [ARGS]` or `lro proxy --url URL`".into(),
            )),
        }
    }
}

/// Runs the proxy until the client goes away, a signal arrives, or the
/// upstream is lost.
///
/// # Errors
///
/// A usage error (exit 2) for bad flags or configuration; a run-time failure
/// (exit 1) when the upstream cannot be started or reached, or is lost.
pub fn proxy(args: &ProxyArgs) -> Result<(), CliError> {
    let upstream = args.upstream(|var| std::env::var(var).ok())?;
    let cfg = OffloadConfig::load(args.config.as_deref())
        .map_err(|err| CliError::refused("--config", err))?;
    let guard = args
        .http
        .map(|addr| {
            args.http_face
                .guard(addr, lro_http::serve::Limits::mcp(), |var| {
                    std::env::var(var).ok()
                })
        })
        .transpose()?;
    // One thread forwards for every session. rmcp hands each notification
    // to a task of its own; on one thread those tasks run in the order the
    // messages came, so progress stays in order and ahead of its answer
    // (worker threads reordered them). It also saves the hand-offs between
    // workers; offload writes and queries still run on the blocking pool.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| CliError::failed("cannot start the runtime", err))?;
    let result = runtime.block_on(run(args, upstream, cfg, guard));
    // A read of a stdin that is not a pipe sits in a blocking thread that
    // nothing can interrupt; the client may keep stdin open after the
    // upstream is gone, so do not wait for it.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    result
}

async fn run(
    args: &ProxyArgs,
    upstream: Upstream,
    cfg: OffloadConfig,
    guard: Option<lro_http::Guard>,
) -> Result<(), CliError> {
    let host = Host::builder("lro-proxy")
        .name("lro proxy")
        // rmcp logs every session's peer info at info: noise on a proxy's
        // stderr, which the client may show its user.
        .log_filter("info,rmcp=warn")
        .metrics_addr(args.metrics)
        .install()?;
    // Each child runs under this executable as its watchdogs (see main.rs),
    // so no upstream process outlives the proxy, even one killed with SIGKILL.
    let watchdog = std::env::current_exe()
        .inspect_err(|err| {
            tracing::warn!(err = %lro_core::error::chain(err), "no watchdog: upstream processes may outlive a killed proxy");
        })
        .ok();
    let idle = (args.session_idle_timeout > 0)
        .then(|| std::time::Duration::from_secs(args.session_idle_timeout));
    let shared = ProxyShared::new(
        ProxyConfig::new(upstream)
            .max_sessions(args.max_sessions as usize)
            .request_timeout(args.request_timeout())
            // The stdio face's one client keeps its upstream as long as it
            // stays; on HTTP, a principal's sessionless upstream is reclaimed
            // like a session.
            .sessionless_idle_timeout(args.http.and(idle))
            .watchdog(watchdog),
    );
    shared.preflight().await?;
    let offload = Offload::new(cfg).context_store_roots(args.context_store_roots.iter().cloned());
    host.run(offload, |layer, shutdown| async move {
        // The upstream offloads nothing behind the proxy flag: its own
        // `lro_extract` or context tools would read without the caller's
        // principal, so the layer's answer and the upstream's are hidden.
        let layer = layer.own_tools_win(true);
        let served = match args.http.zip(guard) {
            None => {
                let handler = layer.layer(Proxy::new(shared.clone()));
                match serve::stdio(handler, &shared, shutdown).await {
                    Ok(serve::Stopped::UpstreamLost(why) | serve::Stopped::UpstreamFailed(why)) => {
                        Err(CliError::Runtime(why))
                    }
                    Ok(_) => Ok(()),
                    Err(err) => Err(err.into()),
                }
            }
            Some((addr, guard)) => {
                let make = {
                    let shared = shared.clone();
                    move || layer.layer(Proxy::new(shared.clone()))
                };
                let options = serve::HttpOptions::new().session_idle_timeout(idle);
                serve::http(addr, options, guard, make, shutdown, |bound| {
                    // The one line tests and scripts wait for.
                    eprintln!("lro proxy listening on http://{bound}{}", serve::MCP_PATH);
                })
                .await
                .map_err(CliError::from)
            }
        };
        // The children go before the cleanup task and telemetry.
        shared.shutdown().await;
        served
    })
    .await
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;
    use lro_core::error::chain;

    use crate::cli::{Cli, Command};

    fn args(argv: &[&str]) -> Result<super::ProxyArgs, clap::Error> {
        let mut full = vec!["lro", "proxy"];
        full.extend(argv);
        match Cli::try_parse_from(full)?.command {
            Command::Proxy(args) => Ok(*args),
            _ => unreachable!(),
        }
    }

    #[test]
    fn an_upstream_is_a_command_or_a_url_never_both() {
        assert!(args(&["--url", "http://127.0.0.1:1/mcp", "--", "x"]).is_err());
        let headers_alone = args(&["--header", "A: b", "--", "x"]).unwrap();
        assert!(
            headers_alone.upstream(|_| None).is_err(),
            "--header needs --url"
        );
        assert!(args(&["--max-sessions", "0", "--", "x"]).is_err());
        let remote = args(&["--url", "http://127.0.0.1:1/mcp", "-H", "A: ${V}"]).unwrap();
        let err = remote.upstream(|_| None).unwrap_err();
        assert_eq!(err.exit_status(), crate::error::EXIT_USAGE);
        let text = chain(&err).to_string();
        assert!(text.starts_with("--header: "), "{text}");
        assert!(remote.upstream(|_| Some("v".into())).is_ok());
        let bad = args(&["--url", "ftp://x/y"]).unwrap();
        assert!(
            chain(&bad.upstream(|_| None).unwrap_err())
                .to_string()
                .starts_with("--url: ")
        );
    }

    #[test]
    fn the_request_timeout_is_ten_minutes_unless_set_and_0_is_none() {
        use std::time::Duration;

        let default = args(&["--", "x"]).unwrap();
        assert_eq!(default.request_timeout(), Some(Duration::from_secs(600)));
        let set = args(&["--request-timeout", "5", "--", "x"]).unwrap();
        assert_eq!(set.request_timeout(), Some(Duration::from_secs(5)));
        let never = args(&["--request-timeout", "0", "--", "x"]).unwrap();
        assert_eq!(never.request_timeout(), None);
    }

    #[test]
    fn host_failures_keep_their_exit_status_and_cause() {
        use lro_host::HostError;

        use crate::error::{CliError, EXIT_FAILURE, EXIT_USAGE};

        let file = tempfile::NamedTempFile::new().unwrap();
        let roots = lro_context::Roots::new([file.path()]).unwrap_err();
        let err = CliError::from(HostError::ContextStoreRoots(roots));
        assert_eq!(err.exit_status(), EXIT_USAGE);
        let text = chain(&err).to_string();
        assert!(text.starts_with("--context-store-root: "), "{text}");
        let port_zero = lro_telemetry::TelemetryError::MetricsPortZero(([127, 0, 0, 1], 0).into());
        let err = CliError::from(HostError::Telemetry(port_zero));
        assert_eq!(err.exit_status(), EXIT_FAILURE);
        let text = chain(&err).to_string();
        assert!(
            text.starts_with(
                "cannot install telemetry: cannot serve Prometheus metrics on 127.0.0.1:0"
            ),
            "{text}"
        );
    }
}

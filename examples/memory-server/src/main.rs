//! Run with `cargo run -p memory-server`
//!
//! The LRO demo server: the MIF memory tools of [`memory_server`] behind
//! `lro_tower::LroLayer`, over stdio (the default) or streamable HTTP.
//!
//! ```text
//! cargo run -p memory-server                                  # stdio, 500 memories
//! cargo run -p memory-server -- --http 127.0.0.1:8080         # http://127.0.0.1:8080/mcp
//! cargo run -p memory-server -- --config lro.toml --corpus-size 2000
//! cargo run -p memory-server -- --no-lro                      # the bare server, for comparisons
//! cargo run -p memory-server -- --http 127.0.0.1:8080 --metrics 127.0.0.1:9464   # + Prometheus /metrics
//! ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS=800 cargo run -p memory-server
//! cargo run -p memory-server -- --context-store-root /tmp/ctx   # + context_offload, context_grep, context_read_file
//! cargo run -p memory-server -- --http 127.0.0.1:8080 --conformance-tools   # + the conformance suite's diagnostic tools
//! ```
//!
//! Logs go to stderr (stdout is the stdio transport), filtered by `RUST_LOG`
//! (default `info`). Traces go to an OTLP collector when the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set. The `offload_cleanup` task runs on
//! `cleanup_schedule` (hourly by default) and once at start-up. With `--http`, one readiness line naming the bound
//! address is printed to stderr, so `--http 127.0.0.1:0` works for tests.
//! An invalid configuration exits with status 1 and a message naming the key.
//!
//! HTTP mode runs behind `lro_http::Guard`: loopback `Host` and `Origin`
//! only (plus `--allow-origin`), `--bearer`/`--bearer-file`/
//! `LRO_BEARER_TOKENS` tokens (each naming its principal), header and body
//! timeouts, connection, request and session caps. It refuses a non-loopback address
//! without tokens unless `--allow-unauthenticated` (exit 2).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::{net::SocketAddr, path::PathBuf, process::ExitCode, sync::Arc};

use anyhow::Context as _;
use clap::Parser;
use lro_core::OffloadConfig;
use lro_corpus::{Corpus, DEFAULT_SEED, DEFAULT_SIZE};
use lro_host::{Host, Offload, Shutdown};
use lro_http::{Guard, serve::Limits};
use memory_server::MemoryServer;
use rmcp::{
    ServerHandler,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};
use tokio_util::sync::CancellationToken;
use tower_layer::Layer as _;

/// Path the streamable HTTP endpoint is served at.
const MCP_PATH: &str = "/mcp";

/// Demo MCP memory server (MIF memories) with Large Result Offloading.
#[derive(Debug, Parser)]
#[command(name = "memory-server", version, about)]
struct Cli {
    /// Serve streamable HTTP on this address (endpoint `/mcp`) instead of
    /// stdio. Port 0 picks a free port; the bound address is printed to stderr.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,

    /// Authentication, origins and bounds of the --http face.
    #[command(flatten)]
    http_face: lro_http::cli::HttpArgs,

    /// Sessions (MCP 2025-11-25) open at once behind --http; each principal
    /// holds at most half of them (at least one). A new session at a cap
    /// first closes the same principal's session idle longest; with none,
    /// it is refused (HTTP 429 at the principal's cap, 503 at the total).
    /// Never another principal's session [default: 1024].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_sessions: Option<u32>,

    /// Number of memories to generate.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_SIZE)]
    corpus_size: usize,

    /// Seed of the corpus generator; the same seed gives the same corpus.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_SEED)]
    seed: u64,

    /// TOML file with a `[prompt.offload]` section. `ATLATL_PROMPT__OFFLOAD__*`
    /// environment variables override it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,

    /// Serve the bare server without the LRO layer (every result inline).
    #[arg(long)]
    no_lro: bool,

    /// Serve Prometheus metrics at `http://ADDR/metrics`.
    #[arg(long, value_name = "ADDR", value_parser = lro_telemetry::parse_metrics_addr)]
    metrics: Option<SocketAddr>,

    /// Add the context-offload tools (context_offload, context_grep,
    /// context_read_file), confined to this store root; repeat for more.
    #[arg(long = "context-store-root", value_name = "DIR")]
    context_store_roots: Vec<PathBuf>,

    /// Add the conformance suite's three diagnostic tools
    /// (test_missing_capability, test_streaming_elicitation,
    /// test_logging_tool); off by default, so the model never sees them.
    #[arg(long)]
    conformance_tools: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    lro_extract::worker::run_if_worker();
    let cli = Cli::parse();
    // Tokens, origins and the address are checked before anything starts;
    // a refusal is a usage error (exit 2), as clap's are.
    let http = match cli
        .http
        .map(|addr| {
            let limits = match cli.max_sessions {
                Some(n) => Limits::mcp().max_sessions(n as usize),
                None => Limits::mcp(),
            };
            let guard = cli
                .http_face
                .guard(addr, limits, |var| std::env::var(var).ok());
            guard.map(|guard| (addr, guard))
        })
        .transpose()
    {
        Ok(http) => http,
        Err(err) => {
            eprintln!("memory-server: error: {}", lro_core::error::chain(&err));
            return ExitCode::from(2);
        }
    };
    match run(cli, http).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!(
                "memory-server: error: {}",
                lro_core::error::chain(err.as_ref())
            );
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli, http: Option<(SocketAddr, Guard)>) -> anyhow::Result<()> {
    // Load the configuration before anything else, so a bad value fails fast
    // (even with --no-lro: a broken environment should not go unnoticed).
    let cfg = OffloadConfig::load(cli.config.as_deref())?;
    // Logs to stderr (stdout belongs to the stdio transport), metrics, traces.
    let host = Host::builder("memory-server")
        .metrics_addr(cli.metrics)
        .install()?;
    let corpus = Arc::new(Corpus::generate(cli.corpus_size, cli.seed));
    tracing::info!(
        memories = corpus.len(),
        seed = cli.seed,
        lro = !cli.no_lro,
        enabled = cfg.enabled,
        threshold_tokens = cfg.threshold_tokens,
        "memory-server starting"
    );
    // Paths stay out of INFO logs.
    tracing::debug!(output_dir = %lro_store::resolved_output_dir(&cfg).display(), "offload directory");
    // One handler per session (HTTP) or one in all (stdio).
    let conformance_tools = cli.conformance_tools;
    let server = move || {
        let server = MemoryServer::new(corpus.clone());
        if conformance_tools {
            server.with_conformance_tools()
        } else {
            server
        }
    };
    if cli.no_lro {
        host.run_bare(|shutdown| serve(server, http, shutdown))
            .await
    } else {
        let offload = Offload::new(cfg).context_store_roots(cli.context_store_roots);
        host.run(offload, |layer, shutdown| {
            serve(move || layer.layer(server()), http, shutdown)
        })
        .await
    }
}

/// Serves handlers made by `make`: one for stdio, one per session for HTTP,
/// until `shutdown` resolves.
async fn serve<H, F>(
    make: F,
    http: Option<(SocketAddr, Guard)>,
    shutdown: Shutdown,
) -> anyhow::Result<()>
where
    H: ServerHandler,
    F: Fn() -> H + Send + Sync + 'static,
{
    match http {
        // A line that is not JSON, or is over the cap, gets a JSON-RPC
        // error, and the session goes on (see `lro_stdio`).
        None => Ok(lro_host::serve_stdio(make(), shutdown).await?),
        Some((addr, guard)) => {
            let ct = CancellationToken::new();
            // The guard checks Host and Origin, and that the body is one
            // JSON-RPC message within its size, before rmcp sees the request.
            let config = StreamableHttpServerConfig::default()
                .disable_allowed_hosts()
                .with_max_request_body_bytes(guard.bounds().max_body_bytes)
                .with_cancellation_token(ct.child_token());
            let service = StreamableHttpService::new(
                move || Ok(make()),
                Arc::new(LocalSessionManager::default()),
                config,
            );
            let router = axum::Router::new().nest_service(MCP_PATH, service);
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr}"))?;
            let bound = listener.local_addr()?;
            // The one line tests and scripts wait for; printed directly so
            // RUST_LOG cannot hide it.
            eprintln!("memory-server listening on http://{bound}{MCP_PATH}");
            let shutdown = async move {
                shutdown.await;
                tracing::info!("shutting down");
                // Ends open SSE streams so the graceful shutdown can finish.
                ct.cancel();
            };
            guard
                .serve(listener, router, shutdown)
                .await
                .context("HTTP server failed")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn defaults() {
        let cli = Cli::parse_from(["memory-server"]);
        assert_eq!(cli.corpus_size, DEFAULT_SIZE);
        assert_eq!(cli.seed, DEFAULT_SEED);
        assert!(cli.http.is_none() && cli.config.is_none() && !cli.no_lro);
        assert!(!cli.conformance_tools);
        let cli = Cli::parse_from(["memory-server", "--http", "127.0.0.1:0", "--no-lro"]);
        assert_eq!(cli.http, Some("127.0.0.1:0".parse().unwrap()));
        assert!(cli.no_lro);
    }
}

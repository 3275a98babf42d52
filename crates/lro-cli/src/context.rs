//! `lro context`: context offload for agent message histories (compact,
//! compress, auto), for scripts (`offload`) and as ReMe's HTTP API
//! (`serve`). Thin shells over `lro_context` and `lro_context_http`.
//!
//! ```
//! use clap::Parser;
//! use lro_cli::cli::{Cli, Command};
//! use lro_cli::context::ContextCommand;
//!
//! let cli = Cli::try_parse_from(["lro", "context", "serve", "--http", "127.0.0.1:0", "--store-root", "/a", "--store-root", "/b"]).unwrap();
//! let Command::Context(args) = cli.command else { panic!() };
//! let ContextCommand::Serve(serve) = args.command else { panic!() };
//! assert_eq!(serve.store_roots.len(), 2);
//! assert!(Cli::try_parse_from(["lro", "context", "serve", "--http", "127.0.0.1:0"]).is_err(), "a root is required");
//! ```

use std::{io::Read, net::SocketAddr, path::PathBuf};

use clap::{Args, Subcommand};
use lro_context::{ContextOffloader, FileContents, OffloadRequest, Roots};
use serde_json::Value;

use crate::error::CliError;

/// `lro context`.
#[derive(Debug, Args)]
#[non_exhaustive]
pub struct ContextArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: ContextCommand,
}

/// The `lro context` subcommands.
#[derive(Debug, Subcommand)]
#[non_exhaustive]
pub enum ContextCommand {
    /// Read a history (a `/context_offload` request body, or a bare array of
    /// messages) on stdin, print the result (`{success, answer, messages,
    /// metadata}`) on stdout.
    Offload(OffloadArgs),
    /// Serve ReMe's context-offload HTTP API: POST /context_offload, /grep,
    /// /read_file.
    Serve(ServeArgs),
    /// Serve the context tools alone as an MCP server over stdio:
    /// context_offload, context_grep, context_read_file.
    Mcp(McpArgs),
}

/// `lro context mcp`.
#[derive(Debug, Args)]
#[non_exhaustive]
pub struct McpArgs {
    /// A directory `store_dir` and every path must lie in; repeat for more.
    #[arg(long = "store-root", value_name = "DIR", required = true)]
    pub store_roots: Vec<PathBuf>,
}

/// `lro context offload`. Flags override the fields of a request body.
#[derive(Debug, Args)]
#[non_exhaustive]
pub struct OffloadArgs {
    /// Where files go (the request's `store_dir`).
    #[arg(long, value_name = "DIR")]
    pub store_dir: Option<PathBuf>,
    /// compact, compress or auto (default auto).
    #[arg(long, value_name = "MODE")]
    pub mode: Option<String>,
    /// Tokens of the changeable messages at or under which nothing happens
    /// (default 20000).
    #[arg(long, value_name = "N")]
    pub max_total_tokens: Option<u64>,
    /// Tool messages over this many tokens are compacted (default 2000).
    #[arg(long, value_name = "N")]
    pub max_tool_message_tokens: Option<u64>,
    /// Recent non-system messages left untouched (default 1 for compaction,
    /// 2 for compression).
    #[arg(long, value_name = "N")]
    pub keep_recent_count: Option<usize>,
    /// Tokens per compression group (default: one group).
    #[arg(long, value_name = "N")]
    pub group_token_threshold: Option<u64>,
    /// Auto compresses when compaction kept more than this share (default 0.75).
    #[arg(long, value_name = "RATIO")]
    pub compact_ratio_threshold: Option<f64>,
    /// Names compression files (default: a random id).
    #[arg(long, value_name = "ID")]
    pub chat_id: Option<String>,
    /// A tool whose results are never compacted; repeat for more.
    #[arg(long = "exclude-tool", value_name = "NAME")]
    pub exclude_tools: Vec<String>,
    /// Leave the stored files' contents out of the answer
    /// (`metadata.write_file_dict`); `metadata.stored_files` lists the paths.
    #[arg(long)]
    pub no_file_contents: bool,
}

/// `lro context serve`.
#[derive(Debug, Args)]
#[non_exhaustive]
pub struct ServeArgs {
    /// Listen here. Port 0 picks a free port; the bound address is printed
    /// to stderr.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8002")]
    pub http: SocketAddr,
    /// A directory `store_dir` and every grep and read_file path must lie
    /// in; repeat for more. Created when missing.
    #[arg(long = "store-root", value_name = "DIR", required = true)]
    pub store_roots: Vec<PathBuf>,
    /// Authentication, origins and bounds of the HTTP face.
    #[command(flatten)]
    pub http_face: lro_http::cli::HttpArgs,
    /// Delete stored files older than this many seconds (off by default:
    /// histories point at these files).
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub retention_secs: Option<u64>,
}

impl OffloadArgs {
    /// The request: `input` (a body or a bare array of messages) with the
    /// flags applied.
    ///
    /// # Errors
    ///
    /// A usage error when the input is not JSON or not a request.
    pub fn request(&self, input: &str) -> Result<OffloadRequest, CliError> {
        let value: Value =
            serde_json::from_str(input).map_err(|e| CliError::refused("stdin is not JSON", e))?;
        let mut req = match value {
            Value::Array(_) => {
                let mut req = OffloadRequest::default();
                req.messages = value;
                req
            }
            Value::Object(_) => OffloadRequest::from_value(value)?,
            _ => {
                return Err(CliError::Usage(
                    "stdin must hold a request object or an array of messages".into(),
                ));
            }
        };
        if let Some(d) = &self.store_dir {
            req.store_dir = Some(d.display().to_string());
        }
        req.context_manage_mode = self.mode.clone().or(req.context_manage_mode);
        req.max_total_tokens = self.max_total_tokens.or(req.max_total_tokens);
        req.max_tool_message_tokens = self.max_tool_message_tokens.or(req.max_tool_message_tokens);
        req.keep_recent_count = self.keep_recent_count.or(req.keep_recent_count);
        req.group_token_threshold = self.group_token_threshold.or(req.group_token_threshold);
        req.compact_ratio_threshold = self.compact_ratio_threshold.or(req.compact_ratio_threshold);
        req.chat_id = self.chat_id.clone().or(req.chat_id);
        if !self.exclude_tools.is_empty() {
            req.exclude_tools = Some(self.exclude_tools.clone());
        }
        if self.no_file_contents {
            req.include_file_contents = Some(false);
        }
        Ok(req)
    }
}

/// Runs `lro context`.
///
/// # Errors
///
/// A usage error (exit 2) for bad input, flags or an unset token variable;
/// a run-time failure (exit 1) when the service cannot run.
pub fn context(
    args: &ContextArgs,
    stdin: &mut impl Read,
    stdout: &mut impl std::io::Write,
) -> Result<(), CliError> {
    match &args.command {
        ContextCommand::Offload(a) => {
            let mut input = String::new();
            stdin
                .read_to_string(&mut input)
                .map_err(|e| CliError::refused("cannot read stdin", e))?;
            // The ReMe shape by default, as the HTTP service answers.
            let out = ContextOffloader::from_env().offload_request(
                &lro_core::principal::Principal::anonymous(),
                a.request(&input)?,
                FileContents::Included,
            )?;
            let text = serde_json::to_string_pretty(&out).unwrap_or_default();
            writeln!(stdout, "{text}").map_err(CliError::Output)
        }
        ContextCommand::Serve(a) => serve(a),
        ContextCommand::Mcp(a) => mcp(a),
    }
}

/// A server with no tools of its own: the layer adds the context tools.
#[derive(Debug, Clone, Copy)]
struct NoTools;

impl rmcp::ServerHandler for NoTools {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};

        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new("lro-context", env!("CARGO_PKG_VERSION")),
        )
    }
}

fn mcp(args: &McpArgs) -> Result<(), CliError> {
    use tower_layer::Layer as _;

    let roots = Roots::new(&args.store_roots).map_err(|e| CliError::refused("--store-root", e))?;
    // Only the context tools: no result of this server is ever offloaded.
    // The configuration's `store` shares the entries with every replica.
    let cfg = lro_core::OffloadConfig::load(None)?
        .enabled(false)
        .extract(false);
    let handler = lro_tower::LroLayer::new(cfg)
        .context_tools(ContextOffloader::from_env().roots(roots))
        .layer(NoTools);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| CliError::failed("cannot start the runtime", err))?;
    // The stdio face both hosts serve: a bad line gets a JSON-RPC error.
    runtime
        .block_on(lro_host::serve_stdio(handler, lro_host::Shutdown::signal()))
        .map_err(CliError::from)
}

fn serve(args: &ServeArgs) -> Result<(), CliError> {
    let guard = args
        .http_face
        .guard(args.http, lro_http::serve::Limits::context(), |var| {
            std::env::var(var).ok()
        })?;
    let roots = Roots::new(&args.store_roots).map_err(|e| CliError::refused("--store-root", e))?;
    let dirs = roots.dirs().to_vec();
    let service = lro_context_http::Service::new(ContextOffloader::from_env().roots(roots));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|err| CliError::failed("cannot start the runtime", err))?;
    runtime.block_on(async {
        // As the hosts name folders: never kept in a store root, where a
        // caller's grep or read_file could reach it.
        let cfg = lro_core::OffloadConfig::load(None)?;
        // The configuration's `store` shares the entries with every replica,
        // as the layer's context tools do.
        let store = lro_store::from_config(&cfg)
            .map_err(|e| CliError::failed("cannot open the offload store", e))?;
        let key = lro_host::folder_key(&cfg, store.as_deref()).await?;
        let mut service = service.principal_key(key);
        if let Some(store) = store {
            service = service.store(store);
        }
        if let Some(secs) = args.retention_secs {
            tokio::spawn(retain(dirs, std::time::Duration::from_secs(secs)));
        }
        lro_context_http::serve(
            args.http,
            service,
            guard,
            lro_host::shutdown_signal(),
            |bound| eprintln!("lro context listening on http://{bound}"),
        )
        .await
        .map_err(CliError::from)
    })
}

/// The retention pass, every quarter of the retention (at most a minute).
async fn retain(dirs: Vec<PathBuf>, retention: std::time::Duration) {
    let period = (retention / 4).clamp(
        std::time::Duration::from_secs(1),
        std::time::Duration::from_secs(60),
    );
    let mut tick = tokio::time::interval(period);
    loop {
        tick.tick().await;
        let dirs = dirs.clone();
        let _ = tokio::task::spawn_blocking(move || {
            for d in &dirs {
                let done = lro_context::expire(d, retention, std::time::SystemTime::now());
                if done.deleted + done.errors > 0 {
                    eprintln!(
                        "lro context: retention deleted {} files ({} errors) in {}",
                        done.deleted,
                        done.errors,
                        d.display()
                    );
                }
            }
        })
        .await;
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;
    use serde_json::json;

    use super::*;
    use crate::cli::{Cli, Command};

    fn offload_args(argv: &[&str]) -> OffloadArgs {
        let mut full = vec!["lro", "context", "offload"];
        full.extend_from_slice(argv);
        match Cli::try_parse_from(full).unwrap().command {
            Command::Context(a) => match a.command {
                ContextCommand::Offload(o) => o,
                _ => unreachable!(),
            },
            _ => unreachable!(),
        }
    }

    #[test]
    fn flags_override_the_body_and_a_bare_array_is_messages() {
        let a = offload_args(&[
            "--store-dir",
            "/s",
            "--mode",
            "compact",
            "--exclude-tool",
            "t",
        ]);
        let body = json!({"messages": [], "store_dir": "/other", "context_manage_mode": "auto", "max_total_tokens": 5});
        let req = a.request(&body.to_string()).unwrap();
        assert_eq!(req.store_dir.as_deref(), Some("/s"));
        assert_eq!(req.context_manage_mode.as_deref(), Some("compact"));
        assert_eq!(req.max_total_tokens, Some(5));
        assert_eq!(req.exclude_tools, Some(vec!["t".to_owned()]));
        let bare = a
            .request("[{\"role\": \"user\", \"content\": \"hi\"}]")
            .unwrap();
        assert!(bare.messages.is_array());
        assert!(
            a.request("nope")
                .unwrap_err()
                .to_string()
                .starts_with("stdin is not JSON")
        );
    }

    #[test]
    fn offload_prints_remes_response() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        let args = ContextArgs {
            command: ContextCommand::Offload(offload_args(&[
                "--store-dir",
                store.to_str().unwrap(),
                "--max-total-tokens",
                "10",
            ])),
        };
        let history = json!([
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "name": "read", "arguments": {}}]},
            {"role": "tool", "tool_call_id": "c", "content": "z".repeat(10_000)},
            {"role": "user", "content": "thanks"}
        ]);
        let mut out = Vec::new();
        context(&args, &mut history.to_string().as_bytes(), &mut out).unwrap();
        let r: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(r["success"], true);
        assert_eq!(r["metadata"]["stats"]["compacted"], 1);
        assert_eq!(std::fs::read_dir(&store).unwrap().count(), 1);
        let mut missing = Vec::new();
        let no_store = ContextArgs {
            command: ContextCommand::Offload(offload_args(&[])),
        };
        let err = context(&no_store, &mut "[]".as_bytes(), &mut missing).unwrap_err();
        assert_eq!(err.to_string(), "`store_dir`: is required");
    }
}

//! `lro audit`: a black-box LRO conformance verdict (Levels 1–3) for any
//! implementation. A thin shell over `lro_audit`.
//!
//! ```
//! use clap::Parser;
//! use lro_cli::cli::{Cli, Command};
//!
//! let cli = Cli::try_parse_from([
//!     "lro", "audit", "--require-level", "3", "--json", "--", "python3", "server.py",
//! ])
//! .unwrap();
//! let Command::Audit(args) = cli.command else { panic!() };
//! assert_eq!(args.server.command, ["python3", "server.py"]);
//! assert_eq!(args.require_level, Some(3));
//! assert!(Cli::try_parse_from(["lro", "audit", "--require-level", "4", "--", "x"]).is_err());
//! ```

use std::{path::PathBuf, time::Duration};

use clap::Args;
use lro_audit::{AuditConfig, Probe, Report, Upstream, WireMode};

use crate::{
    error::CliError,
    server::{ServerArgs, http_upstream},
};

/// `lro audit`.
#[derive(Debug, Args)]
#[non_exhaustive]
#[command(
    after_help = "Examples:\n  lro audit -- python3 my_server.py\n  lro audit --require-level 3 --junit audit.xml -- lro proxy -- npx -y my-mcp-server\n  lro audit --url https://staging.example.com/mcp --header 'Authorization: Bearer ${TOKEN}'\n  lro audit --probe 'fetch_rows {\"n\": 500}' -- ./server\n\nExit status: 0 when --require-level is met (or none is asked), 1 when it is not,\n2 for usage errors, 3 when the target cannot be launched or reached.",
    mut_arg("command", |a| a.help("The stdio server's command and arguments, after `--`. It is launched as many times as the audit needs, configured through the spec's ATLATL_PROMPT__OFFLOAD__* variables")),
    mut_arg("url", |a| a.help("A running streamable-HTTP server instead. Checks that need control of its configuration, or its files, are reported as skipped")),
    mut_arg("headers", |a| a.help("A header sent to the URL target, `Name: value`; `${VAR}` in the value is read from the environment. Repeat for more")),
)]
pub struct AuditArgs {
    /// The server to audit: a command, launched as many times as the audit
    /// needs, or a running server's URL.
    #[command(flatten)]
    pub server: ServerArgs,
    /// An environment variable for the launched server (its own knobs, such
    /// as a cleanup schedule), KEY=VALUE. Repeat for more.
    #[arg(long = "env", short = 'e', value_name = "KEY=VALUE", value_parser = parse_env)]
    pub env: Vec<(String, String)>,
    /// A call to make, `TOOL {json args}`, instead of the spec's tools
    /// (list_memories, recall_memories, search_memories, inject_context).
    /// Repeat for more. No other tool is ever called.
    #[arg(long = "probe", value_name = "TOOL {JSON}")]
    pub probes: Vec<Probe>,
    /// A Prometheus endpoint to observe the spec's events on, besides stderr.
    #[arg(long, value_name = "URL")]
    pub metrics: Option<String>,
    /// How long past a file's TTL cleanup may take to delete it, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 20)]
    pub cleanup_wait: u64,
    /// Run every check, even after a level fails.
    #[arg(long)]
    pub keep_going: bool,
    /// The MCP wire to speak to the target: `auto` (2026-07-28 when the
    /// target speaks it, else `initialize` at 2025-11-25), `2026-07-28`, or
    /// `legacy` (`initialize` only). The report names the wire spoken.
    #[arg(long, value_name = "WIRE", default_value_t = WireMode::Auto)]
    pub wire: WireMode,
    /// Exit 1 unless this level (0-3) is proven.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(0..=3))]
    pub require_level: Option<u8>,
    /// Print the report as JSON on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also write a JUnit XML report here.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write the Prometheus textfile-collector format here
    /// (lro_audit_level, lro_audit_check{check,level}).
    #[arg(long, value_name = "FILE")]
    pub textfile: Option<PathBuf>,
}

fn parse_env(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("expected KEY=VALUE, got `{s}`")),
    }
}

impl AuditArgs {
    /// The target these arguments name, with header variables expanded
    /// from `env`.
    ///
    /// # Errors
    ///
    /// A usage error naming the flag.
    pub fn target(&self, env: impl Fn(&str) -> Option<String>) -> Result<Upstream, CliError> {
        match (&self.server.url, self.server.command.split_first()) {
            (Some(url), _) => {
                if !self.env.is_empty() {
                    return Err(CliError::Usage(
                        "--env: variables go to a launched server; a --url target runs already"
                            .into(),
                    ));
                }
                // The proxy's parsing: the same header rules and `${VAR}`
                // expansion, values never echoed.
                http_upstream(url, &self.server.headers, env)
            }
            (None, _) if !self.server.headers.is_empty() => Err(CliError::Usage(
                "--header: headers go to a URL target; add --url".into(),
            )),
            (None, Some((program, args))) => Ok(self
                .env
                .iter()
                .fold(Upstream::command(program, args), |t, (k, v)| t.env(k, v))),
            (None, None) => Err(CliError::Usage(
                "name the target: `lro audit -- COMMAND [ARGS]` or `lro audit --url URL`".into(),
            )),
        }
    }

    fn config(&self) -> AuditConfig {
        let mut cfg = AuditConfig::new()
            .cleanup_wait(Duration::from_secs(self.cleanup_wait))
            .keep_going(self.keep_going)
            .wire(self.wire);
        for probe in &self.probes {
            cfg = cfg.probe(probe.clone());
        }
        if let Some(url) = &self.metrics {
            cfg = cfg.metrics_url(url.clone());
        }
        cfg
    }
}

/// Runs the audit, prints the report (table or JSON) on stdout and writes
/// the requested files.
///
/// # Errors
///
/// A usage error (exit 2); [`CliError::Unreachable`] (exit 3) when the
/// target cannot be launched or reached; [`CliError::LevelNotMet`] (exit 1)
/// when `--require-level` is not met.
pub fn audit(args: &AuditArgs, out: &mut impl std::io::Write) -> Result<(), CliError> {
    let target = args.target(|var| std::env::var(var).ok())?;
    let cfg = args.config();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|err| CliError::failed("cannot start the runtime", err))?;
    let report = runtime
        .block_on(lro_audit::audit(&target, &cfg))
        .map_err(CliError::Unreachable)?;
    write_report(args, &report, out)?;
    match args.require_level {
        Some(required) if report.level() < required => Err(CliError::LevelNotMet {
            required,
            verdict: report.verdict(),
        }),
        _ => Ok(()),
    }
}

fn write_report(
    args: &AuditArgs,
    report: &Report,
    out: &mut impl std::io::Write,
) -> Result<(), CliError> {
    let shown = if args.json {
        format!("{:#}\n", report.to_json())
    } else {
        report.to_table()
    };
    out.write_all(shown.as_bytes()).map_err(CliError::Output)?;
    let write = |path: &PathBuf, text: String| {
        std::fs::write(path, text).map_err(|source| CliError::Io {
            path: path.clone(),
            source,
        })
    };
    if let Some(path) = &args.junit {
        write(path, report.to_junit())?;
    }
    if let Some(path) = &args.textfile {
        // The textfile collector may read at any moment: write aside, then
        // rename, so it never sees half a file.
        let tmp = path.with_extension("prom.tmp");
        write(&tmp, report.to_textfile())?;
        std::fs::rename(&tmp, path).map_err(|source| CliError::Io {
            path: path.clone(),
            source,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;
    use crate::cli::{Cli, Command};

    fn args(argv: &[&str]) -> Box<AuditArgs> {
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Audit(a) => a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn targets_and_usage_errors() {
        let a = args(&["lro", "audit", "--env", "K=v=1", "--", "srv", "-x"]);
        assert_eq!(a.env, [("K".to_owned(), "v=1".to_owned())]);
        assert!(a.target(|_| None).unwrap().is_launched());
        let a = args(&[
            "lro",
            "audit",
            "--url",
            "http://127.0.0.1:1/mcp",
            "-H",
            "X-Key: ${K}",
        ]);
        assert!(!a.target(|_| Some("s".into())).unwrap().is_launched());
        let err = a.target(|_| None).unwrap_err();
        assert_eq!(err.exit_status(), crate::error::EXIT_USAGE);
        let text = lro_core::error::chain(&err).to_string();
        assert!(
            !text.contains("${K}") || text.contains("K is not set"),
            "{text}"
        );
        assert!(Cli::try_parse_from(["lro", "audit", "--env", "novalue", "--", "x"]).is_err());
        assert_eq!(a.wire, WireMode::Auto);
        let a = args(&["lro", "audit", "--wire", "legacy", "--", "srv"]);
        assert_eq!(a.wire, WireMode::Legacy);
        assert!(Cli::try_parse_from(["lro", "audit", "--wire", "2024", "--", "x"]).is_err());
        assert!(Cli::try_parse_from(["lro", "audit", "--probe", "t [1]", "--", "x"]).is_err());
    }
}

//! Command-line arguments and the commands behind them.
//!
//! ```
//! use clap::Parser;
//! use lro_cli::cli::{Cli, Command};
//!
//! let cli = Cli::try_parse_from(["lro", "extract", "f.jsonl", "--recipe", "2", "--param", "namespace=_episodic"]).unwrap();
//! let Command::Extract(args) = cli.command else { panic!() };
//! let req = args.request("/abs/f.jsonl").unwrap();
//! assert_eq!(req.recipe, Some(2));
//! assert_eq!(req.params.unwrap()["namespace"], "_episodic");
//! ```

use std::{
    collections::BTreeMap,
    io::Write,
    path::{Path, PathBuf},
    time::{Duration, SystemTime},
};

use clap::{Args, Parser, Subcommand};
use lro_extract::{ExtractConfig, ExtractRequest, Extractor, Grep, LineWindow, Match};
use serde_json::Value;

use crate::{
    error::{CliError, EXIT_STATUS_HELP},
    inspect, parse_condition, parse_param, parse_window,
};

/// Large Result Offloading for MCP: proxy any server, and extract from,
/// inspect and clean up offload files.
#[derive(Debug, Parser)]
#[command(name = "lro", version, about, after_help = EXIT_STATUS_HELP)]
#[non_exhaustive]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Put Large Result Offloading in front of any MCP server: a command
    /// spawned over stdio, or a streamable-HTTP URL.
    Proxy(Box<crate::proxy::ProxyArgs>),
    /// Audit any LRO implementation from outside: a Level 1-3 conformance
    /// verdict with the evidence for every check.
    Audit(Box<crate::audit::AuditArgs>),
    /// Context offload for agent message histories (compact, compress,
    /// auto): `offload` for scripts, `serve` for ReMe's HTTP API.
    Context(Box<crate::context::ContextArgs>),
    /// Query an offload file: a recipe, a jq filter, structured conditions,
    /// a window of lines, or a grep (exactly one).
    Extract(Box<ExtractArgs>),
    /// Show an offload file's header, record count check, inferred schema
    /// and recipes.
    Inspect(InspectArgs),
    /// Run one cleanup pass over an offload directory.
    Gc(GcArgs),
    /// List every metric LRO exports: name, type, labels and their values,
    /// help.
    Metrics(MetricsArgs),
    /// Put `lro proxy` in front of every server an MCP client is configured
    /// with, in the client's own files (backed up, edited in place).
    Install(Box<crate::install::InstallArgs>),
    /// Restore the servers `lro install` wrapped, exactly as they were.
    Uninstall(Box<crate::install::InstallArgs>),
}

/// `lro extract`.
#[derive(Debug, Args)]
#[non_exhaustive]
pub struct ExtractArgs {
    /// The offload file.
    pub file: PathBuf,
    /// Run recipe N (1-10) of the file's descriptor.
    #[arg(long, value_name = "N")]
    pub recipe: Option<u8>,
    /// A jq filter, applied per record (like `jq -c`).
    #[arg(long, short = 'q', value_name = "FILTER")]
    pub query: Option<String>,
    /// With --query: apply it to the array of all records (like `jq -s`).
    #[arg(long)]
    pub slurp: bool,
    /// A condition FIELD:OP:VALUE (ops: eq ne prefix contains regex gt gte
    /// lt lte in exists); repeat for more.
    #[arg(long = "where", short = 'w', value_name = "FIELD:OP:VALUE", value_parser = parse_condition)]
    pub conditions: Vec<lro_extract::Condition>,
    /// Keep records matching any --where condition (default: all).
    #[arg(long)]
    pub any: bool,
    /// Print only the number of matching records.
    #[arg(long)]
    pub count: bool,
    /// Comma-separated fields to keep (dotted paths allowed).
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    pub fields: Option<Vec<String>>,
    /// Sort by a field (`-field` for descending).
    #[arg(long, value_name = "FIELD", allow_hyphen_values = true)]
    pub sort_by: Option<String>,
    /// Skip this many matching records; with --recipe or --query, results
    /// (elements of the one array of a slurping filter).
    #[arg(long)]
    pub offset: Option<usize>,
    /// Print at most this many records, groups, results or elements.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Count matching records per value of a field.
    #[arg(long, value_name = "FIELD")]
    pub group_by: Option<String>,
    /// Print a window of record lines, OFFSET:LIMIT.
    #[arg(long, value_name = "OFFSET:LIMIT", value_parser = parse_window)]
    pub lines: Option<(usize, usize)>,
    /// With --lines: cut lines longer than this many characters.
    #[arg(long, value_name = "N")]
    pub max_chars: Option<usize>,
    /// Search record lines for a regular expression.
    #[arg(long, value_name = "PATTERN")]
    pub grep: Option<String>,
    /// With --grep: lines of context around each match.
    #[arg(short = 'C', long = "context", value_name = "N")]
    pub context: Option<usize>,
    /// With --grep: ignore case.
    #[arg(short = 'i', long)]
    pub ignore_case: bool,
    /// With --grep: stop after this many matching lines.
    #[arg(long, value_name = "N")]
    pub max_matches: Option<usize>,
    /// A recipe or query parameter NAME=VALUE ($NAME in the filter); repeat
    /// for more.
    #[arg(long = "param", short = 'p', value_name = "NAME=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, String)>,
    /// The offload directory the file must be in. Default: the file's
    /// directory.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Stop after this many milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    pub timeout_ms: u64,
    /// Stop output after this many bytes (default: no limit).
    #[arg(long, value_name = "BYTES")]
    pub max_bytes: Option<usize>,
    /// Stop output after this many results (default: no limit).
    #[arg(long, value_name = "N")]
    pub max_values: Option<usize>,
}

impl ExtractArgs {
    /// The extraction request for the file at `abs_path`.
    pub fn request(&self, abs_path: &str) -> Result<ExtractRequest, CliError> {
        let mut req = ExtractRequest::new(abs_path);
        req.recipe = self.recipe;
        req.query = self.query.clone();
        req.slurp = self.slurp.then_some(true);
        if !self.params.is_empty() {
            req.params = Some(
                self.params
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect::<BTreeMap<_, _>>(),
            );
        }
        if !self.conditions.is_empty() {
            req.r#where = Some(self.conditions.clone());
        }
        req.r#match = self.any.then_some(Match::Any);
        req.count = self.count.then_some(true);
        req.fields = self.fields.clone();
        req.sort_by = self.sort_by.clone();
        req.offset = self.offset;
        req.limit = self.limit;
        req.group_by = self.group_by.clone();
        if let Some((offset, limit)) = self.lines {
            let mut window = LineWindow::new(offset, limit);
            window.max_chars = self.max_chars;
            req.lines = Some(window);
        } else if self.max_chars.is_some() {
            return Err(CliError::Usage(
                "--max-chars only applies to --lines".into(),
            ));
        }
        match &self.grep {
            Some(pattern) => {
                let mut grep = Grep::new(pattern.clone());
                grep.context = self.context;
                grep.ignore_case = self.ignore_case.then_some(true);
                grep.max_matches = self.max_matches;
                req.grep = Some(grep);
            }
            None if self.context.is_some() || self.ignore_case || self.max_matches.is_some() => {
                return Err(CliError::Usage(
                    "-C, -i and --max-matches only apply to --grep".into(),
                ));
            }
            None => {}
        }
        Ok(req)
    }
}

/// `lro inspect`.
#[derive(Debug, Args)]
#[non_exhaustive]
pub struct InspectArgs {
    /// The offload file.
    pub file: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `lro metrics`.
#[derive(Debug, Args)]
#[non_exhaustive]
pub struct MetricsArgs {
    /// Print the catalogue as JSON (what `deploy/metrics.json` holds).
    #[arg(long)]
    pub json: bool,
}

/// `lro gc`.
#[derive(Debug, Args)]
#[non_exhaustive]
pub struct GcArgs {
    /// The offload directory.
    pub dir: PathBuf,
    /// Delete offload files older than this. Default: 3600 (one hour).
    #[arg(long, value_name = "N", default_value_t = lro_core::config::DEFAULT_TTL_SECONDS)]
    pub ttl_seconds: u64,
    /// Then delete the oldest files until the rest total at most this many
    /// bytes.
    #[arg(long, value_name = "BYTES")]
    pub max_total_bytes: Option<u64>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Makes `p` absolute against the current directory (a command-line path
/// means relative to where the user is, not to the offload directory).
pub fn absolute(p: &Path) -> Result<PathBuf, CliError> {
    std::path::absolute(p).map_err(|source| CliError::Io {
        path: p.to_owned(),
        source,
    })
}

/// Runs `lro extract`, streaming results to `out` and jq's error line for
/// each record the filter fails on to `errors`, as jq 1.6 prints them;
/// notices go to `err`. Exits as jq 1.6 does on the same records.
pub fn extract(
    args: &ExtractArgs,
    out: Box<dyn Write + Send>,
    errors: Box<dyn Write + Send>,
    err: &mut dyn Write,
) -> Result<(), CliError> {
    let file = absolute(&args.file)?;
    let root = match &args.root {
        Some(r) => absolute(r)?,
        None => file.parent().map(Path::to_owned).ok_or_else(|| {
            CliError::Usage(format!("{} has no parent directory", file.display()))
        })?,
    };
    let req = args.request(&file.to_string_lossy())?;
    let cfg = ExtractConfig::new(root)
        .timeout(Duration::from_millis(args.timeout_ms))
        .max_output_bytes(args.max_bytes.unwrap_or(usize::MAX))
        .max_output_values(args.max_values.unwrap_or(usize::MAX));
    let output = Extractor::new(cfg).run_to_writers(&req, out, errors)?;
    // Failed and unread records were told as jq tells them, not here.
    if let Some(notice) = &output.notice {
        let _ = writeln!(err, "# {notice}");
    } else if output.count == 0 && output.failed == 0 && output.unread == 0 {
        let _ = writeln!(err, "# no results");
    }
    if output.unread > 0 {
        return Err(CliError::Unread(output.unread));
    }
    if output.last_failed {
        return Err(CliError::FilterFailed(output.failed));
    }
    Ok(())
}

/// Runs `lro inspect`.
pub fn inspect(args: &InspectArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let file = absolute(&args.file)?;
    let report = inspect::inspect(&file)?;
    let text = if args.json {
        serde_json::to_string_pretty(&report).expect("reports serialize")
    } else {
        report.to_text()
    };
    writeln!(out, "{text}").map_err(CliError::Output)
}

/// Runs `lro gc` as of `now`.
pub fn gc(args: &GcArgs, now: SystemTime, out: &mut dyn Write) -> Result<(), CliError> {
    if !args.dir.is_dir() {
        return Err(CliError::NotADirectory(args.dir.clone()));
    }
    let policy = lro_scheduler::CleanupPolicy::new()
        .ttl(Duration::from_secs(args.ttl_seconds))
        .max_total_bytes(args.max_total_bytes);
    let r = lro_scheduler::run_once(&args.dir, &policy, now, &());
    let text = if args.json {
        serde_json::json!({
            "dir": args.dir,
            "scanned": r.scanned,
            "deleted": r.deleted,
            "temp_removed": r.temp_removed,
            "bytes_freed": r.bytes_freed,
            "files_remaining": r.files_remaining,
            "bytes_remaining": r.bytes_remaining,
            "errors": r.errors,
            "duration_ms": r.duration.as_secs_f64() * 1e3,
        })
        .to_string()
    } else {
        format!(
            "{}: scanned {} offload files, deleted {} ({} bytes freed), removed {} stale temp files; {} files ({} bytes) remain; {} errors",
            args.dir.display(),
            r.scanned,
            r.deleted,
            r.bytes_freed,
            r.temp_removed,
            r.files_remaining,
            r.bytes_remaining,
            r.errors
        )
    };
    writeln!(out, "{text}").map_err(CliError::Output)?;
    if r.errors > 0 {
        return Err(CliError::CleanupErrors(r.errors));
    }
    Ok(())
}

/// Runs `lro metrics`: the metric catalogue, as JSON or as a table.
pub fn metrics(args: &MetricsArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let text = if args.json {
        lro_core::metric::catalogue_text()
    } else {
        let mut text = String::new();
        for m in lro_core::metric::ALL {
            let labels: Vec<String> = m
                .labels
                .iter()
                .map(|l| match l.values {
                    Some(set) => {
                        format!("{}={}", l.name, set.values().collect::<Vec<_>>().join("|"))
                    }
                    None => l.name.to_owned(),
                })
                .collect();
            text.push_str(&format!(
                "{} ({}) {{{}}}\n    {}\n",
                m.name,
                m.kind.as_str(),
                labels.join(", "),
                m.help
            ));
        }
        text
    };
    out.write_all(text.as_bytes()).map_err(CliError::Output)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> ExtractArgs {
        let mut all = vec!["lro", "extract", "f.jsonl"];
        all.extend(args);
        match Cli::try_parse_from(all).unwrap().command {
            Command::Extract(a) => *a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn structured_flags_build_a_structured_request() {
        let a = parse(&[
            "--where",
            "namespace:prefix:_semantic",
            "-w",
            "priority:gte:3",
            "--any",
            "--fields",
            "id,title",
            "--sort-by",
            "-priority",
            "--limit",
            "5",
        ]);
        let req = a.request("/x/f.jsonl").unwrap();
        assert_eq!(
            req.mode().unwrap(),
            lro_core::metric::label::ExtractMode::Structured
        );
        assert_eq!(req.r#where.as_ref().unwrap().len(), 2);
        assert_eq!(req.r#match, Some(Match::Any));
        assert_eq!(req.fields.unwrap(), ["id", "title"]);
        assert_eq!(req.sort_by.as_deref(), Some("-priority"));
    }

    #[test]
    fn text_flags() {
        let req = parse(&["--lines", "10:5", "--max-chars", "80"])
            .request("/f")
            .unwrap();
        assert_eq!(req.lines.unwrap().max_chars, Some(80));
        let req = parse(&["--grep", "err", "-C", "2", "-i"])
            .request("/f")
            .unwrap();
        let g = req.grep.unwrap();
        assert_eq!((g.context, g.ignore_case), (Some(2), Some(true)));
        assert!(parse(&["-C", "2"]).request("/f").is_err());
        assert!(parse(&["--max-chars", "2"]).request("/f").is_err());
    }

    #[test]
    fn bad_where_is_a_usage_error() {
        let e = Cli::try_parse_from(["lro", "extract", "f", "--where", "a:like:b"]).unwrap_err();
        assert!(e.to_string().contains("unknown op"), "{e}");
    }
}

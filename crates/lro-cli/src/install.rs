//! `lro install CLIENT` and `lro uninstall CLIENT`: wrap the servers of an
//! MCP client's configuration with `lro proxy`, and restore them (see
//! `lro_install`).
//!
//! ```
//! use clap::Parser;
//! use lro_cli::cli::{Cli, Command};
//!
//! let cli = Cli::try_parse_from(["lro", "install", "cursor", "--except", "git", "--dry-run"]).unwrap();
//! let Command::Install(args) = cli.command else { panic!() };
//! assert_eq!(args.client.as_deref(), Some("cursor"));
//! assert!(args.dry_run);
//! ```

use std::{io::Write, path::Path};

use clap::Args;
use lro_core::error::chain;
use lro_install::{Client, Env, LroCommand, Options, Report, Scope, Status};

use crate::error::CliError;

/// `lro install` and `lro uninstall`.
#[derive(Debug, Args)]
#[non_exhaustive]
pub struct InstallArgs {
    /// The client: claude-code, claude-desktop, cursor, vscode, windsurf,
    /// codex or gemini. With --list, every client when left out.
    #[arg(value_name = "CLIENT", required_unless_present = "list")]
    pub client: Option<String>,
    /// Only the files of this scope: user, project, or (claude-code) local.
    /// Default: every file of the client that exists.
    #[arg(long, value_name = "SCOPE")]
    pub scope: Option<String>,
    /// Only this server (repeatable). A remote server with no credentials
    /// in the file, left out by default (it may use OAuth), is wrapped when
    /// named here.
    #[arg(long, value_name = "NAME")]
    pub only: Vec<String>,
    /// Not this server (repeatable).
    #[arg(long, value_name = "NAME")]
    pub except: Vec<String>,
    /// The command wrapped servers run, e.g. `npx -y lro-mcp`. Default: the
    /// absolute path of this `lro`.
    #[arg(long, value_name = "CMD")]
    pub lro: Option<String>,
    /// Print the change as a diff and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Show every configured server and whether it is wrapped.
    #[arg(long, conflicts_with_all = ["scope", "only", "except", "dry_run"])]
    pub list: bool,
}

/// Whether `lro install` or `lro uninstall` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Wrap.
    Install,
    /// Restore.
    Uninstall,
}

/// Runs `lro install` (or `uninstall`) and prints what it did.
pub fn install(
    args: &InstallArgs,
    direction: Direction,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let env = Env::from_process()
        .ok_or_else(|| CliError::Usage("lro install needs $HOME and a current directory".into()))?;
    let lro = lro_command(args.lro.as_deref())?;
    let clients = match &args.client {
        Some(name) => vec![client(name)?],
        None => Client::ALL.to_vec(),
    };
    if args.list {
        return list(&clients, &lro, &env, out);
    }
    let mut options = Options::new(lro);
    options.scope = args.scope.as_deref().map(scope).transpose()?;
    options.only.clone_from(&args.only);
    options.except.clone_from(&args.except);
    options.dry_run = args.dry_run;
    let client = clients[0];
    let report = match direction {
        Direction::Install => lro_install::install(client, &options, &env),
        Direction::Uninstall => lro_install::uninstall(client, &options, &env),
    }?;
    print_report(&report, direction, &env, out)?;
    if report.none_found() {
        let looked: Vec<String> = client
            .places(options.scope, &env)
            .iter()
            .map(|p| tilde(&p.path, &env))
            .collect();
        return Err(CliError::Runtime(format!(
            "no configuration file of {} found (looked at {})",
            client.name(),
            looked.join(", ")
        )));
    }
    let unmatched = report.unmatched(&options);
    if !unmatched.is_empty() {
        return Err(CliError::Runtime(format!(
            "no server named {}",
            unmatched.join(", ")
        )));
    }
    if report.failed() {
        return Err(CliError::Runtime(
            "some files were left untouched (above)".into(),
        ));
    }
    Ok(())
}

fn print_report(
    report: &Report,
    direction: Direction,
    env: &Env,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let verb = match direction {
        Direction::Install => "wrapped",
        Direction::Uninstall => "restored",
    };
    let mut text = String::new();
    for file in &report.files {
        let place = &file.place;
        text.push_str(&format!(
            "{} ({}, {} scope)\n",
            tilde(&place.path, env),
            place.client.name(),
            place.scope.name()
        ));
        match &file.outcome {
            Err(e) => text.push_str(&format!("  error: {}\n", chain(e))),
            Ok(outcome) => {
                if let Some(diff) = &outcome.diff {
                    text.push_str(diff);
                }
                let done = if outcome.diff.is_some() {
                    format!("would be {verb}")
                } else {
                    verb.to_owned()
                };
                if outcome.changed.is_empty() {
                    text.push_str(&format!("  nothing {verb}\n"));
                } else {
                    text.push_str(&format!("  {done}: {}\n", outcome.changed.join(", ")));
                }
                for (name, why) in &outcome.left {
                    text.push_str(&format!("  left {name}: {why}\n"));
                }
                if let Some(backup) = &outcome.backup {
                    text.push_str(&format!("  backup: {}\n", tilde(backup, env)));
                }
            }
        }
    }
    out.write_all(text.as_bytes()).map_err(CliError::Output)
}

fn list(
    clients: &[Client],
    lro: &LroCommand,
    env: &Env,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let mut text = String::new();
    for client in clients {
        let places = lro_install::list(*client, lro, env)?;
        for (place, servers) in places {
            text.push_str(&format!(
                "{} ({}, {} scope)\n",
                tilde(&place.path, env),
                client.name(),
                place.scope.name()
            ));
            match servers {
                Err(e) => text.push_str(&format!("  error: {}\n", chain(&e))),
                Ok(servers) if servers.is_empty() => text.push_str("  no servers\n"),
                Ok(servers) => {
                    for (name, status) in servers {
                        let status = match status {
                            Status::Wrapped => "wrapped".to_owned(),
                            Status::NotWrapped => "not wrapped".to_owned(),
                            Status::Left(why) => format!("left: {why}"),
                            _ => "unknown".to_owned(),
                        };
                        text.push_str(&format!("  {name}: {status}\n"));
                    }
                }
            }
        }
    }
    if text.is_empty() {
        text.push_str("no configuration file found\n");
    }
    out.write_all(text.as_bytes()).map_err(CliError::Output)
}

/// `~/…` for a path under the home directory, as people write them.
fn tilde(path: &Path, env: &Env) -> String {
    match path.strip_prefix(&env.home) {
        Ok(rest) => format!("~/{}", rest.display()),
        Err(_) => path.display().to_string(),
    }
}

fn client(name: &str) -> Result<Client, CliError> {
    Client::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Client::ALL.iter().map(|c| c.name()).collect();
        CliError::Usage(format!(
            "unknown client {name:?}: one of {}",
            names.join(", ")
        ))
    })
}

fn scope(name: &str) -> Result<Scope, CliError> {
    Scope::from_name(name)
        .ok_or_else(|| CliError::Usage(format!("unknown scope {name:?}: user, project or local")))
}

/// `--lro CMD`, or this executable's absolute path.
fn lro_command(given: Option<&str>) -> Result<LroCommand, CliError> {
    match given {
        Some(line) => LroCommand::parse(line)
            .ok_or_else(|| CliError::Usage(format!("--lro {line:?} is not a command"))),
        None => {
            let exe = std::env::current_exe()
                .and_then(std::fs::canonicalize)
                .map_err(|e| {
                    CliError::refused("cannot find this lro's path (give --lro CMD)", e)
                })?;
            Ok(LroCommand {
                program: exe.to_string_lossy().into_owned(),
                args: Vec::new(),
            })
        }
    }
}

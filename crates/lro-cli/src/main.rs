//! `lro`: proxy any MCP server with Large Result Offloading, and extract
//! from, inspect and clean up offload files.
//!
//! Exit status: 0 on success, 1 for a failure at run time, 2 for a usage
//! error, 3 when `lro audit` cannot reach its target, 4 and 5 where jq 1.6
//! exits so on the records `lro extract` read (see `lro_cli::error`); the
//! message goes to stderr.

#![forbid(unsafe_code)]

use std::{process::ExitCode, time::SystemTime};

use clap::Parser;
use lro_cli::{
    cli::{self, Cli, Command},
    install::{Direction, install},
};

fn main() -> ExitCode {
    lro_extract::worker::run_if_worker();
    // `lro proxy` starts each upstream under this executable as its watchdogs.
    if let Some(code) = lro_proxy::watchdog::run_if_asked() {
        return code;
    }
    let cli = Cli::parse();
    let mut stderr = std::io::stderr();
    let mut stdout = std::io::stdout();
    let result = match &cli.command {
        Command::Proxy(args) => lro_cli::proxy::proxy(args),
        Command::Audit(args) => lro_cli::audit::audit(args, &mut stdout),
        Command::Context(args) => {
            lro_cli::context::context(args, &mut std::io::stdin(), &mut stdout)
        }
        Command::Extract(args) => cli::extract(
            args,
            extract_output(),
            Box::new(std::io::stderr()),
            &mut stderr,
        ),
        Command::Inspect(args) => cli::inspect(args, &mut stdout),
        Command::Gc(args) => cli::gc(args, SystemTime::now(), &mut stdout),
        Command::Metrics(args) => cli::metrics(args, &mut stdout),
        Command::Install(args) => install(args, Direction::Install, &mut stdout),
        Command::Uninstall(args) => install(args, Direction::Uninstall, &mut stdout),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            if !err.is_told() {
                eprintln!("lro: {}", lro_core::error::chain(&err));
            }
            ExitCode::from(err.exit_status())
        }
    }
}

/// Where `lro extract` prints: buffered in 64 KiB blocks into a pipe or
/// file (stdout alone writes every line with its own system call: 100,000
/// of them for 100,000 results), line by line on a terminal, as jq does.
fn extract_output() -> Box<dyn std::io::Write + Send> {
    use std::io::IsTerminal;

    let stdout = std::io::stdout();
    if stdout.is_terminal() {
        Box::new(stdout)
    } else {
        Box::new(std::io::BufWriter::with_capacity(64 * 1024, stdout))
    }
}

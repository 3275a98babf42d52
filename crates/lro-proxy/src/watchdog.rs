//! The watchdogs between the proxy and a stdio upstream, so that no upstream
//! process survives the proxy, even a proxy killed with SIGKILL, and even
//! the grandchildren that `npx` and `uvx` start.
//!
//! A process killed with SIGKILL runs no code, so the proxy cannot end its
//! children then; and `PR_SET_PDEATHSIG` can only be set by the process
//! itself, which for an arbitrary upstream needs `pre_exec` (`unsafe`). So
//! the proxy starts small processes between itself and the upstream: the
//! same executable, told by [`MARKER`] to be a watchdog. Each watchdog
//!
//! - asks for SIGTERM when its parent dies (`PR_SET_PDEATHSIG`), then checks
//!   that the parent did not die before it asked;
//! - becomes a child subreaper, so that every descendant orphaned under it
//!   is reparented to it, not to init, and it can find and end them;
//! - starts its child in a process group of its own, with its own stdin,
//!   stdout and stderr: the upstream reads and writes the proxy's pipes
//!   directly, and no byte passes through a watchdog;
//! - when its child exits, kills what is left of its group and every
//!   descendant, then exits with the child's status (128 + the signal when
//!   it was killed by one);
//! - on SIGTERM (its parent died, or the proxy is ending the session),
//!   sends SIGTERM to its child's group, waits a grace period shorter than
//!   its parent's, then kills the group and every descendant.
//!
//! There are two, in a chain: the proxy starts the outer one ([`MARKER`]),
//! which starts the inner one ([`INNER_MARKER`]), which starts the upstream.
//! One alone would be the tree's single point of failure: SIGKILL to it
//! (the OOM killer, a stray `kill -9`) runs none of its code, and its
//! orphans go to init, out of anyone's reach, the grandchildren that left
//! the upstream's group included. With two, each covers the other's death:
//! the inner one's parent-death signal fires when the outer one dies, and
//! the outer one, a subreaper, inherits the upstream's tree when the inner
//! one dies and sweeps it as after any exit of its child.
//!
//! A host opts in by calling [`run_if_asked`] first thing in `main` and
//! naming its own executable in [`ProxyConfig::watchdog`](crate::ProxyConfig::watchdog):
//!
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     if let Some(code) = lro_proxy::watchdog::run_if_asked() {
//!         return code;
//!     }
//!     // … the host's own work, with
//!     // ProxyConfig::new(upstream).watchdog(std::env::current_exe().ok())
//!     std::process::ExitCode::SUCCESS
//! }
//! ```

use std::{ffi::OsString, process::ExitCode, time::Duration};

use rustix::{
    io::Errno,
    process::{
        Pid, RawPid, Signal, WaitOptions, getpid, getppid, kill_process, kill_process_group,
        set_child_subreaper, set_parent_process_death_signal, wait,
    },
};

use crate::exit::GRACE;

/// The first argument that makes the executable the outer watchdog, the
/// one the proxy starts: `EXE __lro-proxy-watchdog PARENT_PID PROGRAM [ARGS…]`.
pub const MARKER: &str = "__lro-proxy-watchdog";

/// The first argument that makes the executable the inner watchdog, the one
/// the outer one starts and that starts `PROGRAM`; same arguments.
pub const INNER_MARKER: &str = "__lro-proxy-watchdog-inner";

/// The executable the outer watchdog starts the inner one from: itself, by
/// the kernel's link, which works even when the file was replaced meanwhile
/// (an upgrade).
const SELF_EXE: &str = "/proc/self/exe";

/// What the outer watchdog's child has after SIGTERM before SIGKILL: less
/// than the proxy's [`GRACE`], so the outer watchdog has ended everything
/// before the proxy would kill it.
const OUTER_TERM_GRACE: Duration = GRACE.saturating_sub(Duration::from_millis(500));

/// What the upstream has after SIGTERM before SIGKILL: less again, so the
/// inner watchdog has ended everything before the outer one would kill it.
const INNER_TERM_GRACE: Duration = GRACE.saturating_sub(Duration::from_millis(1000));

/// The longest the final sweep of descendants takes.
const SWEEP_LIMIT: Duration = Duration::from_secs(5);

/// Runs the watchdog when this process was started as one (its first
/// argument is [`MARKER`] or [`INNER_MARKER`]), and returns its exit
/// status; `None` otherwise.
#[must_use]
pub fn run_if_asked() -> Option<ExitCode> {
    let mut argv = std::env::args_os().skip(1);
    let marker = argv.next()?;
    let outer = marker == MARKER;
    if !outer && marker != INNER_MARKER {
        return None;
    }
    let parent = argv.next().and_then(|p| p.to_str()?.parse::<RawPid>().ok());
    let (Some(parent), Some(program)) = (parent, argv.next()) else {
        eprintln!(
            "lro-proxy watchdog: usage: {} PARENT_PID PROGRAM [ARGS…]",
            marker.to_string_lossy()
        );
        return Some(ExitCode::from(2));
    };
    let args: Vec<OsString> = argv.collect();
    let code = if outer {
        let inner = marked(INNER_MARKER, &program, &args);
        watch(parent, SELF_EXE.into(), inner, OUTER_TERM_GRACE)
    } else {
        watch(parent, program, args, INNER_TERM_GRACE)
    };
    Some(ExitCode::from(code))
}

/// The arguments that start `program args` under the (outer) watchdog.
pub(crate) fn argv(program: &OsString, args: &[OsString]) -> Vec<OsString> {
    marked(MARKER, program, args)
}

/// `marker`, this process's pid (the parent to watch), then `program args`.
fn marked(marker: &str, program: &OsString, args: &[OsString]) -> Vec<OsString> {
    let mut argv = vec![
        marker.into(),
        std::process::id().to_string().into(),
        program.clone(),
    ];
    argv.extend(args.iter().cloned());
    argv
}

/// Starts `program args` and watches it, and the parent, as the module says;
/// returns the exit status. `term_grace` is what the child has after
/// SIGTERM.
fn watch(parent: RawPid, program: OsString, args: Vec<OsString>, term_grace: Duration) -> u8 {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("lro-proxy watchdog: cannot start: {err}");
            return 1;
        }
    };
    runtime.block_on(async move {
        // The handler first, so the parent-death signal cannot kill us
        // before we can act on it.
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(err) => {
                    eprintln!("lro-proxy watchdog: cannot handle SIGTERM: {err}");
                    return 1;
                }
            };
        if let Err(err) = set_child_subreaper(Some(getpid()))
            .and_then(|()| set_parent_process_death_signal(Some(Signal::TERM)))
        {
            eprintln!("lro-proxy watchdog: prctl: {err}");
            return 1;
        }
        // A parent outside our pid namespace reads as 0 (`None`).
        if Pid::as_raw(getppid()) != parent {
            // The parent died before we asked to be told.
            return 1;
        }
        // Spawned from this thread, which lives as long as the process: a
        // child's parent-death signal fires when the thread that started it
        // exits, so the inner watchdog's fires exactly when this one dies.
        let mut child = match tokio::process::Command::new(&program)
            .args(&args)
            .process_group(0)
            .spawn()
        {
            Ok(child) => child,
            Err(err) => {
                eprintln!(
                    "lro-proxy watchdog: cannot start {}: {err}",
                    program.to_string_lossy()
                );
                return 127;
            }
        };
        let group = child.id().and_then(|id| Pid::from_raw(id as i32));
        let status = tokio::select! {
            status = child.wait() => status.ok(),
            _ = term.recv() => {
                if let Some(group) = group {
                    let _ = kill_process_group(group, Signal::TERM);
                }
                tokio::time::timeout(term_grace, child.wait()).await.ok().and_then(Result::ok)
            }
        };
        sweep(group);
        status.map_or(128 + Signal::KILL.as_raw() as u8, |status| {
            use std::os::unix::process::ExitStatusExt as _;
            match (status.code(), status.signal()) {
                (Some(code), _) => code as u8,
                (None, Some(signal)) => 128 + signal as u8,
                (None, None) => 1,
            }
        })
    })
}

/// Kills the upstream's group, then every process left under the watchdog,
/// until it has no child: each orphan is reparented to the watchdog (the
/// subreaper) when its parent dies, and is killed on the next pass.
fn sweep(group: Option<Pid>) {
    if let Some(group) = group {
        let _ = kill_process_group(group, Signal::KILL);
    }
    let deadline = std::time::Instant::now() + SWEEP_LIMIT;
    while std::time::Instant::now() < deadline {
        for pid in children_of(getpid()) {
            let _ = kill_process(pid, Signal::KILL);
        }
        // `wait`, not `waitpid(None, …)`: rustix's `None` there is pid 0,
        // our own group only, and the upstream has a group of its own.
        match wait(WaitOptions::NOHANG) {
            Err(Errno::CHILD) => return,
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            _ => {}
        }
    }
}

/// The processes whose parent is `parent`, read from `/proc`.
fn children_of(parent: Pid) -> Vec<Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| {
            let pid: i32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            (parent_in_stat(&stat)? == parent.as_raw_pid())
                .then_some(pid)
                .and_then(Pid::from_raw)
        })
        .collect()
}

/// The parent pid in a `/proc/PID/stat` line: the second field after the
/// command name, which is in parentheses and may hold anything.
fn parent_in_stat(stat: &str) -> Option<i32> {
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_is_read_from_a_stat_line() {
        assert_eq!(parent_in_stat("42 (sh) S 7 42 42 0"), Some(7));
        assert_eq!(parent_in_stat("42 (a) b) (c) R 9 1"), Some(9));
        assert_eq!(parent_in_stat("garbage"), None);
    }

    #[test]
    fn the_watchdog_is_told_its_parent_and_the_upstream() {
        let argv = argv(&"npx".into(), &["-y".into(), "server".into()]);
        assert_eq!(argv[0], MARKER);
        assert_eq!(argv[1], OsString::from(std::process::id().to_string()));
        assert_eq!(
            argv[2..],
            [OsString::from("npx"), "-y".into(), "server".into()]
        );
        // The outer one starts the inner one the same way, watching itself.
        let inner = marked(INNER_MARKER, &argv[2], &argv[3..]);
        assert_eq!(inner[0], INNER_MARKER);
        assert_eq!(inner[1..], argv[1..]);
    }
}

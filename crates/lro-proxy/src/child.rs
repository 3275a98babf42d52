//! A stdio upstream: the child process, its transport, and its end.
//!
//! The child runs in a process group of its own, so that the proxy can end
//! the whole tree (`npx` starts `node` underneath) and leave no orphans.
//! Ending follows the MCP stdio shutdown order: close the child's stdin, wait,
//! then SIGTERM the group, wait, then SIGKILL it.

use std::{
    ffi::OsString,
    path::Path,
    process::{ExitStatus, Stdio},
    time::Duration,
};

use rustix::process::{Pid, Signal, kill_process_group};
use tokio::{
    process::Command,
    sync::{oneshot, watch},
};
use tokio_util::task::TaskTracker;

use crate::{
    ProxyError,
    exit::{ChildExit, GRACE},
    telemetry,
    transport::ChildTransport,
};

/// The proxy's hold on a running child. Dropping it ends the child.
pub(crate) struct ChildGuard {
    exit: watch::Receiver<Option<ChildExit>>,
    _stop: oneshot::Sender<()>,
}

impl ChildGuard {
    /// A receiver that holds the child's exit once it has happened.
    pub(crate) fn exit(&self) -> watch::Receiver<Option<ChildExit>> {
        self.exit.clone()
    }

    /// The child's exit, if it happens within `wait`.
    pub(crate) async fn exit_within(&self, wait: Duration) -> Option<ChildExit> {
        let mut exit = self.exit();
        match tokio::time::timeout(wait, exit.wait_for(Option::is_some)).await {
            Ok(Ok(exit)) => *exit,
            _ => None,
        }
    }
}

/// Spawns `program args`, with `env` added to what it inherits, and returns
/// the guard and the client transport over its pipes, which accepts lines up
/// to `max_line` bytes.
/// Under a `watchdog` executable, the child is the outer watchdog, which
/// starts the inner one, which starts `program args`; they end all of it
/// when the proxy, or either of them, dies (see [`crate::watchdog`]).
pub(crate) fn spawn(
    program: &OsString,
    args: &[OsString],
    env: &[(OsString, OsString)],
    watchdog: Option<&Path>,
    max_line: usize,
    tracker: &TaskTracker,
) -> Result<(ChildGuard, ChildTransport), ProxyError> {
    let shown = std::iter::once(program)
        .chain(args)
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    let mut command = match watchdog {
        Some(watchdog) => {
            let mut command = Command::new(watchdog);
            command.args(crate::watchdog::argv(program, args));
            command
        }
        None => {
            let mut command = Command::new(program);
            command.args(args);
            command
        }
    };
    let mut child = command
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| ProxyError::Spawn {
            command: shown.clone(),
            source,
        })?;
    let pid = child.id().and_then(|id| Pid::from_raw(id as i32));
    let stdin = child.stdin.take().expect("stdin is piped");
    let stdout = child.stdout.take().expect("stdout is piped");

    let (exit_tx, exit_rx) = watch::channel(None);
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    tracker.spawn(async move {
        let exit = tokio::select! {
            status = child.wait() => ChildExit { status: status_or_failure(status), by_proxy: false },
            _ = stop_rx => ChildExit { status: end(&mut child, pid).await, by_proxy: true },
        };
        // Whatever the child left in its group would be orphaned otherwise.
        if let Some(pid) = pid {
            let _ = kill_process_group(pid, Signal::KILL);
        }
        tracing::info!(command = %shown, "upstream {exit}");
        telemetry::upstream_exit(exit.reason());
        let _ = exit_tx.send(Some(exit));
    });
    let transport = ChildTransport::new(stdout, stdin, max_line, tracker.clone(), exit_rx.clone());
    Ok((
        ChildGuard {
            exit: exit_rx,
            _stop: stop_tx,
        },
        transport,
    ))
}

/// Finds `program` the way `execvp` would, and checks it is an executable
/// file, so a typo is reported before any client connects.
pub(crate) fn check_program(program: &OsString) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let executable = |path: &std::path::Path| -> std::io::Result<()> {
        let meta = std::fs::metadata(path)?;
        if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
            Ok(())
        } else {
            Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "not an executable file",
            ))
        }
    };
    let path = std::path::Path::new(program);
    if path.components().count() > 1 {
        return executable(path);
    }
    let search = std::env::var_os("PATH").unwrap_or_default();
    let mut last = None;
    for dir in std::env::split_paths(&search) {
        match executable(&dir.join(path)) {
            Ok(()) => return Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => last = Some(err),
        }
    }
    Err(last
        .unwrap_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "not found on PATH")))
}

/// Ends a child the MCP way: its stdin closes with the session's transport,
/// so wait, then SIGTERM the group, wait, then SIGKILL it.
async fn end(child: &mut tokio::process::Child, pid: Option<Pid>) -> ExitStatus {
    if let Ok(status) = tokio::time::timeout(GRACE, child.wait()).await {
        return status_or_failure(status);
    }
    if let Some(pid) = pid {
        let _ = kill_process_group(pid, Signal::TERM);
    }
    if let Ok(status) = tokio::time::timeout(GRACE, child.wait()).await {
        return status_or_failure(status);
    }
    if let Some(pid) = pid {
        let _ = kill_process_group(pid, Signal::KILL);
    }
    status_or_failure(child.wait().await)
}

fn status_or_failure(status: std::io::Result<ExitStatus>) -> ExitStatus {
    use std::os::unix::process::ExitStatusExt as _;
    status.unwrap_or_else(|err| {
        tracing::warn!(err = %lro_core::error::chain(&err), "cannot wait for the upstream child");
        ExitStatus::from_raw(1 << 8)
    })
}

"""Processes: free ports, pids, process groups, and processes with readiness lines.

`Background` starts a process whose stderr a thread drains (into memory and a
log file); `wait_line` waits for a stderr line matching a pattern, such as the
readiness line `... listening on http://ADDR/mcp` the binaries print once
bound (start them on port 0: no port race). With `new_session` the process
leads a process group of its own, and `stop` ends the whole group.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from testkit.binaries import wait_for_binary
from testkit.waiting import PROMPT_S

# The readiness line of `lro proxy --http`, `lro context serve`, `memory-server --http`.
LISTENING = re.compile(r"listening on (http://\S+)")
# How long a process has to end after SIGTERM before SIGKILL.
GRACE_S = 8.0
# How long a server has to print its readiness line (a Python one imports its SDK first).
READY_S = 30.0


def free_port() -> int:
    """A TCP port nothing listens on at 127.0.0.1 right now (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def environ_without(*prefixes: str) -> dict[str, str]:
    """This process's environment without the variables that start with `prefixes`
    (inherited settings a test must not pass on, such as ATLATL_)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}


def pid_alive(pid: int) -> bool:
    """Whether `pid` is a live (not zombie) process."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # The state is the field after the parenthesised command name.
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def children(pid: int) -> list[int]:
    """The pids of the live child processes of `pid` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, ppid = stat.read_text().rsplit(")", 1)[1].split()[:2]
        except (OSError, ValueError):
            continue  # gone meanwhile
        if int(ppid) == pid and state != "Z":
            found.append(int(stat.parent.name))
    return found


def tagged_pids(var: str, tag: str) -> list[int]:
    """The live processes (this one aside) whose environment carries `var=tag`: a
    test's own processes and everything they started, whatever their parents now."""
    needle = f"{var}={tag}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0") and pid_alive(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return found


def parent(pid: int) -> int | None:
    """The parent pid of `pid` (from /proc), or None once it is gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def kill_quietly(pid: int) -> None:
    """SIGKILL to `pid`, if it is still there."""
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(proc: subprocess.Popen, grace: float = GRACE_S) -> None:
    """SIGTERM to the process group `proc` leads (started with
    start_new_session), a bounded wait for it, then SIGKILL to whatever of the
    group is left. A process in the caller's own group is only killed itself."""
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        pgid = proc.pid  # the leader is gone; its group may not be
    if pgid == os.getpgrp():
        proc.kill()
        proc.wait(grace)
        return
    _signal_group(pgid, signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        pass
    _signal_group(pgid, signal.SIGKILL)
    proc.wait(grace)


class Background:
    """A process with stderr drained by a thread (kept in memory and in a file);
    `wait_line` waits for a stderr line matching a pattern."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str] | None,
        log_path: Path,
        stdin: Any = subprocess.DEVNULL,
        cwd: Path | None = None,
        new_session: bool = False,
        name: str | None = None,
    ):
        """`new_session`: the process leads a process group of its own, and
        `stop` ends the whole group (for launchers such as node that start
        children of their own). `name` names it in messages (argv[0] by default)."""
        self.argv = [str(a) for a in argv]
        self.name = name or self.argv[0]
        self.log_path = log_path
        self.new_session = new_session
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._log = open(log_path, "w")
        wait_for_binary(self.argv[0])
        self.proc = subprocess.Popen(
            self.argv,
            env=env,
            cwd=cwd,
            stdin=stdin,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=new_session,
        )
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace")
            with self._cond:
                self.lines.append(line)
                self._log.write(line)
                self._log.flush()
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_line(self, pattern: re.Pattern[str] | str, timeout: float = PROMPT_S) -> re.Match[str]:
        """The first match of `pattern` in a stderr line; AssertionError when the
        process ends first or `timeout` passes."""
        rx = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout
        seen = 0
        with self._cond:
            while True:
                for line in self.lines[seen:]:
                    if m := rx.search(line):
                        return m
                seen = len(self.lines)
                if self.proc.poll() is not None and not self._thread.is_alive():
                    raise AssertionError(f"{self.name} exited ({self.proc.returncode}) before {rx.pattern!r}:\n{self.stderr()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {rx.pattern!r} within {timeout}s from {self.argv}:\n{self.stderr()}")
                self._cond.wait(min(left, 0.2))

    def wait_url(self, timeout: float = PROMPT_S) -> str:
        """The URL of the readiness line (`... listening on http://...`)."""
        return self.wait_line(LISTENING, timeout).group(1)

    def stderr(self) -> str:
        with self._cond:
            return "".join(self.lines)

    def tail(self, n: int = 40) -> str:
        """The last `n` stderr lines, headed by the process's name and log file."""
        with self._cond:
            lines = self.lines[-n:]
        return f"--- last {len(lines)} lines of {self.name} ({self.log_path}) ---\n" + "".join(lines)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait_exit(self, timeout: float = GRACE_S) -> int:
        code = self.proc.wait(timeout)
        self._thread.join(timeout)
        return code

    def stop(self, grace: float = GRACE_S) -> None:
        """SIGTERM (to the group with `new_session`), a bounded wait, then SIGKILL."""
        if self.new_session:
            kill_group(self.proc, grace)
        elif self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._thread.join(5)
        self._log.close()


@contextmanager
def serving(name: str, argv: list[str], log_path: Path, env: dict[str, str] | None = None, ready: float = READY_S) -> Iterator[str]:
    """Runs a server in a process group of its own until the block ends; yields
    the URL of its readiness line (`... listening on http://...`). On exit the
    group gets SIGTERM, then SIGKILL."""
    proc = Background(argv, env, log_path, new_session=True, name=name)
    try:
        yield proc.wait_url(ready)
    finally:
        proc.stop()

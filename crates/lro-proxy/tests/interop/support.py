"""Shared helpers for the `lro proxy` interop tests.

- where things are: the repository root, the `lro` and `memory-server`
  binaries, the fixture server;
- environments for the proxy (offload settings) and the fixture (pid file,
  cancel marker, shadowing);
- `proxy_stdio(...)`: `lro proxy` spawned with its stdio face, wired to the
  official Python SDK's `ClientSession`, with the process (pid, exit status)
  and its stderr at hand;
- `Background`: a process whose stderr is drained by a thread, with a wait for
  a readiness line (`... listening on http://ADDR/mcp`);
- bounded polling (`wait_until`), pid liveness, descriptor parsing, jq.

No sleeps are used for synchronisation: every wait is a poll with a deadline,
a readiness line, or an event.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types
from anyio.abc import Process
from mcp import ClientSession
from mcp.shared.message import SessionMessage

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
PY_SERVER = FIXTURES / "py_server.py"
REPO = HERE.parents[3]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
LRO = TARGET / "debug" / "lro"
MEMORY_SERVER = TARGET / "debug" / "memory-server"

# The constants the fixture server uses (it runs in its own process).
sys.path.insert(0, str(FIXTURES))
import fixture_spec as fixture  # noqa: E402

# Every wait in the suite is bounded by one of these.
PROMPT_S = 10.0  # an answer, a notification, a readiness line
EXIT_S = 8.0  # a process exit (the proxy ends a child within 2 s + 2 s grace)
LISTEN_RE = re.compile(r"listening on (http://[^\s]+/mcp)")


# --------------------------------------------------------------------------
# polling and processes


def wait_until(predicate: Callable[[], Any], timeout: float = PROMPT_S, interval: float = 0.02, what: str = "") -> Any:
    """Polls `predicate` until it returns a truthy value (returned) or `timeout` passes (AssertionError)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")
        time.sleep(interval)


async def await_until(predicate: Callable[[], Any], timeout: float = PROMPT_S, interval: float = 0.02, what: str = "") -> Any:
    """`wait_until` for async code."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")
        await anyio.sleep(interval)


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


def read_pids(path: Path) -> list[int]:
    """The pids the fixture wrote (one a line) into its FIXTURE_PID_FILE."""
    try:
        return [int(line) for line in path.read_text().split()]
    except FileNotFoundError:
        return []


def free_port() -> int:
    """A TCP port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_binary(program: str | Path, timeout: float = 120.0) -> None:
    """Another build may be relinking target/debug/*: wait (bounded) for our binaries to be back."""
    path = Path(program)
    if path in (LRO, MEMORY_SERVER) and not path.is_file():
        wait_until(path.is_file, timeout=timeout, interval=0.5, what=f"{path} to be rebuilt")


def kill_group(proc: subprocess.Popen, grace: float = EXIT_S) -> None:
    """SIGTERM the process group `proc` leads, bounded wait, then SIGKILL; the
    rest of the group is killed once the leader is gone."""
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        pgid = proc.pid
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5)):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(wait)
            try:
                os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            return
        except subprocess.TimeoutExpired:
            continue


def kill_quietly(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# --------------------------------------------------------------------------
# environments


def offload_env(output_dir: Path | None, threshold: int | None = None, enabled: bool | None = None) -> dict[str, str]:
    """ATLATL_PROMPT__OFFLOAD__* for the proxy (or the memory server)."""
    env: dict[str, str] = {}
    if output_dir is not None:
        env["ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR"] = str(output_dir)
    if threshold is not None:
        env["ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS"] = str(threshold)
    if enabled is not None:
        env["ATLATL_PROMPT__OFFLOAD__ENABLED"] = "true" if enabled else "false"
    return env


def full_env(extra: dict[str, str]) -> dict[str, str]:
    """This process's environment without inherited ATLATL_/FIXTURE_ settings, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATLATL_", "FIXTURE_"))}
    env.setdefault("RUST_LOG", "info")
    env.update(extra)
    return env


def fixture_cmd() -> list[str]:
    return [sys.executable, str(PY_SERVER)]


# --------------------------------------------------------------------------
# the proxy over stdio, with the SDK's ClientSession on top


@dataclass
class StdioProc:
    """A process spoken to over stdin/stdout (newline-delimited JSON-RPC)."""

    process: Process
    stderr_path: Path
    read_stream: Any
    write_stream: Any
    sent: list[dict] = field(default_factory=list)
    received: list[dict] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    async def close_stdin(self) -> None:
        await self.process.stdin.aclose()

    async def wait_exit(self, timeout: float = EXIT_S, why: str = "") -> int:
        """The exit status, or AssertionError when the process is still running after `timeout`."""
        with anyio.move_on_after(timeout):
            return await self.process.wait()
        tail = "".join(self.stderr().splitlines(keepends=True)[-6:])
        raise AssertionError(
            f"pid {self.pid} still running {timeout}s later{' (' + why + ')' if why else ''}; "
            f"its stdin is still open. stderr tail:\n{tail}"
        )

    def session(self, **callbacks: Any) -> ClientSession:
        return ClientSession(self.read_stream, self.write_stream, **callbacks)

    def wire_result(self, method: str, name: str | None = None, nth: int = -1) -> dict:
        """The raw JSON-RPC response (as received) to the `nth` request sent
        with this method (and params.name)."""
        ids = [
            m["id"]
            for m in self.sent
            if m.get("method") == method and "id" in m and (name is None or (m.get("params") or {}).get("name") == name)
        ]
        assert ids, f"no {method} {name or ''} request was sent"
        rid = ids[nth]
        answers = [m for m in self.received if m.get("id") == rid and ("result" in m or "error" in m)]
        assert len(answers) == 1, f"expected one answer to request {rid}, got {answers}"
        return answers[0]


@asynccontextmanager
async def unwrapped() -> AsyncIterator[None]:
    """Re-raises the one exception of (nested) single-exception groups, so a
    failing assertion inside a task group reads as itself."""
    try:
        yield
    except BaseExceptionGroup as group:
        exc: BaseException = group
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        if exc is group:
            raise
        raise exc from None


@asynccontextmanager
async def stdio_process(argv: list[str], env: dict[str, str], stderr_path: Path) -> AsyncIterator[StdioProc]:
    """Spawns `argv` with piped stdin/stdout and stderr to `stderr_path`; yields
    the SDK-style (read, write) streams over its stdio. On exit, stdin is closed
    and the process waited for (bounded), then killed if still there."""
    ensure_binary(argv[0])
    with open(stderr_path, "wb") as errfile:
        process = await anyio.open_process(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errfile, env=env)
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](64)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](64)
    proc = StdioProc(process, stderr_path, read_recv, write_send)

    async def reader() -> None:
        buffer = b""
        async with read_send:
            try:
                async for chunk in process.stdout:
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if not line.strip():
                            continue
                        try:
                            proc.received.append(json.loads(line))
                            message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                        except ValueError as exc:
                            await read_send.send(exc)
                            continue
                        await read_send.send(SessionMessage(message))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass

    async def writer() -> None:
        async with write_recv:
            try:
                async for message in write_recv:
                    data = message.message.model_dump(by_alias=True, mode="json", exclude_unset=True)
                    proc.sent.append(data)
                    await process.stdin.send((json.dumps(data) + "\n").encode())
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                pass

    try:
        async with unwrapped(), anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            try:
                yield proc
            finally:
                with anyio.CancelScope(shield=True):
                    write_send.close()
                    try:
                        await process.stdin.aclose()
                    except Exception:
                        pass
                    with anyio.move_on_after(EXIT_S):
                        await process.wait()
                    if process.returncode is None:
                        process.kill()
                        with anyio.move_on_after(5):
                            await process.wait()
                tg.cancel_scope.cancel()
    finally:
        await process.aclose() if process.returncode is not None else None


@asynccontextmanager
async def connect(argv: list[str], env: dict[str, str], stderr_path: Path, **callbacks: Any) -> AsyncIterator[tuple[StdioProc, ClientSession]]:
    """`stdio_process` plus an initialized SDK `ClientSession` over it."""
    async with stdio_process(argv, env, stderr_path) as proc:
        async with proc.session(**callbacks) as session:
            with anyio.fail_after(PROMPT_S * 2):
                await session.initialize()
            yield proc, session


def proxy_argv(*args: str, upstream: list[str] | None = None) -> list[str]:
    argv = [str(LRO), "proxy", *args]
    if upstream is not None:
        argv += ["--", *upstream]
    return argv


# --------------------------------------------------------------------------
# processes with a readiness line


class Background:
    """A process with stderr drained by a thread (kept in memory and in a file);
    `wait_line` waits for a stderr line matching a pattern."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        log_path: Path,
        stdin: Any = subprocess.DEVNULL,
        cwd: Path | None = None,
        new_session: bool = False,
    ):
        """`new_session`: the process leads a process group of its own, and
        `stop` ends the whole group (for launchers such as node that start
        children of their own)."""
        self.argv = argv
        self.log_path = log_path
        self.new_session = new_session
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._log = open(log_path, "w")
        ensure_binary(argv[0])
        self.proc = subprocess.Popen(
            argv,
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
                    raise AssertionError(f"{self.argv[0]} exited ({self.proc.returncode}) before {rx.pattern!r}:\n{self.stderr()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {rx.pattern!r} within {timeout}s from {self.argv}:\n{self.stderr()}")
                self._cond.wait(min(left, 0.2))

    def wait_url(self, timeout: float = PROMPT_S) -> str:
        return self.wait_line(LISTEN_RE, timeout).group(1)

    def stderr(self) -> str:
        with self._cond:
            return "".join(self.lines)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_exit(self, timeout: float = EXIT_S) -> int:
        code = self.proc.wait(timeout)
        self._thread.join(timeout)
        return code

    def stop(self) -> None:
        if self.new_session:
            kill_group(self.proc)
        elif self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(EXIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._thread.join(5)
        self._log.close()


def run_cli(args: list[str], env: dict[str, str] | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """Runs `lro ARGS` to completion with stdin closed."""
    ensure_binary(LRO)
    return subprocess.run(
        [str(LRO), *args], env=env or full_env({}), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
    )


# --------------------------------------------------------------------------
# results, descriptors, jq


def dump(model: Any) -> Any:
    """A pydantic model as its JSON wire value."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def texts(result: Any) -> list[str]:
    return [c.text for c in result.content if getattr(c, "type", None) == "text"]


def descriptor(result: Any) -> dict:
    """The offload descriptor of a tool result (its one text block, parsed)."""
    blocks = texts(result)
    assert blocks, f"no text content in {dump(result)}"
    try:
        desc = json.loads(blocks[0])
    except json.JSONDecodeError as exc:
        raise AssertionError(f"not a descriptor (not JSON): {blocks[0][:300]!r}") from exc
    assert isinstance(desc, dict) and desc.get("offloaded") is True, f"not a descriptor: {blocks[0][:500]}"
    return desc


def read_offload_file(path: Path) -> tuple[dict, list[Any]]:
    """(header, records) of an offload JSONL file."""
    lines = path.read_text().splitlines()
    assert lines, f"{path} is empty"
    header = json.loads(lines[0])
    return header, [json.loads(line) for line in lines[1:]]


def run_recipe(command: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """A jq recipe command from a descriptor, run by bash (we made it, we trust it)."""
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=timeout)


def jq_filter(command: str) -> str:
    """The jq filter of a recipe command (`... | jq [-opts] 'FILTER' [files]`)."""
    words = shlex.split(command.split("| jq", 1)[1] if "| jq" in command else command)
    takes = {"--arg": 2, "--argjson": 2, "--slurpfile": 2, "--rawfile": 2, "--indent": 1, "-L": 1}
    i = 0
    while i < len(words):
        word = words[i]
        if word == "jq":
            i += 1
        elif word in takes:
            i += 1 + takes[word]
        elif word.startswith("-"):
            i += 1
        else:
            return word
    raise AssertionError(f"no jq filter in {command!r}")


def field_refs(jq_program: str) -> set[str]:
    """Object keys a jq program reads: `.name`, `."name"`, `.["name"]`, and the
    shorthand keys of object construction `{id, name}` (not `$vars`, builtins)."""
    # Strip string literals first so `"a.b"` inside strings is not read as a path.
    bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', jq_program)
    refs = set(re.findall(r"(?<![\w$])\.([A-Za-z_][A-Za-z0-9_]*)", bare))
    refs |= set(re.findall(r'\.\[?"([^"]+)"\]?', jq_program))
    # `{id, name}`: a bare identifier right after `{` or `,` and right before `,` or `}`.
    refs |= set(re.findall(r"[{,]\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?=[,}])", bare))
    return refs

"""Shared helpers for the `lro proxy` interop tests, over the test kit
(testkit: binaries, waits, pids, process groups, `Background` processes with
readiness lines).

- the fixture server (fixtures/py_server.py; its constants, which the tests
  import too, are fixtures/fixture_spec.py);
- environments for the proxy (offload settings) and the fixture (pid file,
  cancel marker, shadowing);
- `stdio_process(...)` and `connect(...)`: `lro proxy` spawned with its stdio face, wired to the
  official Python SDK's `ClientSession`, with the process (pid, exit status)
  and its stderr at hand; `proxied(...)`: that session through the proxy to
  the fixture server;
- the fixture's pid file, descriptor parsing, jq.

No sleeps are used for synchronisation: every wait is a poll with a deadline,
a readiness line, or an event.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types
from anyio.abc import Process
from mcp import ClientSession
from mcp.shared.message import SessionMessage

from testkit.binaries import wait_for_binary
from testkit.paths import LRO
from testkit.procs import environ_without, kill_group
from testkit.waiting import PROMPT_S, await_until

PY_SERVER = Path(__file__).resolve().parent / "fixtures" / "py_server.py"
# The pinned npm parts (ts/package.json): the TypeScript SDK client and server-everything.
TS = Path(__file__).resolve().parent / "ts"
CLIENT_JS = TS / "client.mjs"
EVERYTHING_JS = TS / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"

# A process exit (the proxy ends a child within 2 s + 2 s grace).
EXIT_S = 8.0
# One ts/client.mjs run, start to end.
CLIENT_TIMEOUT_S = 60


def read_pids(path: Path) -> list[int]:
    """The pids the fixture wrote (one a line) into its FIXTURE_PID_FILE."""
    try:
        return [int(line) for line in path.read_text().split()]
    except FileNotFoundError:
        return []


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
    env = environ_without("ATLATL_", "FIXTURE_")
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
    wait_for_binary(argv[0])
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
# the fixture server through the proxy


def proxied(tmp_path: Path, fixture_env: dict[str, str], out_dir: Path, extra_env: dict[str, str] | None = None,
            threshold: int | None = None, enabled: bool | None = None, **callbacks: Any):
    """`connect` to `lro proxy -- python3 py_server.py`: an initialized session
    through the proxy to the fixture (offload settings as `offload_env`; the
    default threshold: nothing small is large)."""
    env = full_env({**fixture_env, **(extra_env or {}), **offload_env(out_dir, threshold=threshold, enabled=enabled)})
    return connect(proxy_argv(upstream=fixture_cmd()), env, tmp_path / "proxy.err", **callbacks)


def proxied_process(tmp_path: Path, fixture_env: dict[str, str], out_dir: Path):
    """`stdio_process` of `lro proxy -- python3 py_server.py` (default offload
    settings), for a test that drives the session itself."""
    env = full_env({**fixture_env, **offload_env(out_dir)})
    return stdio_process(proxy_argv(upstream=fixture_cmd()), env, tmp_path / "proxy.err")


async def upstream_pid(session: ClientSession) -> int:
    """Initializes `session` and asks the fixture behind it for its pid (`whoami`)."""
    with anyio.fail_after(PROMPT_S):
        await session.initialize()
        return int(texts(await session.call_tool("whoami"))[0])


async def cancel_slow_call(session: ClientSession, fixture_env: dict[str, str]) -> None:
    """Starts the fixture's `slow` tool, waits until it runs upstream, then
    cancels the call on the client side."""
    started = Path(fixture_env["FIXTURE_STARTED_FILE"])
    async with anyio.create_task_group() as tg:
        scope = anyio.CancelScope()

        async def call() -> None:
            with scope:
                await session.call_tool("slow", {"seconds": 30})

        tg.start_soon(call)
        await await_until(started.exists, what="slow() to start upstream")
        scope.cancel()


def relaxed(schema: dict) -> dict:
    """What LroLayer documents for an output schema: it also admits the offload
    descriptor, with the schema's definitions at the root its references name."""
    hoisted = {k: schema[k] for k in ("$schema", "$id", "$defs", "definitions") if k in schema}
    return {
        **hoisted,
        "type": "object",
        "anyOf": [
            {k: v for k, v in schema.items() if k not in hoisted},
            {
                "type": "object",
                "required": ["offloaded", "file_path"],
                "properties": {"offloaded": {"const": True}, "file_path": {"type": "string"}},
            },
        ],
    }


def run_cli(args: list[str], env: dict[str, str] | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """Runs `lro ARGS` to completion with stdin closed."""
    wait_for_binary(LRO)
    return subprocess.run(
        [str(LRO), *args], env=env or full_env({}), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
    )


# --------------------------------------------------------------------------
# the npm parts: server-everything and the TypeScript SDK client (ts/client.mjs)


def everything_stdio() -> list[str]:
    """server-everything over stdio."""
    return [shutil.which("node") or "node", str(EVERYTHING_JS), "stdio"]


def run_client(target: list[str], ops: list[str], env: dict[str, str], timeout: float = CLIENT_TIMEOUT_S) -> dict:
    """Runs ts/client.mjs (its own process group, killed afterwards) and returns its JSON.
    `target` is ["--url", URL] or ["--stdio", "--", COMMAND, ...]."""
    argv = [shutil.which("node") or "node", str(CLIENT_JS), *ops, *target]
    proc = subprocess.Popen(argv, cwd=TS, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, err = proc.communicate()
        raise AssertionError(f"client.mjs did not finish within {timeout}s: {argv}\nstderr:\n{err.decode(errors='replace')[-4000:]}")
    finally:
        kill_group(proc)
    stderr = err.decode(errors="replace")
    lines = out.decode().strip().splitlines()
    assert proc.returncode == 0 and lines, f"client.mjs failed ({proc.returncode}): {argv}\nstdout: {out[-2000:]!r}\nstderr:\n{stderr[-4000:]}"
    result = json.loads(lines[-1])
    result["stderr"] = stderr
    return result


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

"""E. Faults: a crashing upstream, an upstream that cannot start, bad flags,
a client that goes away, SIGTERM, an unreachable HTTP upstream. Exit status
0 ok, 1 run-time failure, 2 usage error; no orphaned children; no panics.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from support import (
    EXIT_S, fixture_cmd, full_env, offload_env, proxied_process, proxy_argv, read_pids, run_cli, stdio_process, upstream_pid,
)
from testkit.procs import free_port, kill_quietly, parent, pid_alive
from testkit.waiting import await_until

# A pending call must fail well before any client-side timeout.
PROMPT_ERROR_S = 8.0


def no_panic(stderr: str) -> None:
    assert "panicked" not in stderr, stderr


async def _crash_mid_call(tmp_path, env, wait_for_exit: bool) -> dict:
    async with stdio_process(proxy_argv(upstream=fixture_cmd()), env, tmp_path / "proxy.err") as proc:
        async with proc.session() as session:
            child = await upstream_pid(session)
            started = time.monotonic()
            try:
                with anyio.fail_after(PROMPT_ERROR_S):
                    await session.call_tool("crash", {"code": 3})
                error = None
            except MCPError as exc:
                error = exc
            elapsed = time.monotonic() - started
            # The client keeps its end open, as a real client would while it
            # waits for the proxy to exit.
            code = await proc.wait_exit(why="after its upstream crashed") if wait_for_exit else None
        return {"error": error, "elapsed": elapsed, "code": code, "stderr": proc.stderr(), "child": child}


@pytest.mark.anyio
async def test_upstream_crash_fails_the_pending_call_promptly(tmp_path, fixture_env, out_dir):
    got = await _crash_mid_call(tmp_path, full_env({**fixture_env, **offload_env(out_dir)}), wait_for_exit=False)
    assert got["error"] is not None, "the crash(3) call did not fail"
    assert got["elapsed"] < PROMPT_ERROR_S
    assert "exited with status 3" in got["error"].message, (got["error"].code, got["error"].message)
    assert not pid_alive(got["child"])
    no_panic(got["stderr"])


@pytest.mark.anyio
async def test_upstream_crash_ends_the_proxy_with_status_1(tmp_path, fixture_env, out_dir):
    got = await _crash_mid_call(tmp_path, full_env({**fixture_env, **offload_env(out_dir)}), wait_for_exit=True)
    assert got["code"] == 1, got["stderr"]
    last = got["stderr"].strip().splitlines()[-1]
    assert last.startswith("lro: upstream `") and last.endswith("exited with status 3"), last
    no_panic(got["stderr"])


@pytest.mark.anyio
async def test_upstream_exits_before_initialize(tmp_path):
    """An upstream that dies at start: the client's initialize gets an error
    naming the exit, and the proxy exits 1 saying so."""
    upstream = [sys.executable, "-c", "import sys; sys.exit(3)"]
    async with stdio_process(proxy_argv(upstream=upstream), full_env({}), tmp_path / "proxy.err") as proc:
        async with proc.session() as session:
            with pytest.raises(MCPError) as err:
                with anyio.fail_after(PROMPT_ERROR_S):
                    await session.initialize()
        # The client is still connected: the proxy must not wait for it.
        code = await proc.wait_exit()
    stderr = proc.stderr()
    assert "exited with status 3" in err.value.message, err.value.message
    assert code == 1, stderr
    assert "exited with status 3" in stderr, stderr
    no_panic(stderr)


INIT_LINE = json.dumps(
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
) + "\n"


@pytest.mark.parametrize(
    ("upstream", "says"),
    [
        ([sys.executable, "-c", "import sys; sys.exit(3)"], "exited with status 3"),
        # The command runs, the program it starts does not exist.
        (["sh", "-c", "exec /nonexistent/upstream-server"], "exited with status 127"),
    ],
    ids=["dies", "missing"],
)
def test_a_client_that_closes_stdin_after_initialize_gets_status_1_when_the_upstream_failed(upstream, says):
    """The client writes `initialize` and closes stdin at once: the proxy sees
    the end of input while the upstream fails, and still exits 1, saying why."""
    proc = subprocess.run(
        proxy_argv(upstream=upstream), input=INIT_LINE, env=full_env({}), capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 1, proc
    assert says in proc.stderr, proc.stderr
    no_panic(proc.stderr)


def test_spawn_failure_names_the_command():
    proc = run_cli(["proxy", "--", "/nonexistent/cmd", "--flag"])
    assert proc.returncode == 1, proc
    assert "/nonexistent/cmd" in proc.stderr, proc.stderr
    no_panic(proc.stderr)


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["proxy", "--bogus"], "--bogus"),
        (["proxy", "--bogus", "--", "x"], "--bogus"),
        (["proxy", "--url", "ftp://x"], "--url"),
        (["proxy", "--header", "A: b", "--", "x"], "--header"),
        (["proxy", "--url", "http://127.0.0.1:1/mcp", "--header", "no colon"], "--header"),
        (["proxy", "--max-sessions", "0", "--", "x"], "--max-sessions"),
        (["proxy"], "COMMAND"),
    ],
)
def test_usage_errors_exit_2_naming_the_flag(args, flag):
    proc = run_cli(args)
    assert proc.returncode == 2, proc
    assert flag in proc.stderr, proc.stderr
    no_panic(proc.stderr)


def test_unreachable_http_upstream_at_start():
    url = f"http://127.0.0.1:{free_port()}/mcp"
    proc = run_cli(["proxy", "--url", url])
    assert proc.returncode == 1, proc
    assert url in proc.stderr, proc.stderr
    no_panic(proc.stderr)


@pytest.mark.anyio
async def test_client_going_away_ends_proxy_and_child(tmp_path, fixture_env, pid_file, out_dir):
    async with proxied_process(tmp_path, fixture_env, out_dir) as proc:
        async with proc.session() as session:
            child = await upstream_pid(session)
        assert read_pids(pid_file) == [child]
        assert pid_alive(child)
        await proc.close_stdin()
        code = await proc.wait_exit()
    assert code == 0, proc.stderr()
    await await_until(lambda: not pid_alive(child), timeout=EXIT_S, what=f"upstream child {child} to end")
    no_panic(proc.stderr())


@pytest.mark.anyio
async def test_sigterm_ends_child_then_proxy(tmp_path, fixture_env, pid_file, out_dir):
    async with proxied_process(tmp_path, fixture_env, out_dir) as proc:
        async with proc.session() as session:
            child = await upstream_pid(session)
            assert pid_alive(child)
            os.kill(proc.pid, signal.SIGTERM)
            await await_until(lambda: not pid_alive(child), timeout=EXIT_S, what=f"upstream child {child} to end")
            # The client still holds the proxy's stdin, as a supervisor would.
            code = await proc.wait_exit(why="after SIGTERM")
    assert code == 0, proc.stderr()
    no_panic(proc.stderr())


@pytest.mark.anyio
async def test_bad_lines_on_stdio_get_json_rpc_errors_and_the_next_request_is_answered(tmp_path, fixture_env, out_dir):
    """A garbage line gets -32700 with id null; a 20 MB line (over the 16 MiB
    cap) gets an error naming the cap, with its id; the proxy serves on."""
    init = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
    }
    huge = {
        "jsonrpc": "2.0", "id": "huge", "method": "tools/call",
        "params": {"name": "short", "arguments": {"pad": "x" * (20 * 1000 * 1000)}},
    }

    async with proxied_process(tmp_path, fixture_env, out_dir) as proc:
        async def send(message: dict | bytes) -> None:
            line = message if isinstance(message, bytes) else json.dumps(message).encode()
            await proc.process.stdin.send(line + b"\n")

        async def answer(pick) -> dict:
            return await await_until(
                lambda: next((m for m in proc.received if ("result" in m or "error" in m) and pick(m)), None),
                what="an answer",
            )

        await send(init)
        await answer(lambda m: m.get("id") == 1)
        await send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await send(b"this is not json {")
        garbage = await answer(lambda m: "id" in m and m["id"] is None)
        assert garbage["error"]["code"] == -32700, garbage
        await send(huge)
        too_long = await answer(lambda m: m.get("id") == "huge")
        assert too_long["error"]["code"] == -32600, too_long
        assert str(16 << 20) in too_long["error"]["message"], too_long
        await send({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
        tools = await answer(lambda m: m.get("id") == 3)
        assert any(t["name"] == "short" for t in tools["result"]["tools"]), tools
        assert proc.returncode is None
    no_panic(proc.stderr())


@pytest.mark.anyio
async def test_sigterm_during_a_call_answers_it_with_an_error(tmp_path, fixture_env, out_dir):
    """A session that must end (here: SIGTERM) answers its pending call with a
    JSON-RPC error rather than leave the client waiting."""
    started = anyio.Path(fixture_env["FIXTURE_STARTED_FILE"])
    async with proxied_process(tmp_path, fixture_env, out_dir) as proc:
        async with proc.session() as session:
            with anyio.fail_after(PROMPT_ERROR_S):
                await session.initialize()

            async def terminate_once_started() -> None:
                await await_until(lambda: os.path.exists(started), what="the slow call to start")
                os.kill(proc.pid, signal.SIGTERM)

            async with anyio.create_task_group() as tg:
                tg.start_soon(terminate_once_started)
                with pytest.raises(MCPError, match="shutting down"), anyio.fail_after(PROMPT_ERROR_S):
                    await session.call_tool("slow", {"seconds": 60})
            code = await proc.wait_exit(why="after SIGTERM")
    assert code == 0, proc.stderr()
    no_panic(proc.stderr())


def _upstream_with_grandchildren(tmp_path) -> tuple[list[str], Path]:
    """An upstream that starts two grandchildren, one in its process group and
    one in a session of its own (as npx and uvx start theirs), then becomes the
    fixture; and the file their pids go to."""
    grandchildren_file = tmp_path / "grandchildren.pids"
    script = (
        f"sleep 300 & echo $! >> {grandchildren_file}; "
        f"setsid sleep 300 & echo $! >> {grandchildren_file}; "
        'exec "$@"'
    )
    return ["sh", "-c", script, "sh", *fixture_cmd()], grandchildren_file


async def _upstream_tree(session, grandchildren_file):
    """The upstream's pid, and its pid with its two grandchildren's."""
    child = await upstream_pid(session)
    grandchildren = read_pids(grandchildren_file)
    assert len(grandchildren) == 2, grandchildren
    return child, [child, *grandchildren]


@pytest.mark.anyio
async def test_sigkill_of_the_proxy_leaves_no_upstream_process(tmp_path, fixture_env, out_dir):
    """After SIGKILL to the proxy, neither the upstream nor its grandchildren
    (in its group and out of it) survive."""
    upstream, grandchildren_file = _upstream_with_grandchildren(tmp_path)
    env = full_env({**fixture_env, **offload_env(out_dir)})
    async with stdio_process(proxy_argv(upstream=upstream), env, tmp_path / "proxy.err") as proc:
        async with proc.session() as session:
            child, upstream_processes = await _upstream_tree(session, grandchildren_file)
            try:
                assert all(pid_alive(pid) for pid in upstream_processes)
                os.kill(proc.pid, signal.SIGKILL)
                for pid in upstream_processes:
                    await await_until(lambda: not pid_alive(pid), timeout=EXIT_S, what=f"upstream process {pid} to end")
            finally:
                for pid in upstream_processes:
                    if pid_alive(pid):
                        kill_quietly(pid)


def _ancestor_under(top: int, pid: int) -> int:
    """The ancestor of `pid` (or `pid` itself) whose parent is `top`."""
    while (up := parent(pid)) != top:
        assert up not in (None, 0, 1), f"{pid} is not under {top}"
        pid = up
    return pid


@pytest.mark.anyio
@pytest.mark.parametrize(("which", "proxy_says"), [("outer", "was killed by signal 9"), ("inner", "exited with status 137")])
async def test_sigkill_of_a_watchdog_fails_the_call_and_leaves_no_upstream_process(tmp_path, fixture_env, out_dir, which, proxy_says):
    """The proxy lives; one of the upstream's two watchdogs (the proxy's child,
    or the one under it that started the upstream) gets SIGKILL during a call.
    The call gets an error at once rather than hanging, no process of the
    upstream tree survives, and the proxy (stdio) exits with status 1: its
    upstream is lost."""
    upstream, grandchildren_file = _upstream_with_grandchildren(tmp_path)
    env = full_env({**fixture_env, **offload_env(out_dir)})
    started = fixture_env["FIXTURE_STARTED_FILE"]
    async with stdio_process(proxy_argv(upstream=upstream), env, tmp_path / "proxy.err") as proc:
        async with proc.session() as session:
            child, upstream_processes = await _upstream_tree(session, grandchildren_file)
            # proxy -> outer watchdog -> inner watchdog -> upstream
            outer = _ancestor_under(proc.pid, child)
            inner = parent(child)
            assert parent(inner) == outer, (proc.pid, outer, inner, child)
            watchdog = outer if which == "outer" else inner
            killed_at = 0.0
            try:

                async def kill_once_started() -> None:
                    nonlocal killed_at
                    await await_until(lambda: os.path.exists(started), what="the slow call to start")
                    os.kill(watchdog, signal.SIGKILL)
                    killed_at = time.monotonic()

                async with anyio.create_task_group() as tg:
                    tg.start_soon(kill_once_started)
                    with pytest.raises(MCPError), anyio.fail_after(PROMPT_ERROR_S):
                        await session.call_tool("slow", {"seconds": 60})
                for pid in upstream_processes:
                    await await_until(lambda: not pid_alive(pid), timeout=EXIT_S, what=f"upstream process {pid} to end")
                print(f"upstream tree gone {time.monotonic() - killed_at:.3f}s after SIGKILL to the {which} watchdog")
                code = await proc.wait_exit(why="after a watchdog was killed")
            finally:
                for pid in upstream_processes:
                    if pid_alive(pid):
                        kill_quietly(pid)
    assert code == 1, proc.stderr()
    # The outer watchdog reports the inner one's death as its upstream's.
    assert proxy_says in proc.stderr(), proc.stderr()
    no_panic(proc.stderr())


# An upstream that answers `initialize` and `tools/list` and nothing else, and
# logs each method it reads to argv[2], one a line (its pid goes to argv[1]).
_SILENT_UPSTREAM = """
import json, os, sys
with open(sys.argv[1], "a") as f:
    print(os.getpid(), file=f)
answers = {
    "initialize": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "silent", "version": "0"}},
    "tools/list": {"tools": [{"name": "stuck", "inputSchema": {"type": "object"}}]},
}
for line in sys.stdin:
    message = json.loads(line)
    with open(sys.argv[2], "a") as f:
        print(message.get("method"), file=f)
    if message.get("method") in answers:
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": answers[message["method"]]}), flush=True)
"""

# How soon a proxy and its child are gone after the client closes stdin: the
# Python and TypeScript SDKs wait 2 s before they send SIGTERM, and a client
# that died sends nothing at all. (rmcp alone gives pending calls 5 s.)
CLIENT_GONE_S = 2.0

# The 2026-07-28 request envelope.
_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.mark.anyio
@pytest.mark.parametrize("pending", ["discover", "call"])
async def test_closing_stdin_during_a_pending_request_leaves_no_proxy_and_no_child(tmp_path, pid_file, pending):
    """The client closes its end of stdin while a request waits for an
    upstream that never answers it: `server/discover` before any lifecycle
    (rmcp reads no more lines until it has answered), or a `tools/call` in a
    session. The request gets the shutdown error, and the proxy and its child
    are gone within seconds, not at the request timeout."""
    methods = tmp_path / "upstream.methods"
    upstream = [sys.executable, "-c", _SILENT_UPSTREAM, str(pid_file), str(methods)]

    def upstream_read(method: str) -> bool:
        return methods.exists() and method in methods.read_text().split()

    async with stdio_process(proxy_argv(upstream=upstream), full_env({}), tmp_path / "proxy.err") as proc:
        async def send(message: dict) -> None:
            await proc.process.stdin.send(json.dumps(message).encode() + b"\n")

        if pending == "discover":
            await send({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": _META}})
            await await_until(lambda: upstream_read("server/discover"), what="the discover to reach the upstream")
        else:
            await send({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
            })
            await await_until(lambda: any(m.get("id") == 0 for m in proc.received), what="the initialize answer")
            await send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            await send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "stuck", "arguments": {}}})
            await await_until(lambda: upstream_read("tools/call"), what="the call to reach the upstream")
        [child] = read_pids(pid_file)
        assert pid_alive(child)

        await proc.close_stdin()
        closed = time.monotonic()
        code = await proc.wait_exit(why="after its client closed stdin")
        exited = time.monotonic() - closed
        await await_until(lambda: not pid_alive(child), timeout=EXIT_S, what=f"upstream child {child} to end")
        gone = time.monotonic() - closed
    print(f"pending {pending}: proxy exited {exited:.3f}s and its child was gone {gone:.3f}s after stdin closed")
    assert gone < CLIENT_GONE_S, (exited, gone)
    assert code == 0, proc.stderr()
    [answer] = [m for m in proc.received if m.get("id") == 1]
    assert "shutting down" in answer["error"]["message"], answer
    no_panic(proc.stderr())


@pytest.mark.anyio
async def test_a_call_the_upstream_never_answers_fails_at_the_request_timeout(tmp_path, pid_file):
    """`--request-timeout 1`: a call the upstream never answers gets a
    JSON-RPC error naming the timeout after one second, and the session
    serves on."""
    methods = tmp_path / "upstream.methods"
    upstream = [sys.executable, "-c", _SILENT_UPSTREAM, str(pid_file), str(methods)]
    argv = proxy_argv("--request-timeout", "1", upstream=upstream)
    async with stdio_process(argv, full_env({}), tmp_path / "proxy.err") as proc:
        async with proc.session() as session:
            with anyio.fail_after(PROMPT_ERROR_S):
                await session.initialize()
            started = time.monotonic()
            with pytest.raises(MCPError) as err, anyio.fail_after(PROMPT_ERROR_S):
                await session.call_tool("stuck", {})
            elapsed = time.monotonic() - started
            print(f"the unanswered call failed {elapsed:.3f}s after it was sent")
            assert "request timeout of 1s" in err.value.message, err.value.message
            assert elapsed >= 1.0
            tools = await session.list_tools()
            assert [t.name for t in tools.tools][0] == "stuck"
    assert "notifications/cancelled" in methods.read_text().split(), "the upstream was told"
    no_panic(proc.stderr())

"""G. The HTTP face: `lro proxy --http 127.0.0.1:0 -- python3 py_server.py`,
with the official SDK's streamable-HTTP client: tools, server-to-client
requests and notifications, one child per session, --max-sessions, and the
DNS-rebinding guards (Origin, Host); over raw HTTP, a session that ends
mid-call (DELETE, or its upstream killed) answers the pending call with a
JSON-RPC error on the call's own stream.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from support import EXIT_S, cancel_slow_call, descriptor, read_pids, texts, unwrapped
from testkit.procs import pid_alive
from testkit.waiting import PROMPT_S, await_until, wait_until


@asynccontextmanager
async def http_session(url: str, **callbacks):
    async with streamable_http_client(url) as (read, write), ClientSession(read, write, **callbacks) as session:
        with anyio.fail_after(PROMPT_S):
            await session.initialize()
        yield session


async def whoami(session: ClientSession) -> int:
    return int(texts(await session.call_tool("whoami"))[0])


@pytest.mark.anyio
async def test_tools_work_over_http(start_proxy, out_dir):
    _, url = start_proxy()
    async with http_session(url) as session:
        with anyio.fail_after(PROMPT_S):
            assert session.server_info.name == "interop-fixture"
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"short", "big_json", "lro_extract"} <= names
            assert texts(await session.call_tool("short")) == ["ok"]
            desc = descriptor(await session.call_tool("big_json", {"n": 500}))
            assert Path(desc["file_path"]).parent == out_dir
            extract = await session.call_tool("lro_extract", {"file_path": desc["file_path"], "query": "select(.id == 3) | .name"})
            assert texts(extract)[0].strip() == '"item-3"'


@pytest.mark.anyio
async def test_sampling_progress_and_logs_over_http(start_proxy):
    _, url = start_proxy()
    events: list[tuple] = []
    logs: list = []

    async def sampling(ctx, params):
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="via http"), model="m")

    async def on_progress(progress, total, message):
        events.append((progress, total))

    async def on_log(params):
        logs.append(params.data)

    async with http_session(url, sampling_callback=sampling, logging_callback=on_log) as session:
        with anyio.fail_after(PROMPT_S):
            assert texts(await session.call_tool("sample", {"prompt": "p"})) == ["sampled: via http"]
            assert texts(await session.call_tool("progress", {"steps": 3}, progress_callback=on_progress)) == ["done 3"]
            assert texts(await session.call_tool("log", {"msg": "m"})) == ["logged"]
        await await_until(lambda: len(events) >= 3 and len(logs) >= 2, what="progress and log notifications")
    assert events == [(1, 3), (2, 3), (3, 3)]
    assert logs == ["first: m", "second: m"]


@pytest.mark.anyio
async def test_each_session_gets_its_own_child(start_proxy, pid_file):
    proxy, url = start_proxy()
    async with http_session(url) as one, http_session(url) as two:
        with anyio.fail_after(PROMPT_S):
            a, b = await whoami(one), await whoami(two)
            # Sticky: a session keeps its child.
            assert await whoami(one) == a and await whoami(two) == b
    assert a != b
    assert sorted(read_pids(pid_file)) == sorted([a, b])
    # Closing the sessions (DELETE) ends their children.
    await await_until(lambda: not pid_alive(a) and not pid_alive(b), timeout=EXIT_S, what="both children to end")
    assert proxy.proc.poll() is None, "the HTTP proxy must outlive its sessions"


@pytest.mark.anyio
async def test_children_end_with_the_http_proxy(start_proxy):
    proxy, url = start_proxy()
    async with http_session(url) as session:
        with anyio.fail_after(PROMPT_S):
            child = await whoami(session)
        proxy.proc.terminate()
        assert proxy.wait_exit(EXIT_S) == 0, proxy.stderr()
    wait_until(lambda: not pid_alive(child), timeout=EXIT_S, what=f"child {child} to end")


@pytest.mark.anyio
async def test_max_sessions(start_proxy, fixture_env):
    """At --max-sessions, a new session takes the child of the session idle
    longest (its client gets 404 and may start again); a session with a
    call in progress is never cut: the new client is refused instead."""
    _, url = start_proxy("--max-sessions", "1")
    started = Path(fixture_env["FIXTURE_STARTED_FILE"])
    async with http_session(url) as first:
        with anyio.fail_after(PROMPT_S):
            first_pid = await whoami(first)
        async with anyio.create_task_group() as tg:
            tg.start_soon(first.call_tool, "slow", {"seconds": 3})
            await await_until(started.exists, what="the slow call to reach the upstream")
            with pytest.raises(MCPError) as err:
                async with unwrapped(), http_session(url):
                    pass
            assert "max-sessions" in err.value.message, err.value.message
        # The first session is idle now: a new client takes its place.
        async with http_session(url) as second:
            with anyio.fail_after(PROMPT_S):
                assert await whoami(second) != first_pid
        await await_until(lambda: not pid_alive(first_pid), timeout=EXIT_S, what="the closed session's child to exit")
        with pytest.raises(MCPError), anyio.fail_after(PROMPT_S):
            await first.call_tool("short")


@pytest.mark.anyio
async def test_an_abandoned_session_ends_after_the_idle_timeout(start_proxy, pid_file):
    _, url = start_proxy("--max-sessions", "1", "--session-idle-timeout", "1")
    # A client that initializes and then vanishes: no DELETE, no more requests.
    assert raw_initialize(url)
    child = (await await_until(lambda: read_pids(pid_file), what="the session's child"))[0]
    assert pid_alive(child)
    await await_until(lambda: not pid_alive(child), timeout=EXIT_S, what=f"idle session's child {child} to end")
    # Its --max-sessions slot is free again.
    async with http_session(url) as session:
        with anyio.fail_after(PROMPT_S):
            assert await whoami(session) not in (0, child)


@pytest.mark.anyio
async def test_a_call_longer_than_the_idle_timeout_completes(start_proxy, pid_file):
    """A call in progress is activity: a 3 s call on a session with a 1 s idle
    timeout gets its answer, and the session and its child live on."""
    _, url = start_proxy("--session-idle-timeout", "1")
    async with http_session(url) as session:
        child = await whoami(session)
        with anyio.fail_after(PROMPT_S):
            result = await session.call_tool("slow", {"seconds": 3})
        assert texts(result) == ["slept 3.0"], result
        assert pid_alive(child)
        with anyio.fail_after(PROMPT_S):
            assert await whoami(session) == child, "the same session, the same child"


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}


def raw_initialize(url: str) -> str:
    """Initializes a session over plain HTTP and returns its Mcp-Session-Id."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=PROMPT_S)
    try:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        conn.request("POST", parts.path, body=json.dumps(INIT), headers=headers)
        response = conn.getresponse()
        body = response.read().decode()
        assert response.status == 200, (response.status, body)
        assert '"serverInfo"' in body, body
        return response.getheader("Mcp-Session-Id") or ""
    finally:
        conn.close()


def raw_post(url: str, headers: dict[str, str]) -> int:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=PROMPT_S)
    try:
        body = json.dumps(INIT)
        base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        conn.request("POST", parts.path, body=body, headers={**base, **headers})
        return conn.getresponse().status
    finally:
        conn.close()


def test_foreign_origin_and_bad_host_are_rejected(start_proxy):
    _, url = start_proxy()
    port = urlsplit(url).port
    # Controls: a plain request and a loopback page are served.
    assert raw_post(url, {}) == 200
    assert raw_post(url, {"Origin": f"http://localhost:{port}"}) == 200
    # A foreign page (DNS rebinding) and a foreign Host are refused.
    origin = raw_post(url, {"Origin": "http://evil.example"})
    assert 400 <= origin < 500, origin
    host = raw_post(url, {"Host": "evil.example"})
    assert 400 <= host < 500, host


@pytest.mark.anyio
async def test_cancellation_over_http_reaches_upstream(start_proxy, fixture_env):
    cancelled = Path(fixture_env["FIXTURE_CANCEL_FILE"])
    _, url = start_proxy()
    async with http_session(url) as session:
        await cancel_slow_call(session, fixture_env)
        await await_until(cancelled.exists, what="the upstream's cancellation marker")
        with anyio.fail_after(PROMPT_S):
            assert texts(await session.call_tool("short")) == ["ok"]


class RawSession:
    """One MCP session over plain HTTP/1.1: initialized, then each request on
    a connection of its own, its answer read from its SSE stream."""

    def __init__(self, url: str):
        parts = urlsplit(url)
        self.host, self.port, self.path = parts.hostname, parts.port, parts.path
        self.id = raw_initialize(url)
        assert self.id, "the proxy names the session"
        status, _ = self.send("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert status == 202, status

    def headers(self) -> dict[str, str]:
        return {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Mcp-Session-Id": self.id,
            "MCP-Protocol-Version": INIT["params"]["protocolVersion"],
        }

    def open(self, method: str, message: dict | None) -> Stream:
        """The response of one request, its head read, its body not yet."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=PROMPT_S)
        body = json.dumps(message) if message is not None else None
        conn.request(method, self.path, body=body, headers=self.headers())
        # Kept before the response: reads of the body honour its timeout.
        sock = conn.sock
        return Stream(conn.getresponse(), sock)

    def send(self, method: str, message: dict | None) -> tuple[int, str]:
        response = self.open(method, message).response
        return response.status, response.read().decode()


@dataclass
class Stream:
    response: http.client.HTTPResponse
    sock: socket.socket


def answer_on(stream: Stream, request_id: int, within: float) -> dict:
    """The message that answers `request_id` on an SSE stream, read within
    `within` seconds."""
    deadline = time.monotonic() + within
    seen = []
    while (left := deadline - time.monotonic()) > 0:
        stream.sock.settimeout(left)
        line = stream.response.readline().decode()
        if not line:
            raise AssertionError(f"the stream ended without an answer to {request_id}; saw {seen}")
        if not line.startswith("data:") or not line[5:].strip():
            continue
        message = json.loads(line[5:])
        seen.append(message)
        if message.get("id") == request_id and ("result" in message or "error" in message):
            return message
    raise AssertionError(f"no answer to {request_id} within {within}s; saw {seen}")


# A pending call's error comes well before any client gives up.
PROMPT_ERROR_S = 8.0
SLOW_CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "slow", "arguments": {"seconds": 600}}}


def start_slow_call(url: str, fixture_env: dict[str, str]) -> tuple[RawSession, Stream]:
    """A session whose `slow` call is running in the upstream."""
    session = RawSession(url)
    stream = session.open("POST", SLOW_CALL)
    head = stream.response
    assert head.status == 200 and head.getheader("Content-Type", "").startswith("text/event-stream"), head.status
    started = fixture_env["FIXTURE_STARTED_FILE"]
    wait_until(lambda: os.path.exists(started), what="the slow call to reach the upstream")
    return session, stream


def test_a_session_deleted_mid_call_answers_the_call_with_an_error(start_proxy, fixture_env, pid_file):
    _, url = start_proxy()
    session, stream = start_slow_call(url, fixture_env)
    child = read_pids(pid_file)[0]
    status, body = session.send("DELETE", None)
    assert status in (200, 202, 204), (status, body)
    assert_error(answer_on(stream, SLOW_CALL["id"], within=PROMPT_ERROR_S), "session ended")
    # The session is gone, with its upstream.
    assert session.send("POST", {"jsonrpc": "2.0", "id": 8, "method": "tools/list"})[0] == 404
    wait_until(lambda: not pid_alive(child), timeout=EXIT_S, what=f"the deleted session's child {child} to end")


def test_an_upstream_killed_mid_call_answers_the_call_with_an_error(start_proxy, fixture_env, pid_file):
    _, url = start_proxy()
    _, stream = start_slow_call(url, fixture_env)
    os.kill(read_pids(pid_file)[0], signal.SIGKILL)
    assert_error(answer_on(stream, SLOW_CALL["id"], within=PROMPT_ERROR_S), "exited")


def test_a_proxy_terminated_mid_call_answers_the_call_with_an_error(start_proxy, fixture_env):
    proxy, url = start_proxy()
    _, stream = start_slow_call(url, fixture_env)
    os.kill(proxy.pid, signal.SIGTERM)
    assert_error(answer_on(stream, SLOW_CALL["id"], within=PROMPT_ERROR_S), "shutting down")
    assert proxy.wait_exit(EXIT_S) == 0, proxy.tail()


def assert_error(answer: dict, says: str) -> None:
    """`answer` is a JSON-RPC error whose message says `says`."""
    assert answer["jsonrpc"] == "2.0" and "result" not in answer, answer
    assert isinstance(answer["error"]["code"], int) and says in answer["error"]["message"], answer

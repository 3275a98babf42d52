"""H. Sessionless (MCP 2026-07-28) clients on the HTTP face:
`lro proxy --http 127.0.0.1:0 -- python3 py_server.py`, with the official
SDK's client pinned to 2026-07-28, and raw POSTs where the wire itself is
the question.

Each principal's sessionless requests share one long-lived upstream child:
no child start per call, the upstream's state kept from one call to the
next, nothing relayed onto a request's stream but its own progress and
answer; principals never share a child; an idle child is reclaimed, a dead
one replaced on the next call.
"""

from __future__ import annotations

import json
import signal
from contextlib import asynccontextmanager

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from support import EXIT_S, read_pids, texts
from testkit.procs import pid_alive
from testkit.waiting import PROMPT_S, await_until

MODERN = "2026-07-28"

# The principals of the tests that authenticate.
TOKENS = ("--bearer", "tok-a=alice", "--bearer", "tok-b=bob")


@asynccontextmanager
async def modern(url: str, token: str | None = None):
    """The SDK's client on 2026-07-28 (no `initialize`, no session)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=MODERN, cache=None) as client:
            assert client.protocol_version == MODERN
            yield client


async def whoami(url: str, token: str | None = None) -> int:
    """The pid of the upstream child that served one sessionless call."""
    async with modern(url, token) as client:
        with anyio.fail_after(PROMPT_S):
            return int(texts(await client.call_tool("whoami"))[0])


def envelope(method: str, params: dict | None = None, rid: int = 1) -> dict:
    """A 2026-07-28 request, as a client writes it by hand."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**(params or {}), "_meta": meta}}


def post(url: str, message: dict, extra: dict[str, str] | None = None) -> tuple[int, list[dict]]:
    """POSTs one message (with `extra` headers); the status and every
    JSON-RPC message of the reply."""
    reply, messages = exchange(url, message, extra)
    return reply.status_code, messages


def exchange(url: str, message: dict, extra: dict[str, str] | None = None) -> tuple[httpx2.Response, list[dict]]:
    """POSTs one message; the reply and its JSON-RPC messages (a JSON body,
    or each event of an SSE stream)."""
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        # The 2026-07-28 transport's routing headers: the method, and the
        # tool's (prompt's, resource's) name.
        "Mcp-Method": message["method"],
    }
    if name := message["params"].get("name"):
        headers["Mcp-Name"] = name
    reply = httpx2.post(url, json=message, headers={**headers, **(extra or {})}, timeout=PROMPT_S)
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in reply.text.splitlines() if line.startswith("data:")]
        return reply, [json.loads(d) for d in data if d]
    return reply, [reply.json()]


@pytest.mark.anyio
async def test_a_principals_calls_share_one_child_and_principals_never_share(start_proxy, pid_file):
    proxy, url = start_proxy(*TOKENS)
    alice = [await whoami(url, "tok-a") for _ in range(3)]
    bob = [await whoami(url, "tok-b") for _ in range(2)]
    assert len(set(alice)) == 1, f"alice's calls went to several children: {alice}"
    assert len(set(bob)) == 1, f"bob's calls went to several children: {bob}"
    assert alice[0] != bob[0], "two principals shared one upstream child"
    assert sorted(read_pids(pid_file)) == sorted({alice[0], bob[0]}), "a child was started per call"

    # The shared children are the proxy's own: they end with it.
    proxy.proc.send_signal(signal.SIGTERM)
    assert proxy.proc.wait(timeout=EXIT_S) == 0
    assert not [pid for pid in (alice[0], bob[0]) if pid_alive(pid)]


@pytest.mark.anyio
async def test_each_call_gets_its_own_progress_and_no_other_notification(start_proxy):
    _, url = start_proxy()
    seen: dict[str, list[float]] = {"a": [], "b": []}

    async def call(key: str, steps: int) -> None:
        async def progress(value: float, total: float | None, message: str | None) -> None:
            seen[key].append(value)

        async with modern(url) as client:
            with anyio.fail_after(PROMPT_S):
                result = await client.call_tool("progress", {"steps": steps}, progress_callback=progress)
            assert texts(result) == [f"done {steps}"]

    # Two calls at once on the one shared child: each gets its own steps.
    async with anyio.create_task_group() as tg:
        tg.start_soon(call, "a", 3)
        tg.start_soon(call, "b", 5)
    assert seen == {"a": [1, 2, 3], "b": [1, 2, 3, 4, 5]}

    # On the wire, a call's stream carries its answer alone: no
    # `notifications/tools/list_changed` of a new upstream connection.
    status, messages = post(url, envelope("tools/call", {"name": "short", "arguments": {}}, rid=7))
    assert status == 200
    assert [m.get("method") for m in messages] == [None], messages
    assert messages[0]["id"] == 7
    assert messages[0]["result"]["resultType"] == "complete"
    assert messages[0]["result"]["content"][0]["text"] == "ok"


@pytest.mark.anyio
async def test_discover_is_answered_with_the_upstreams_capabilities(start_proxy):
    _, url = start_proxy()
    status, [answer] = post(url, envelope("server/discover"))
    assert status == 200, answer
    result = answer["result"]
    assert MODERN in result["supportedVersions"]
    assert "tools" in result["capabilities"]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "interop-fixture"
    assert result["resultType"] == "complete"


@pytest.mark.anyio
async def test_an_idle_child_is_reclaimed_and_a_dead_one_replaced(start_proxy, pid_file):
    _, url = start_proxy("--session-idle-timeout", "1")
    first = await whoami(url)
    # Reclaimed after 1 s without a call: the child exits.
    await await_until(lambda: not pid_alive(first), timeout=EXIT_S, what=f"idle child {first} to exit")
    second = await whoami(url)
    assert second != first

    # A child that dies is replaced on the next call: the HTTP face serves
    # many clients, and none of them owns the child.
    async with modern(url) as client:
        with anyio.fail_after(PROMPT_S), pytest.raises(MCPError, match="exited with status 3"):
            await client.call_tool("crash", {"code": 3})
    await await_until(lambda: not pid_alive(second), timeout=EXIT_S, what="crashed child to exit")
    third = await whoami(url)
    assert third not in (first, second)
    assert read_pids(pid_file) == [first, second, third]


@pytest.mark.anyio
async def test_a_legacy_session_keeps_its_own_child_beside_the_shared_one(start_proxy):
    _, url = start_proxy()
    shared = await whoami(url)
    async with httpx2.AsyncClient() as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy", cache=None) as client:
            assert client.protocol_version != MODERN
            with anyio.fail_after(PROMPT_S):
                own = int(texts(await client.call_tool("whoami"))[0])
    assert own != shared, "a 2025-11-25 session was served by the sessionless child"
    assert await whoami(url) == shared


@pytest.mark.anyio
@pytest.mark.parametrize("upstream", ["2026-07-28", "legacy-only"])
async def test_a_listen_hears_the_upstreams_tool_list_change(start_proxy, fixture_env, upstream):
    """`subscriptions/listen` through the proxy: relayed to an upstream that
    speaks 2026-07-28, made from the session notifications of one that
    speaks 2025-11-25 only."""
    if upstream == "legacy-only":
        fixture_env["FIXTURE_LEGACY_ONLY"] = "1"
    _, url = start_proxy()
    async with modern(url) as client, modern(url) as other:
        with anyio.fail_after(PROMPT_S):
            async with client.listen(tools_list_changed=True) as sub:
                assert sub.honored.tools_list_changed
                # Another client of the same principal changes the tools.
                assert texts(await other.call_tool("change_tools")) == ["changed"]
                event = await sub.__anext__()
            assert type(event).__name__ == "ToolsListChanged", event
            names = {t.name for t in (await client.list_tools()).tools}
    assert "added" in names


@pytest.mark.anyio
async def test_a_session_id_on_a_sessionless_request_is_ignored_unless_anothers(start_proxy):
    """2026-07-28 has no sessions: an `Mcp-Session-Id` on such a request is
    ignored (the transport spec's SHOULD) and none is handed out; but one
    bound to another principal's 2025-11-25 session is refused (404) as on
    any request, since the same headers on an `initialize` would reach it."""
    _, url = start_proxy(*TOKENS)
    opened = httpx2.post(
        url,
        json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "alice", "version": "1"}}},
        headers={"Accept": "application/json, text/event-stream", "Authorization": "Bearer tok-a"},
        timeout=PROMPT_S,
    )
    alices = opened.headers["mcp-session-id"]
    bob = await whoami(url, "tok-b")
    call = envelope("tools/call", {"name": "whoami", "arguments": {}}, rid=9)

    reply, [answer] = exchange(url, call, {"Authorization": "Bearer tok-b", "Mcp-Session-Id": "no-such-session"})
    assert reply.status_code == 200, reply.text
    assert "mcp-session-id" not in reply.headers
    assert answer["result"]["structuredContent"]["result"] == bob, "served as bob, on bob's child"

    refused, _ = exchange(url, call, {"Authorization": "Bearer tok-b", "Mcp-Session-Id": alices})
    assert refused.status_code == 404, refused.text

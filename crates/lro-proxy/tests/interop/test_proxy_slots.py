"""I. Fair shares of the upstream children on the HTTP face:
`lro proxy --http 127.0.0.1:0 --max-sessions N -- python3 py_server.py`, with
bearer tokens for several principals, and every client there is: raw HTTP,
the official Python SDK's default client (auto: 2026-07-28, sessionless) and
its legacy one (2025-11-25, a session), and the TypeScript SDK 1.x (a
session it never deletes).

Legacy sessions and sessionless principals share one pool of children
(--max-sessions). Each principal holds at most half; at the limit a newcomer
takes its own principal's idle session or child, or another's idle
sessionless child, never another principal's session. At a cap the answer is
a JSON-RPC error with HTTP 503 (every slot in use) or 429 (the caller's
share in use), never a 200 with a session id.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from support import EXIT_S, full_env, read_pids, run_client, texts
from testkit.procs import pid_alive
from testkit.waiting import PROMPT_S, await_until

MODERN = "2026-07-28"
TOKENS = ("--bearer", "tok-a=alice", "--bearer", "tok-b=bob", "--bearer", "tok-c=carol")
ACCEPT = "application/json, text/event-stream"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}


def bearer(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def initialize(url: str, token: str | None = None) -> httpx2.Response:
    """A legacy `initialize` over plain HTTP, its session never deleted."""
    headers = {"Accept": ACCEPT, **bearer(token)}
    return httpx2.post(url, json=INIT, headers=headers, timeout=PROMPT_S)


def sessionless_call(url: str, token: str | None = None) -> httpx2.Response:
    """One 2026-07-28 `tools/call` of `whoami` over plain HTTP."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "whoami", "arguments": {}, "_meta": meta}}
    headers = {"Accept": ACCEPT, "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "whoami", **bearer(token)}
    return httpx2.post(url, json=message, headers=headers, timeout=PROMPT_S)


def in_session(url: str, session: str, token: str | None = None) -> int:
    """The status of a legacy `tools/list` in `session`."""
    message = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    headers = {"Accept": ACCEPT, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25", **bearer(token)}
    return httpx2.post(url, json=message, headers=headers, timeout=PROMPT_S).status_code


def assert_refused(reply: httpx2.Response, status: int, rid: int) -> None:
    """A refusal at a cap: the status, a JSON-RPC error for the request, no session."""
    assert reply.status_code == status, (reply.status_code, reply.text)
    assert "mcp-session-id" not in reply.headers, reply.headers
    assert reply.headers.get("retry-after"), reply.headers
    body = reply.json()
    assert body["id"] == rid and "too many sessions" in body["error"]["message"], body
    assert "--max-sessions" in body["error"]["message"], body


@asynccontextmanager
async def client(url: str, token: str, mode: str | None = None):
    """The Python SDK's client: its default (auto) mode, or `mode`."""
    async with httpx2.AsyncClient(headers=bearer(token)) as http:
        modes = {"mode": mode} if mode else {}
        async with Client(streamable_http_client(url, http_client=http), cache=None, **modes) as c:
            yield c


async def whoami(c: Client) -> int:
    with anyio.fail_after(PROMPT_S):
        return int(texts(await c.call_tool("whoami"))[0])


@pytest.mark.anyio
async def test_a_flood_of_sessions_from_bob_leaves_alices_session_working(start_proxy):
    _, url = start_proxy("--max-sessions", "4", *TOKENS)
    async with client(url, "tok-a", mode="legacy") as alice:
        mine = await whoami(alice)
        bobs = [initialize(url, "tok-b") for _ in range(4)]
        assert [r.status_code for r in bobs] == [200] * 4, [r.text for r in bobs]
        # Bob holds his share, two: his own oldest sessions made room.
        ids = [r.headers["mcp-session-id"] for r in bobs]
        assert [in_session(url, s, "tok-b") for s in ids] == [404, 404, 200, 200]
        assert await whoami(alice) == mine, "alice's session lost its child"
        assert pid_alive(mine)


@pytest.mark.anyio
async def test_at_a_cap_the_answer_is_503_or_429_never_a_200_with_a_session(start_proxy, fixture_env):
    _, url = start_proxy("--max-sessions", "2", *TOKENS)
    started = Path(fixture_env["FIXTURE_STARTED_FILE"])
    async with client(url, "tok-a", mode="legacy") as alice:
        await whoami(alice)
        assert initialize(url, "tok-b").status_code == 200
        # Every slot is alice's or bob's session, idle or not: carol waits.
        assert_refused(initialize(url, "tok-c"), 503, 1)
        assert_refused(sessionless_call(url, "tok-c"), 503, 7)
        async with anyio.create_task_group() as tg:
            tg.start_soon(alice.call_tool, "slow", {"seconds": 3})
            await await_until(started.exists, what="alice's slow call to reach the upstream")
            # Alice's share (one) has a call in progress: 429, for her alone.
            assert_refused(await anyio.to_thread.run_sync(initialize, url, "tok-a"), 429, 1)
        # Idle again: her own session makes room for her new one.
        assert initialize(url, "tok-a").status_code == 200


@pytest.mark.anyio
async def test_python_and_typescript_clients_of_both_wires_share_the_limit(start_proxy, everything):
    """--max-sessions 4: alice's legacy session, and around it both principals'
    default (sessionless) clients and bob's TypeScript SDK sessions, which are
    never deleted. Nobody is locked out, and alice's session keeps its child."""
    _, url = start_proxy("--max-sessions", "4", *TOKENS)
    ts = ["--url", url, "--header", "Authorization: Bearer tok-b"]
    async with client(url, "tok-a", mode="legacy") as alice:
        mine = await whoami(alice)
        async with client(url, "tok-b") as bob, client(url, "tok-a") as alice_modern:
            assert bob.protocol_version == MODERN and alice_modern.protocol_version == MODERN
            assert await whoami(alice_modern) != mine
            pids = {await whoami(bob)}
            for _ in range(3):
                run = await anyio.to_thread.run_sync(lambda: run_client(ts, ["--call", "whoami"], full_env({})))
                [op] = run["ops"]
                assert op["ok"], op
                pids.add(int(op["result"]["content"][0]["text"]))
                pids.add(await whoami(bob))
            assert mine not in pids
            assert await whoami(alice_modern) != mine
        assert await whoami(alice) == mine, "alice's session lost its child"


@pytest.mark.anyio
async def test_idle_sessions_and_sessionless_children_give_their_slots_back(start_proxy, pid_file):
    """Without tokens every caller is one principal: after a sessionless call,
    legacy sessions beyond --max-sessions take the idle slots (they used to get
    a 200 with "too many sessions", then 404), and every idle child is reaped."""
    _, url = start_proxy("--max-sessions", "2", "--session-idle-timeout", "1")
    assert sessionless_call(url).status_code == 200
    for _ in range(3):
        reply = initialize(url)
        assert reply.status_code == 200 and '"serverInfo"' in reply.text, reply.text
    assert sessionless_call(url).status_code == 200
    children = read_pids(pid_file)
    assert len(children) >= 4, children
    await await_until(lambda: not any(pid_alive(p) for p in children), timeout=EXIT_S, what="every idle child to be reaped")

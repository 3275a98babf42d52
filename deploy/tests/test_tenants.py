"""Two tenants on one server, from outside (issue: many tenants on one server).

The real `memory-server --http` with two bearer tokens and a context store,
driven by the official Python SDK over streamable HTTP on 127.0.0.1:

- each principal gets the same "unknown result" answer for the other's
  offloaded result as for a name that never existed, and reads its own;
- `context_grep` never returns the other's lines, and `context_read_file`
  answers the other's entry like a missing one;
- no token gets HTTP 401 with `WWW-Authenticate`;
- the server's log at its default level never names a result, a token or a
  path.
"""

from __future__ import annotations

import asyncio
import json
import re
import urllib.error
import urllib.request
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import AsyncIterator, Iterator

import pytest

from lrolib import L
from testkit.http import DIRECT
from testkit.paths import MEMORY_SERVER
from testkit.procs import Background

pytestmark = pytest.mark.usefixtures("binaries")

TOKENS = {"alice": "tok-alice-0123456789", "bob": "tok-bob-9876543210"}


@contextmanager
def server(tmp_path: Path) -> Iterator[tuple[str, Background]]:
    """The demo server with both tokens and a context store; yields its /mcp URL."""
    argv = [str(MEMORY_SERVER), "--http", "127.0.0.1:0", "--context-store-root", str(tmp_path / "ctx")]
    for who, token in TOKENS.items():
        argv += ["--bearer", f"{token}={who}"]
    env = {"ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR": str(tmp_path / "out"), "PATH": "/usr/bin:/bin"}
    proc = Background(argv, env, tmp_path / "server.err")
    try:
        yield proc.wait_url(), proc
    finally:
        proc.stop()


@asynccontextmanager
async def client(url: str, token: str) -> AsyncIterator:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http, streamable_http_client(url, http_client=http) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        yield s


def is_error(result) -> bool:
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


def text(result) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def unknown(answer: str, argument: str) -> str:
    """The answer with the argument it echoes taken out."""
    return answer.replace(argument, "ARG")


async def offload(session) -> str:
    result = await session.call_tool("list_memories", {"limit": 200, "detail": "full"})
    assert not is_error(result), text(result)
    return json.loads(text(result))["file_path"]


async def tenants(url: str, tmp_path: Path) -> list[str]:
    async with client(url, TOKENS["alice"]) as alice, client(url, TOKENS["bob"]) as bob:
        a_path = await offload(alice)
        b_path = await offload(bob)
        assert Path(a_path).parent != Path(b_path).parent, "each principal has a folder of its own"
        own = await alice.call_tool("lro_extract", {"file_path": a_path, L.ExtractMode.Recipe: 1})
        assert not is_error(own), text(own)
        # Bob on Alice's result, and on a name that never existed next to it.
        theirs = await bob.call_tool("lro_extract", {"file_path": a_path, L.ExtractMode.Recipe: 1})
        # Bob's own name with other random bits: fresh, but never written.
        ghost_path = b_path[: -len("XXXX.jsonl")] + ("ZZZZ" if not b_path.endswith("ZZZZ.jsonl") else "YYYY") + ".jsonl"
        ghost = await bob.call_tool("lro_extract", {"file_path": ghost_path, L.ExtractMode.Recipe: 1})
        assert is_error(theirs) and is_error(ghost)
        assert unknown(text(theirs), a_path) == unknown(text(ghost), ghost_path), (text(theirs), text(ghost))

        # Context entries: each offloads a history with a marker of its own.
        marks = {}
        for who, session in (("alice", alice), ("bob", bob)):
            marks[who] = f"secret-of-{who}"
            history = [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": f"call_{who}", "type": "function", "function": {"name": "dump", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": f"call_{who}", "content": (marks[who] + " ") * 3000},
                {"role": "assistant", "content": "done"},
            ]
            r = await session.call_tool("context_offload", {
                "messages": history, "context_manage_mode": "compact", "max_total_tokens": 500,
                "store_dir": "store"})
            assert not is_error(r), text(r)
            marks[who + "_files"] = json.loads(text(r))["metadata"]["stored_files"]
            assert marks[who + "_files"], text(r)
        for me, other in (("alice", "bob"), ("bob", "alice")):
            session = alice if me == "alice" else bob
            found = await session.call_tool("context_grep", {"pattern": "secret-of-", "path": "store"})
            assert marks[me] in text(found), text(found)
            assert marks[other] not in text(found), text(found)
            their_file = marks[other + "_files"][0]
            read = await session.call_tool("context_read_file", {"absolute_path": their_file})
            # The same shape of name, in the same place, never written.
            stem, dot, ext = their_file.rpartition(".")
            missing = stem[:-1] + ("0" if stem[-1] != "0" else "1") + dot + ext
            nothing = await session.call_tool("context_read_file", {"absolute_path": missing})
            assert is_error(read) and is_error(nothing)
            assert unknown(text(read), their_file) == unknown(text(nothing), missing)
            assert marks[other] not in text(read)
        return [a_path, b_path]


def test_two_principals_see_only_their_own(tmp_path: Path):
    with server(tmp_path) as (url, proc):
        paths = asyncio.run(asyncio.wait_for(tenants(url, tmp_path), timeout=90))
        log = proc.stderr()
    for path in paths:
        name = Path(path).name
        ulid = re.search(r"-([0-9A-Z]{26})\.jsonl$", name).group(1)
        assert name not in log and ulid not in log, "a result's name reached the log"
    for token in TOKENS.values():
        assert token not in log
    # No path at all: neither the offload directory nor the context store.
    assert "offload cleanup scheduled" in log, "the default level does log"
    assert str(tmp_path) not in log, "a path reached the log"


def test_no_token_gets_401(tmp_path: Path):
    with server(tmp_path) as (url, _):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": L.UpstreamMethod.ToolsList, "params": {}}).encode()
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            req = urllib.request.Request(url, data=body, headers={
                "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
            with pytest.raises(urllib.error.HTTPError) as refused:
                DIRECT.open(req, timeout=10)
            assert refused.value.code == 401
            assert refused.value.headers.get("WWW-Authenticate", "").startswith("Bearer")

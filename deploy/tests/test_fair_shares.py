"""Fair shares between tenants, from outside (issue 35).

The real `memory-server --http` with several bearer tokens, driven by the
official Python SDK over streamable HTTP on 127.0.0.1:

Both wires at once: the flooders speak 2026-07-28 (sessionless) or
2025-11-25, the quiet tenant 2025-11-25.

- two principals flooding `lro_extract` with filters that run to the time
  limit do not keep a third waiting: the next slot that frees is the
  newcomer's (it runs none), so it is answered within one time limit plus
  its own work, where first-come order made it wait behind every queued
  flood call;
- four principals flooding offloads past the total quota lose their own
  oldest results, while a quiet one under its share keeps its result and
  keeps getting offloads; nobody's result is truncated.
"""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import AsyncIterator, Iterator

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from lrolib import L
from testkit.paths import MEMORY_SERVER
from testkit.procs import Background

pytestmark = pytest.mark.usefixtures("binaries")

# Extraction's time limit in these tests, seconds.
LIMIT_S = 2
# A filter that runs until the time limit ends it.
RUNS_TO_THE_LIMIT = "last(range(1e12))"
# Bytes of one offloaded result (40 full memories: about 178 KB), rounded up.
SIZE = 180_000


def token(who: str) -> str:
    return f"tok-{who}-0123456789"


@contextmanager
def server(tmp_path: Path, who: list[str], env: dict[str, str], grace: float = 8.0) -> Iterator[str]:
    """The demo server with a token per name in WHO; yields its /mcp URL.
    Stopped with SIGKILL after `grace` seconds."""
    argv = [str(MEMORY_SERVER), "--http", "127.0.0.1:0", "--corpus-size", "200"]
    for name in who:
        argv += ["--bearer", f"{token(name)}={name}"]
    env = {"ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR": str(tmp_path / "out"), "PATH": "/usr/bin:/bin", **env}
    proc = Background(argv, env, tmp_path / "server.err")
    try:
        yield proc.wait_url()
        assert proc.alive()
    finally:
        proc.stop(grace=grace)


@asynccontextmanager
async def client(url: str, who: str, wire: str) -> AsyncIterator[Client]:
    """The SDK's client as WHO, on WIRE: "2026-07-28" (sessionless) or "legacy"
    (2025-11-25, `initialize` and a session)."""
    headers = {"Authorization": f"Bearer {token(who)}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=wire, cache=None) as c:
            yield c


def text(result) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


async def offload(session) -> str | None:
    """Offloads one result; its file path, or None when it was not offloaded."""
    result = await session.call_tool("list_memories", {"limit": 40, "detail": "full"})
    try:
        return json.loads(text(result)).get("file_path")
    except (json.JSONDecodeError, AttributeError):
        return None


async def extraction_flood(url: str) -> float:
    names = ["flood1", "flood2", "quiet"]
    wires = {"flood1": "2026-07-28", "flood2": "legacy", "quiet": "legacy"}
    async with AsyncExitStack() as stack:
        s = {who: await stack.enter_async_context(client(url, who, wires[who])) for who in names}
        paths = {who: await offload(s[who]) for who in names}
        assert all(paths.values()), paths
        answered = {who: asyncio.Event() for who in names[:2]}
        stop = asyncio.Event()

        async def flood(who: str) -> None:
            while not stop.is_set():
                await s[who].call_tool("lro_extract", {"file_path": paths[who], L.ExtractMode.Query: RUNS_TO_THE_LIMIT})
                answered[who].set()

        # Eight calls at once per flooder: two run, six wait, for each.
        floods = [asyncio.create_task(flood(who)) for who in names[:2] for _ in range(8)]
        try:
            # Both floods have cycled through the slots at least once.
            await asyncio.wait_for(asyncio.gather(*(e.wait() for e in answered.values())), timeout=60)
            began = time.monotonic()
            own = await s["quiet"].call_tool("lro_extract", {"file_path": paths["quiet"], L.ExtractMode.Recipe: 1})
            waited = time.monotonic() - began
            assert not own.is_error, text(own)
        finally:
            # Cancelled, not awaited: the queued calls would take minutes.
            stop.set()
            for task in floods:
                task.cancel()
            await asyncio.gather(*floods, return_exceptions=True)
        return waited


def test_two_flooding_principals_do_not_starve_a_third(tmp_path: Path):
    env = {"ATLATL_PROMPT__OFFLOAD__EXTRACTION__TIMEOUT_SECONDS": str(LIMIT_S)}
    # Queued flood calls wait out their queue timeout before the server ends:
    # no need to wait for them.
    with server(tmp_path, ["flood1", "flood2", "quiet"], env, grace=1.0) as url:
        waited = asyncio.run(asyncio.wait_for(extraction_flood(url), timeout=120))
    print(f"the quiet principal waited {waited:.2f} s")
    # First come, first served, it waited for the twelve queued flood calls
    # (three time limits); now at most one, plus its own work.
    assert waited < LIMIT_S + 1.5, f"the quiet principal waited {waited:.1f} s"


async def quota_flood(url: str, flooders: list[str]) -> None:
    async with AsyncExitStack() as stack:
        quiet = await stack.enter_async_context(client(url, "quiet", "legacy"))
        wires = ["2026-07-28", "legacy"]
        s = {who: await stack.enter_async_context(client(url, who, wires[i % 2])) for i, who in enumerate(flooders)}
        first = await offload(quiet)
        assert first, "the quiet tenant's first result was not offloaded to a file"
        kept: dict[str, list[str]] = {who: [] for who in flooders}
        # Five rounds of four at once: twice what the total holds.
        for _ in range(5):
            got = await asyncio.gather(*(offload(s[who]) for who in flooders))
            for who, path in zip(flooders, got):
                assert path, f"{who}'s result was truncated"
                kept[who].append(path)
        again = await offload(quiet)
        assert again, "the quiet principal, under its share, still gets offloads"
        assert Path(first).exists() and Path(again).exists(), "and keeps its results"
        for who, paths in kept.items():
            assert not Path(paths[0]).exists(), f"{who} lost its oldest first"
            assert Path(paths[-1]).exists(), f"{who} keeps its newest"


def test_flooders_past_the_total_lose_their_oldest_and_a_quiet_tenant_keeps_its_own(tmp_path: Path):
    flooders = [f"flood{i}" for i in range(4)]
    # The total holds ten results.
    env = {"ATLATL_PROMPT__OFFLOAD__MAX_TOTAL_BYTES": str(SIZE * 10)}
    with server(tmp_path, ["quiet", *flooders], env) as url:
        asyncio.run(asyncio.wait_for(quota_flood(url, flooders), timeout=120))
    held = sum(f.stat().st_size for f in (tmp_path / "out").rglob("*.jsonl"))
    assert held <= SIZE * 10, held

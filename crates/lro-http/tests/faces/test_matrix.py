"""Only yours, on every face: one test cell per face × authentication × wire ×
store, each from outside, as real processes driven by the official Python SDK
(MCP faces) or raw HTTP (ReMe's API on `lro context serve`).

In each cell the owner offloads and reads its result back (by path, or by
handle with a store: a recipe, a query, and the query's second page through
the "next part" the first one names), and another principal gets the
unknown-result answer. The other principal is, with bearer tokens, the other
token's (bob) on the same server, and across the authentication line the
anonymous caller of a face without tokens that shares the output directory
and the store (an authenticated caller never reads the anonymous root, an
anonymous one never reads a principal's folder). Context faces offload a
history, read the stored file back by path, grep it, and read a second page
(`offset`).

`TABLE` below names every cell. A cell that cannot exist says why (`None`
when it runs); no other cell is skipped. Servers are shared across cells: one
per face, authentication and store, the two authentications of a face on one
output directory and one store prefix; stdio faces start a process per cell.
"""

from __future__ import annotations

import itertools
import json
import re
from contextlib import ExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterator

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from testkit.paths import LRO, MEMORY_SERVER
from testkit.procs import Background, environ_without
from testkit.seaweed import Seaweed

pytestmark = pytest.mark.usefixtures("binaries")

TOKENS = {"alice": "tok-alice-0123456789", "bob": "tok-bob-9876543210"}
BUCKET = "lro-matrix"
CELL_S = 60
UNKNOWN = "does not exist or is not yours"


@dataclass(frozen=True)
class Face:
    name: str
    family: str  # faces of one family share an output directory and a store prefix
    stdio: bool
    context: bool = False
    reme: bool = False

    def argv(self, root: Path) -> list[str]:
        ms = [str(MEMORY_SERVER), "--corpus-size", "120"]
        http = [] if self.stdio else ["--http", "127.0.0.1:0"]
        if self.family == "memory-server":
            return ms[:1] + http + ms[1:]
        if self.family.startswith("proxy"):
            upstream = ms + (["--no-lro"] if self.family == "proxy-bare" else [])
            return [str(LRO), "proxy", *http, "--", *upstream]
        if self.reme:
            return [str(LRO), "context", "serve", *http, "--store-root", str(root)]
        return [str(LRO), "context", "mcp", "--store-root", str(root)]


FACES = [
    Face("memory-server stdio", "memory-server", True),
    Face("memory-server http", "memory-server", False),
    Face("proxy stdio, bare upstream", "proxy-bare", True),
    Face("proxy stdio, LRO upstream", "proxy-lro", True),
    Face("proxy http, bare upstream", "proxy-bare", False),
    Face("proxy http, LRO upstream", "proxy-lro", False),
    Face("context mcp", "context", True, context=True),
    Face("context serve", "context", False, context=True, reme=True),
]
AUTHS = ["none", "bearer"]
WIRES = ["2025-11-25", "2026-07-28", "reme"]
STORES = ["local", "s3"]


def impossible(face: Face, auth: str, wire: str) -> str | None:
    """Why a cell cannot exist; None when it runs."""
    if face.stdio and auth == "bearer":
        return "stdio has no bearer tokens: its one client is the user who started it"
    if face.reme and wire != "reme":
        return "lro context serve speaks ReMe's HTTP API, not MCP"
    return None


# Every cell: (face, auth, wire, store, why it cannot exist or None). ReMe's
# wire is a row of `lro context serve` only; MCP faces have no such wire.
TABLE = [
    (face, auth, wire, store, impossible(face, auth, wire))
    for face, auth, wire, store in itertools.product(FACES, AUTHS, WIRES, STORES)
    if wire != "reme" or face.reme
]
RUNNABLE = [row[:4] for row in TABLE if row[4] is None]


def test_the_table_names_every_cell_and_only_the_two_impossible_kinds():
    assert len(TABLE) == 7 * 2 * 2 * 2 + 1 * 2 * 3 * 2
    reasons = {row[4] for row in TABLE} - {None}
    assert len(reasons) == 2, reasons
    assert len(RUNNABLE) == 44


class Fleet:
    """The shared servers and directories of the module."""

    def __init__(self, tmp: Path, weed: Seaweed):
        self.tmp = tmp
        self.weed = weed
        self.stack = ExitStack()
        self.http: dict[tuple[str, str, str], str] = {}

    def env(self, face: Face, store: str, auth: str) -> dict[str, str]:
        env = environ_without("LRO_BEARER_TOKENS", "ATLATL_", "RUST_LOG", "AWS_")
        env["ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR"] = str(self.tmp / f"out-{face.family}-{store}")
        env["ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS"] = "500"
        if store == "s3":
            env["ATLATL_PROMPT__OFFLOAD__STORE"] = f"s3://{BUCKET}/{face.family}"
            env.update(self.weed.env())
        if auth == "bearer":
            env["LRO_BEARER_TOKENS"] = ",".join(f"{t}={who}" for who, t in TOKENS.items())
        return env

    def root(self, face: Face, store: str) -> Path:
        root = self.tmp / f"ctx-{store}"
        root.mkdir(exist_ok=True)
        return root

    def url(self, face: Face, auth: str, store: str) -> str:
        """The HTTP face's URL, started on first use."""
        key = (face.name, auth, store)
        if key not in self.http:
            log = self.tmp / f"{face.family}-{'http' if not face.reme else 'serve'}-{auth}-{store}.err"
            proc = Background(face.argv(self.root(face, store)), self.env(face, store, auth), log, new_session=True,
                              name=f"{face.name} ({auth}, {store})")
            self.stack.callback(proc.stop)
            self.http[key] = proc.wait_url()
        return self.http[key]

    def stdio(self, face: Face, store: str) -> StdioServerParameters:
        argv = face.argv(self.root(face, store))
        return StdioServerParameters(command=argv[0], args=argv[1:], env=self.env(face, store, "none"))


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, binaries):
    tmp = tmp_path_factory.mktemp("matrix")
    weed = Seaweed(tmp / "s3")
    try:
        weed.start()
        weed.create_bucket(BUCKET)
        fleet = Fleet(tmp, weed)
        with fleet.stack:
            yield fleet
    finally:
        weed.close()


def mode(wire: str) -> str:
    return "legacy" if wire == "2025-11-25" else wire


@asynccontextmanager
async def mcp(server, wire: str, who: str | None) -> AsyncIterator[Client]:
    if isinstance(server, StdioServerParameters):
        async with Client(server, mode=mode(wire), cache=None) as c:
            yield c
        return
    headers = {"Authorization": f"Bearer {TOKENS[who]}"} if who else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(server, http_client=http), mode=mode(wire), cache=None) as c:
            yield c


def text(result) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


async def extract(c: Client, **args) -> tuple[str, bool]:
    result = await c.call_tool("lro_extract", args)
    return text(result), bool(result.is_error)


def next_part(answer: str) -> dict:
    m = re.search(r"next part: (\{.*\})", answer)
    assert m, f"no next part in: {answer[-400:]}"
    return json.loads(m.group(1))


async def offload_and_read(c: Client, wire: str, store: str) -> dict:
    """The owner's cell: offload, a recipe, a query and its second page.
    Returns how the result is named."""
    assert c.protocol_version == wire, c.protocol_version
    names = [t.name for t in (await c.list_tools()).tools]
    assert names.count("lro_extract") == 1, names
    r = await c.call_tool("list_memories", {"limit": 100, "detail": "full"})
    assert not r.is_error, text(r)
    d = json.loads(r.content[0].text)
    ref = {"handle": d["handle"]} if store == "s3" else {"file_path": d["file_path"]}
    assert ("file_path" in d) == (store == "local"), d
    got, failed = await extract(c, **ref, recipe=1)
    assert not failed and got.strip(), got
    first, failed = await extract(c, **ref, query=".id")
    assert not failed, first
    more = next_part(first)
    assert {k: more[k] for k in ref} == ref, more
    second, failed = await extract(c, **more)
    assert not failed and second.split("\n", 1)[0] not in first, second
    return ref


async def refused(c: Client, ref: dict) -> None:
    got, failed = await extract(c, **ref, recipe=1)
    assert failed and UNKNOWN in got, got


HISTORY_MARK = "marker-of-the-owner"


def history(tag: str) -> list[dict]:
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": f"call_{tag}", "type": "function", "function": {"name": "dump", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": f"call_{tag}",
         "content": "\n".join(f"{HISTORY_MARK} {tag} line {i}" for i in range(400))},
        {"role": "assistant", "content": "done"},
    ]


def context_args(tag: str) -> dict:
    return {"messages": history(tag), "context_manage_mode": "compact", "max_total_tokens": 500, "store_dir": "store"}


async def context_cell(c: Client, tag: str) -> str:
    r = await c.call_tool("context_offload", context_args(tag))
    assert not r.is_error, text(r)
    stored = json.loads(text(r))["metadata"]["stored_files"]
    assert stored, text(r)
    got = await c.call_tool("context_read_file", {"absolute_path": stored[0], "offset": 0, "limit": 5})
    assert not got.is_error and f"{HISTORY_MARK} {tag}" in text(got), text(got)
    page = await c.call_tool("context_read_file", {"absolute_path": stored[0], "offset": 200, "limit": 5})
    assert not page.is_error and "line 200\n" in text(page) and "line 199\n" not in text(page), text(page)
    found = await c.call_tool("context_grep", {"pattern": f"{HISTORY_MARK} {tag}", "path": "store"})
    assert not found.is_error and f"{HISTORY_MARK} {tag}" in text(found), text(found)
    return stored[0]


async def context_refused(c: Client, path: str, tag: str) -> None:
    theirs = await c.call_tool("context_read_file", {"absolute_path": path})
    assert theirs.is_error and HISTORY_MARK not in text(theirs), text(theirs)
    grep = await c.call_tool("context_grep", {"pattern": f"{HISTORY_MARK} {tag}"})
    assert text(grep).startswith("Found 0 matches"), text(grep)


def reme(url: str, route: str, body: dict, who: str | None) -> tuple[int, dict]:
    headers = {"Authorization": f"Bearer {TOKENS[who]}"} if who else {}
    with httpx2.Client(timeout=60) as http:
        r = http.post(f"{url}/{route}", json=body, headers=headers)
    return r.status_code, r.json()


def reme_cell(url: str, who: str | None, tag: str) -> str:
    status, answer = reme(url, "context_offload", context_args(tag), who)
    assert status == 200 and answer["success"], answer
    stored = answer["metadata"]["stored_files"]
    status, got = reme(url, "read_file", {"absolute_path": stored[0], "offset": 200, "limit": 5}, who)
    assert status == 200 and "line 200\n" in got["answer"] and "line 199\n" not in got["answer"], got
    status, found = reme(url, "grep", {"pattern": f"{HISTORY_MARK} {tag}", "path": "store"}, who)
    assert status == 200 and f"{HISTORY_MARK} {tag}" in found["answer"], found
    return stored[0]


def reme_refused(url: str, who: str | None, path: str, tag: str) -> None:
    status, got = reme(url, "read_file", {"absolute_path": path}, who)
    assert not got.get("success") and HISTORY_MARK not in json.dumps(got), (status, got)
    _, found = reme(url, "grep", {"pattern": f"{HISTORY_MARK} {tag}"}, who)
    assert found["answer"].startswith("Found 0 matches"), found


def http_peer(face: Face) -> Face:
    """The HTTP face of `face`'s family (itself, for an HTTP face)."""
    if not face.stdio:
        return face
    if face.context:
        return next(f for f in FACES if f.reme)
    return next(f for f in FACES if f.family == face.family and not f.stdio)


@pytest.mark.parametrize(("face", "auth", "wire", "store"), RUNNABLE,
                         ids=[f"{f.name}-{a}-{w}-{s}" for f, a, w, s in RUNNABLE])
def test_cell(fleet: Fleet, face: Face, auth: str, wire: str, store: str):
    tag = re.sub(r"\W+", "-", f"{face.name}-{auth}-{wire}-{store}")
    owner = "alice" if auth == "bearer" else None
    other_auth = "none" if auth == "bearer" else "bearer"
    peer = http_peer(face)

    async def run() -> None:
        server = fleet.stdio(face, store) if face.stdio else fleet.url(face, auth, store)
        across = fleet.url(peer, other_auth, store)
        across_who = None if owner else "alice"
        if face.reme:
            path = reme_cell(server, owner, tag)
            if owner:
                reme_refused(server, "bob", path, tag)
            reme_refused(across, across_who, path, tag)
            return
        async with mcp(server, wire, owner) as c:
            if face.context:
                path = await context_cell(c, tag)
            else:
                ref = await offload_and_read(c, wire, store)
        if face.context:
            if owner:
                async with mcp(server, wire, "bob") as bob:
                    await context_refused(bob, path, tag)
            if peer.reme:
                reme_refused(across, across_who, path, tag)
            else:
                async with mcp(across, wire, across_who) as other:
                    await context_refused(other, path, tag)
            return
        if owner:
            async with mcp(server, wire, "bob") as bob:
                await refused(bob, ref)
        async with mcp(across, wire, across_who) as other:
            await refused(other, ref)

    async def bounded() -> None:
        with anyio.fail_after(CELL_S):
            await run()

    anyio.run(bounded)


@pytest.mark.parametrize("kind", ["serve", "mcp"])
def test_a_context_entry_written_through_one_replica_is_read_through_another_by_its_owner_only(fleet, kind):
    """Two replicas of `lro context serve` (and of `lro context mcp`) on one
    S3 store and the same store root: an entry offloaded through A is read
    and grepped through B once every local copy is gone, by its owner only.
    On one machine the root is one directory, so each read through B follows
    the removal of every local file: B finds the entry only through the
    store."""
    root = fleet.tmp / f"replicas-{kind}"
    root.mkdir()
    tag = f"replica-{kind}"

    def forget() -> None:
        for entry in root.rglob("*"):
            if entry.is_file():
                entry.unlink()

    face = next(f for f in FACES if f.context and f.reme == (kind == "serve"))
    env = fleet.env(face, "s3", "bearer" if kind == "serve" else "none")
    env["ATLATL_PROMPT__OFFLOAD__STORE"] = f"s3://{BUCKET}/replicas-{kind}"
    if kind == "serve":
        urls = []
        for i in range(2):
            proc = Background(face.argv(root), env, fleet.tmp / f"replica-{kind}-{i}.err", new_session=True)
            fleet.stack.callback(proc.stop)
            urls.append(proc.wait_url())
        path = reme_cell(urls[0], "alice", tag)
        forget()
        status, got = reme(urls[1], "read_file", {"absolute_path": path, "offset": 200, "limit": 5}, "alice")
        assert status == 200 and "line 200\n" in got["answer"], got
        forget()
        status, found = reme(urls[1], "grep", {"pattern": f"{HISTORY_MARK} {tag}", "path": "store"}, "alice")
        assert status == 200 and f"{HISTORY_MARK} {tag}" in found["answer"], found
        forget()
        reme_refused(urls[1], "bob", path, tag)
        assert not Path(path).exists(), "another principal's entry was copied to disk"
        return

    server = StdioServerParameters(command=str(LRO), args=["context", "mcp", "--store-root", str(root)], env=env)

    async def run() -> None:
        with anyio.fail_after(CELL_S):
            async with mcp(server, "2026-07-28", None) as a:
                path = await context_cell(a, tag)
            forget()
            async with mcp(server, "2026-07-28", None) as b:
                got = await b.call_tool("context_read_file", {"absolute_path": path})
                assert not got.is_error and f"{HISTORY_MARK} {tag}" in text(got), text(got)
                forget()
                found = await b.call_tool("context_grep", {"pattern": f"{HISTORY_MARK} {tag}", "path": "store"})
                assert f"{HISTORY_MARK} {tag}" in text(found), text(found)

    anyio.run(run)

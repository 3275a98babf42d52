"""H. Both wires through `lro proxy`: 2026-07-28 (sessionless, `server/discover`)
and 2025-11-25 (`initialize`, sessions), on the proxy's stdio face and its
`--http` face, in front of every kind of upstream.

  a. the official Python SDK 2.3 client in its three modes (`auto` probes
     `server/discover`, `2026-07-28` goes straight to per-request `_meta`,
     `legacy` initializes) x both faces x five upstreams: server-everything
     from npm (2025-11-25 only), `memory-server --no-lro` (rmcp, both wires),
     the conformance fixture (Python SDK, both wires) over stdio and over HTTP
     (`--url`), and the fixture with `--only-2026` over HTTP. Each client lists
     the tools twice and calls one; afterwards nothing the case started is left;
  b. the TypeScript SDK client (2025-11-25 only) x both faces x the same upstreams;
  c. bad input on the HTTP face, posted raw: a request without the 2026 `_meta`,
     one naming an unknown protocol version, and `ping`, which 2026-07-28
     removed, get the errors and HTTP statuses the spec names, and the proxy
     answers the next request.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters

from support import EXIT_S, everything_stdio, full_env, offload_env, run_client, texts
from testkit.paths import LRO, MEMORY_SERVER, conformance_fixture
from testkit.procs import Background, kill_quietly, serving, tagged_pids
from testkit.waiting import PROMPT_S, wait_until

MODERN, LEGACY = "2026-07-28", "2025-11-25"
MODES = ("auto", MODERN, "legacy")
# The wire each client mode must end up on: the proxy serves 2026-07-28 on every
# face, whatever its upstream speaks, so `auto` finds it.
WIRE = {"auto": MODERN, MODERN: MODERN, "legacy": LEGACY}
FACES = ("stdio", "http")
# In the environment of every process a case starts: what still carries it afterwards is left behind.
TAG_VAR = "LRO_WIRES_TAG"
# One client's three requests, end to end (a proxy that hangs fails here, not the suite).
CASE_S = 20.0


@dataclass(frozen=True)
class Upstream:
    """An upstream of the proxy: its proxy arguments, given the HTTP upstreams'
    URLs, and one tool call with a check of its first text block."""

    args: Callable[[dict[str, str]], list[str]]
    tool: str
    arguments: dict
    check: Callable[[str], bool]


def _fixture_call(args: Callable[[dict[str, str]], list[str]]) -> Upstream:
    return Upstream(args, "test_simple_text", {}, lambda text: text == "This is a simple text response for testing.")


UPSTREAMS = {
    "server-everything": Upstream(
        lambda urls: ["--", *everything_stdio()], "echo", {"message": "across the wires"}, lambda text: text == "Echo: across the wires"
    ),
    "memory-server --no-lro": Upstream(
        lambda urls: ["--", str(MEMORY_SERVER), "--no-lro"],
        "list_memories",
        {"limit": 2, "detail": "light"},
        lambda text: len(json.loads(text)["memories"]) == 2,
    ),
    "fixture stdio": _fixture_call(lambda urls: ["--", *conformance_fixture("stdio")]),
    "fixture --url": _fixture_call(lambda urls: ["--url", urls["both"]]),
    "fixture --only-2026 --url": _fixture_call(lambda urls: ["--url", urls["2026"]]),
}

# --------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="module")
def http_upstreams(tmp_path_factory) -> Iterator[dict[str, str]]:
    """The fixture over HTTP twice: speaking both wires, and only 2026-07-28."""
    logs = tmp_path_factory.mktemp("wires-upstreams")
    with ExitStack() as stack:
        yield {
            "both": stack.enter_context(serving("fixture", conformance_fixture("http", "0"), logs / "both.log")),
            "2026": stack.enter_context(serving("fixture --only-2026", conformance_fixture("--only-2026", "http", "0"), logs / "2026.log")),
        }


@pytest.fixture
def tag() -> Iterator[str]:
    """This case's tag; whatever still carries it at the end is killed (by pid)."""
    value = uuid.uuid4().hex
    yield value
    for pid in tagged_pids(TAG_VAR, value):
        kill_quietly(pid)


@pytest.fixture
def proxy_env(tag: str, out_dir: Path) -> dict[str, str]:
    return full_env({TAG_VAR: tag, "RUST_LOG": "warn", **offload_env(out_dir)})


class HttpFace:
    """`lro proxy --http 127.0.0.1:0 ARGS`, tagged, stopped with SIGTERM."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path):
        self.proc = Background([str(LRO), "proxy", "--http", "127.0.0.1:0", *args], env, log)
        self.url = self.proc.wait_url()

    def stop(self) -> int:
        self.proc.proc.terminate()
        try:
            return self.proc.wait_exit(EXIT_S)
        finally:
            self.proc.stop()


def left_behind(tag: str) -> list[int]:
    """Waits (bounded) for every process of the case to end; returns those that did not."""
    try:
        wait_until(lambda: not tagged_pids(TAG_VAR, tag), timeout=EXIT_S, what="the case's processes to end")
    except AssertionError:
        return tagged_pids(TAG_VAR, tag)
    return []


# --------------------------------------------------------------------------
# a. the Python SDK client


@dataclass
class Seen:
    wire: str
    first: list[str]
    second: list[str]
    called: Any


async def three_requests(server: Any, mode: str, upstream: Upstream) -> Seen:
    """Two tools/list and one tools/call, with nothing cached between them."""
    with anyio.fail_after(CASE_S):
        async with Client(server, mode=mode, cache=None) as client:
            first = await client.list_tools()
            second = await client.list_tools()
            called = await client.call_tool(upstream.tool, upstream.arguments)
            return Seen(client.protocol_version, [t.name for t in first.tools], [t.name for t in second.tools], called)


def check(seen: Seen, mode: str, upstream: Upstream) -> None:
    assert seen.wire == WIRE[mode], f"mode {mode} ended up on {seen.wire}"
    assert upstream.tool in seen.first and "lro_extract" in seen.first, seen.first
    assert seen.second == seen.first
    assert not seen.called.is_error, texts(seen.called)
    assert upstream.check(texts(seen.called)[0]), texts(seen.called)


PY_CASES = [pytest.param(face, name, mode) for face in FACES for name in UPSTREAMS for mode in MODES]


@pytest.mark.anyio
@pytest.mark.parametrize(("face", "upstream_name", "mode"), PY_CASES)
async def test_python_client(face, upstream_name, mode, http_upstreams, proxy_env, tag, tmp_path, everything):
    upstream = UPSTREAMS[upstream_name]
    args = upstream.args(http_upstreams)
    if face == "stdio":
        server = StdioServerParameters(command=str(LRO), args=["proxy", *args], env=proxy_env)
        seen = await three_requests(server, mode, upstream)
    else:
        http = HttpFace(args, proxy_env, tmp_path / "proxy.err")
        try:
            seen = await three_requests(http.url, mode, upstream)
        finally:
            assert http.stop() == 0, http.proc.tail()
    check(seen, mode, upstream)
    assert left_behind(tag) == [], "processes of the case still running after its client and proxy"


# --------------------------------------------------------------------------
# b. the TypeScript SDK client (2025-11-25)

TS_CASES = [pytest.param(face, name) for face in FACES for name in UPSTREAMS]


@pytest.mark.parametrize(("face", "upstream_name"), TS_CASES)
def test_typescript_client(face, upstream_name, http_upstreams, proxy_env, tag, tmp_path, everything):
    upstream = UPSTREAMS[upstream_name]
    args = upstream.args(http_upstreams)
    ops = ["--request", "tools/list", "--call", upstream.tool, "--args", json.dumps(upstream.arguments), "--timeout-ms", str(int(CASE_S * 1000))]
    if face == "stdio":
        out = run_client(["--stdio", "--", str(LRO), "proxy", *args], ops, proxy_env)
    else:
        http = HttpFace(args, proxy_env, tmp_path / "proxy.err")
        try:
            out = run_client(["--url", http.url], ops, proxy_env)
        finally:
            assert http.stop() == 0, http.proc.tail()
    assert "fatal" not in out, out
    assert out["server"]["protocolVersion"] == LEGACY
    listed, (second, called) = [t["name"] for t in out["tools"]], out["ops"]
    assert upstream.tool in listed and "lro_extract" in listed, listed
    assert second["ok"] and [t["name"] for t in second["result"]["tools"]] == listed, second
    assert called["ok"] and not called["result"].get("isError"), called
    assert upstream.check(called["result"]["content"][0]["text"]), called
    assert left_behind(tag) == [], "processes of the case still running after its client and proxy"


# --------------------------------------------------------------------------
# c. bad input on the HTTP face, raw

ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def post(url: str, method: str, params: dict, version: str = MODERN, rid: int = 7) -> tuple[int, dict]:
    """POSTs one request as a 2026-07-28 client does, with the standard headers
    (SEP-2243: the method beside the protocol version); (HTTP status, the JSON-RPC answer)."""
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": version,
        "Mcp-Method": method,
    }
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    with httpx2.Client(timeout=PROMPT_S, trust_env=False) as http:
        response = http.post(url, headers=headers, json=body)
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        # The answer is the event whose message carries the request's id.
        messages = [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:") and line[5:].strip()]
        return response.status_code, next(m for m in messages if m.get("id") == rid)
    return response.status_code, response.json()


@pytest.fixture(scope="module")
def raw_face(tmp_path_factory) -> Iterator[str]:
    """`lro proxy --http` in front of memory-server --no-lro, for raw requests."""
    logs = tmp_path_factory.mktemp("wires-raw")
    env = full_env({"RUST_LOG": "warn", **offload_env(logs)})
    with serving("lro proxy", [str(LRO), "proxy", "--http", "127.0.0.1:0", "--", str(MEMORY_SERVER), "--no-lro"], logs / "proxy.err", env) as url:
        yield url


BAD_INPUT = {
    # A sessionless request must carry the envelope (_meta protocolVersion and clientCapabilities).
    "missing _meta": ("tools/list", {}, MODERN, 400, -32602),
    # An unknown version: UnsupportedProtocolVersionError naming the supported ones.
    "unknown protocol version": ("tools/list", {"_meta": {**ENVELOPE, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}}, "2099-01-01", 400, -32022),
    # 2026-07-28 removed ping.
    "ping at 2026-07-28": ("ping", {"_meta": ENVELOPE}, MODERN, 404, -32601),
}


@pytest.mark.parametrize("case", list(BAD_INPUT), ids=list(BAD_INPUT))
def test_bad_input_gets_the_spec_error_and_the_face_stays_up(raw_face, case):
    method, params, version, status, code = BAD_INPUT[case]
    got_status, answer = post(raw_face, method, params, version)
    assert (got_status, answer.get("error", {}).get("code")) == (status, code), answer
    assert answer["id"] == 7, "the error answers the request's id"
    if code == -32022:
        assert MODERN in answer["error"]["data"]["supported"], answer
    got_status, answer = post(raw_face, "tools/list", {"_meta": ENVELOPE}, rid=8)
    assert got_status == 200 and "list_memories" in [t["name"] for t in answer["result"]["tools"]], answer



def test_bad_input_on_the_stdio_face_gets_the_spec_error_and_the_face_stays_up(tmp_path):
    """The same bad requests as a line each on `lro proxy`'s stdio face: each
    gets the JSON-RPC error the spec names, with its id, and a good request
    after them is answered (stdin stays open until it is)."""
    env = full_env({"RUST_LOG": "warn", **offload_env(tmp_path)})
    proc = subprocess.Popen([str(LRO), "proxy", "--", str(MEMORY_SERVER), "--no-lro"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        for rid, case in enumerate(BAD_INPUT, start=1):
            method, params, _, _, code = BAD_INPUT[case]
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + "\n")
            proc.stdin.flush()
            answer = json.loads(proc.stdout.readline())
            assert (answer["id"], answer.get("error", {}).get("code")) == (rid, code), (case, answer)
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 99, "method": "tools/list", "params": {"_meta": ENVELOPE}}) + "\n")
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        assert answer["id"] == 99 and "list_memories" in [t["name"] for t in answer["result"]["tools"]], answer
        proc.stdin.close()
        assert proc.wait(EXIT_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_2025_06_18_session_is_served_whole(raw_face):
    """A client of 2025-06-18 (sessions, no _meta envelope) on the same /mcp:
    initialize, initialized, tools/list and tools/call in its session, then
    DELETE ends it."""
    old = "2025-06-18"
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

    def answer(response, rid: int) -> dict:
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            messages = [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:") and line[5:].strip()]
            return next(m for m in messages if m.get("id") == rid)
        return response.json()

    with httpx2.Client(timeout=PROMPT_S, trust_env=False) as http:
        init = http.post(raw_face, headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": old, "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}})
        assert init.status_code == 200, init.text
        assert answer(init, 1)["result"]["protocolVersion"] == old
        session = {**headers, "Mcp-Session-Id": init.headers["mcp-session-id"], "MCP-Protocol-Version": old}
        done = http.post(raw_face, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert done.status_code == 202, done.text
        listed = answer(http.post(raw_face, headers=session, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}), 2)
        assert "list_memories" in [t["name"] for t in listed["result"]["tools"]], listed
        called = answer(http.post(raw_face, headers=session, json={"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "list_memories", "arguments": {"limit": 2}}}), 3)
        assert not called["result"].get("isError") and called["result"]["content"], called
        assert "resultType" not in called["result"], "a 2026-07-28 field on the 2025-06-18 wire"
        assert http.delete(raw_face, headers=session).status_code in (200, 202, 204)
        gone = http.post(raw_face, headers=session, json={"jsonrpc": "2.0", "id": 4, "method": "tools/list"})
        assert gone.status_code == 404, gone.text

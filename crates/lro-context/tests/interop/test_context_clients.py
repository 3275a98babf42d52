"""Context offload from outside (run: python3 -m pytest -q crates/lro-context/tests/interop).

- `lro context serve`, driven the way ReMe's own docs drive ReMe (plain HTTP
  POSTs of the seed's request bodies, here with urllib): the readiness line,
  /context_offload, /read_file (byte-identical), /grep.
- The MCP tools, through the official Python SDK: on the demo server
  (`memory-server --context-store-root`), through `lro proxy
  --context-store-root` in front of the bare server, and standalone (`lro
  context mcp`).
- `lro context offload` as a script filter.

Uses only 127.0.0.1 and temporary directories.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from testkit.http import DIRECT
from testkit.paths import LRO, MEMORY_SERVER
from testkit.procs import Background
from testkit.waiting import wait_until

pytestmark = pytest.mark.usefixtures("binaries")


def history() -> list[dict]:
    """A small agent loop: two large tool results, then the answer."""
    return [
        {"role": "system", "content": "You are a research assistant."},
        {"role": "user", "content": "Survey context management."},
        {"role": "assistant", "content": "Searching.", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "web_search", "arguments": "{\"q\": \"context\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "result-one " + "alpha " * 3000},
        {"role": "assistant", "content": "Reading.", "tool_calls": [{"id": "call_2", "name": "read_webpage", "arguments": {"url": "u"}}]},
        {"role": "tool", "tool_call_id": "call_2", "content": "result-two\n" + "beta\n" * 4000},
        {"role": "assistant", "content": "Done: three techniques."},
    ]


def request(store: Path) -> dict:
    return {"messages": history(), "context_manage_mode": "compact", "max_total_tokens": 1000, "store_dir": str(store)}


def check_offloaded(r: dict, contents: bool = True) -> dict:
    """The seed's response shape, both tool results compacted. Returns each
    stored path with the original content its message pointed at, which
    ReMe's `write_file_dict` echoes when the answer carries the contents."""
    assert r["success"] is True, r
    stored = r["metadata"]["stored_files"]
    assert len(stored) == 2, r["answer"]
    files = {}
    for i in (3, 5):
        pointer = r["messages"][i]["content"]
        assert "(detailed result is stored in " in pointer, pointer
        files[next(p for p in stored if p in pointer)] = history()[i]["content"]
    assert len(files) == 2, stored
    if contents:
        assert r["metadata"]["write_file_dict"] == files
    else:
        assert "write_file_dict" not in r["metadata"], r["metadata"].keys()
    assert r["messages"][-1] == history()[-1]
    return files


# ---------------------------------------------------------------------------
# HTTP: the seed's API, as a ReMe client uses it


def post(base: str, path: str, body: dict) -> dict:
    req = urllib.request.Request(f"{base}{path}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with DIRECT.open(req, timeout=30) as resp:
        return json.loads(resp.read())


@contextmanager
def serving(tmp_path: Path, *args: str):
    """`lro context serve --http 127.0.0.1:0 ARGS`; yields the base URL of its readiness line."""
    proc = Background([LRO, "context", "serve", "--http", "127.0.0.1:0", *args], None, tmp_path / "serve.err")
    try:
        yield proc.wait_url()
    finally:
        proc.stop()


def test_serve_speaks_remes_api(tmp_path: Path):
    root = tmp_path / "root"
    with serving(tmp_path, "--store-root", str(root)) as base:
        store = root / "context_store"
        files = check_offloaded(post(base, "/context_offload", request(store)))
        for path, content in files.items():
            assert Path(path).parent == store.resolve()
            assert post(base, "/read_file", {"absolute_path": path})["answer"] == content
            assert (Path(path).stat().st_mode & 0o777) == 0o600
        assert (store.stat().st_mode & 0o777) == 0o700
        found = post(base, "/grep", {"pattern": "result-two", "path": str(store), "glob": "*.txt", "limit": 100})["answer"]
        assert found.startswith('Found 1 matches for pattern "result-two"'), found
        with pytest.raises(urllib.error.HTTPError) as refused:
            post(base, "/read_file", {"absolute_path": "/etc/passwd"})
        assert refused.value.code == 400


def test_retention_deletes_stored_files_and_reads_say_expired(tmp_path: Path):
    root = tmp_path / "root"
    with serving(tmp_path, "--store-root", str(root), "--retention-secs", "1") as base:
        files = check_offloaded(post(base, "/context_offload", request(root / "store")))
        path = next(iter(files))
        # Retention 1 s, a pass every second.
        wait_until(lambda: not Path(path).exists(), timeout=15, interval=0.1, what="retention to delete the file")
        with pytest.raises(urllib.error.HTTPError) as gone:
            post(base, "/read_file", {"absolute_path": path})
        assert gone.value.code == 404
        assert "expired" in json.loads(gone.value.read())["answer"]


def test_offload_filters_stdin_to_stdout(tmp_path: Path):
    store = tmp_path / "store"
    out = subprocess.run(
        [str(LRO), "context", "offload", "--store-dir", str(store), "--mode", "compact", "--max-total-tokens", "1000"],
        input=json.dumps(history()), capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    check_offloaded(json.loads(out.stdout))
    names_only = subprocess.run(
        [str(LRO), "context", "offload", "--store-dir", str(store), "--mode", "compact", "--max-total-tokens", "1000", "--no-file-contents"],
        input=json.dumps(history()), capture_output=True, text=True, timeout=60,
    )
    assert names_only.returncode == 0, names_only.stderr
    check_offloaded(json.loads(names_only.stdout), contents=False)
    bad = subprocess.run([str(LRO), "context", "offload"], input="[]", capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "store_dir" in bad.stderr, bad.stderr


# ---------------------------------------------------------------------------
# MCP tools, through the official Python SDK


async def use_tools(command: list[str], store: Path) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=command[0], args=command[1:], env={**os.environ, "RUST_LOG": "warn"})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as client:
            await client.initialize()
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"context_offload", "context_grep", "context_read_file"} <= names, names

            def text(result) -> str:
                assert not (getattr(result, "is_error", None) or getattr(result, "isError", None)), result
                return "\n".join(c.text for c in result.content if c.type == "text")

            # The MCP answer names the files without echoing them: it stays
            # far smaller than what it stored.
            answer = text(await client.call_tool("context_offload", request(store)))
            files = check_offloaded(json.loads(answer), contents=False)
            assert len(answer) < sum(map(len, files.values())) / 5, len(answer)
            echoed = {**request(store), "include_file_contents": True}
            check_offloaded(json.loads(text(await client.call_tool("context_offload", echoed))))
            for path, content in files.items():
                assert text(await client.call_tool("context_read_file", {"absolute_path": path})) == content
            found = text(await client.call_tool("context_grep", {"pattern": "result-one", "path": str(store)}))
            assert found.startswith('Found 1 matches for pattern "result-one"'), found
            outside = await client.call_tool("context_read_file", {"absolute_path": "/etc/passwd"})
            assert getattr(outside, "is_error", None) or getattr(outside, "isError", None)
            assert "outside the store roots" in outside.content[0].text


@pytest.mark.parametrize("where", ["demo-server", "proxy", "standalone"])
def test_mcp_tools(tmp_path: Path, where: str):
    root = tmp_path / "root"
    command = {
        "demo-server": [str(MEMORY_SERVER), "--context-store-root", str(root)],
        "proxy": [str(LRO), "proxy", "--context-store-root", str(root), "--", str(MEMORY_SERVER), "--no-lro"],
        "standalone": [str(LRO), "context", "mcp", "--store-root", str(root)],
    }[where]
    asyncio.run(asyncio.wait_for(use_tools(command, root / "store"), timeout=60))

"""F. The proxy flag: an LRO-enabled server behind `lro proxy` leaves the
offloading to the proxy (one file, in the proxy's directory), and a server
without LRO gets offloading from the proxy.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from support import connect, descriptor, full_env, offload_env, proxy_argv, stdio_process
from testkit.paths import MEMORY_SERVER
from testkit.procs import Background
from testkit.waiting import PROMPT_S

THRESHOLD = 500
LIST_ALL = {"limit": 500}


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    """(A: the memory server's offload dir, B: the proxy's)."""
    a, b = tmp_path / "server-offload", tmp_path / "proxy-offload"
    a.mkdir()
    b.mkdir()
    return a, b


@pytest.fixture
def remote(tmp_path: Path, dirs):
    """memory-server --http with LRO on (low threshold, its own dir A)."""
    a, _ = dirs
    server = Background(
        [str(MEMORY_SERVER), "--http", "127.0.0.1:0"],
        full_env(offload_env(a, threshold=THRESHOLD)),
        tmp_path / "memory-server.err",
    )
    try:
        yield server.wait_url()
    finally:
        server.stop()


@pytest.mark.anyio
async def test_remote_lro_server_leaves_offloading_to_the_proxy(tmp_path, dirs, remote):
    a, b = dirs
    env = full_env(offload_env(b, threshold=THRESHOLD))
    async with connect(proxy_argv("--url", remote), env, tmp_path / "proxy.err") as (_, session):
        with anyio.fail_after(PROMPT_S):
            desc = descriptor(await session.call_tool("list_memories", LIST_ALL))
    path = Path(desc["file_path"])
    assert path.parent == b and path.is_file(), path
    assert desc["summary"]["count"] == 500
    assert list(b.iterdir()) == [path]
    assert not list(a.iterdir()), f"the remote server offloaded too: {list(a.iterdir())}"

    # Control: the same call straight to the server is offloaded by the server,
    # so it is the proxy flag that kept A empty above.
    async with streamable_http_client(remote) as (read, write), ClientSession(read, write) as direct:
        with anyio.fail_after(PROMPT_S):
            await direct.initialize()
            own = descriptor(await direct.call_tool("list_memories", LIST_ALL))
    assert Path(own["file_path"]).parent == a


@pytest.mark.anyio
async def test_the_flag_rides_in_each_requests_meta_on_2026_07_28(tmp_path, dirs, remote):
    """A sessionless client: the proxy reaches the remote server over
    2026-07-28, with no `initialize`, so the flag rides in every request's
    `_meta` client capabilities, and the remote server honours it there."""
    a, b = dirs
    env = full_env(offload_env(b, threshold=THRESHOLD))
    argv = proxy_argv("--url", remote)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    async with Client(params, mode="2026-07-28", cache=None) as client:
        assert client.protocol_version == "2026-07-28"
        with anyio.fail_after(PROMPT_S):
            desc = descriptor(await client.call_tool("list_memories", LIST_ALL))
    path = Path(desc["file_path"])
    assert path.parent == b and path.is_file(), path
    assert not list(a.iterdir()), f"the remote server offloaded too: {list(a.iterdir())}"


@pytest.mark.anyio
async def test_proxy_offloads_for_a_server_without_lro(tmp_path, dirs):
    _, b = dirs
    env = full_env(offload_env(b, threshold=THRESHOLD))
    argv = proxy_argv(upstream=[str(MEMORY_SERVER), "--no-lro"])
    async with connect(argv, env, tmp_path / "proxy.err") as (_, session):
        with anyio.fail_after(PROMPT_S):
            tools = {t.name for t in (await session.list_tools()).tools}
            desc = descriptor(await session.call_tool("list_memories", LIST_ALL))
    assert "lro_extract" in tools
    path = Path(desc["file_path"])
    assert path.parent == b and path.is_file(), path
    assert desc["summary"]["count"] == 500


@pytest.mark.anyio
async def test_remote_server_going_away_and_coming_back(tmp_path, dirs):
    """The HTTP upstream dies mid-session: the call fails promptly with an error
    that names the upstream, the proxy stays up, and once the server is back on
    the same address the next call opens a new upstream session and succeeds."""
    a, b = dirs
    server = Background(
        [str(MEMORY_SERVER), "--http", "127.0.0.1:0"], full_env(offload_env(a)), tmp_path / "memory-server.err"
    )
    try:
        url = server.wait_url()
        addr = url.removeprefix("http://").split("/", 1)[0]
        env = full_env(offload_env(b))
        async with stdio_process(proxy_argv("--url", url), env, tmp_path / "proxy.err") as proc:
            async with proc.session() as session:
                with anyio.fail_after(PROMPT_S):
                    await session.initialize()
                    await session.call_tool("list_memories", {"limit": 1})
                server.proc.kill()
                server.wait_exit()
                with pytest.raises(MCPError) as err:
                    with anyio.fail_after(PROMPT_S):
                        await session.call_tool("list_memories", {"limit": 1})
                assert "upstream" in err.value.message, err.value
                server = Background(
                    [str(MEMORY_SERVER), "--http", addr],
                    full_env(offload_env(a)),
                    tmp_path / "memory-server-2.err",
                )
                assert server.wait_url() == url
                with anyio.fail_after(PROMPT_S):
                    again = await session.call_tool("list_memories", {"limit": 1})
                assert not again.is_error, again
            await proc.close_stdin()
            code = await proc.wait_exit()
    finally:
        server.stop()
    stderr = proc.stderr()
    assert code == 0, stderr
    assert "panicked" not in stderr

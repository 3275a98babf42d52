"""B. Transparency: the official Python SDK client over stdio to
`lro proxy -- python3 fixtures/py_server.py` sees what it sees talking to the
fixture directly (plus `lro_extract`), for answers, errors, server-to-client
requests (sampling, elicitation) and notifications (progress, logging), and
cancellation reaches the upstream.
"""

from __future__ import annotations

import copy
import json
import select
import subprocess
from pathlib import Path

import anyio
import fixture_spec as fixture
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from support import EXIT_S, cancel_slow_call, connect, fixture_cmd, full_env, offload_env, proxied, proxy_argv, relaxed, texts
from testkit.waiting import PROMPT_S, await_until

# The same calls, made once straight to the fixture and once through the
# proxy; the tests below compare the two transcripts (raw JSON-RPC answers).
SMALL_CALLS = [("short", {}), ("big_json", {"n": 3}), ("long_log", {"lines": 3}), ("ordered", {"n": 2})]


async def _transcript(argv: list[str], env: dict[str, str], err: Path) -> dict:
    async with connect(argv, env, err) as (proc, session):
        with anyio.fail_after(PROMPT_S * 3):
            await session.list_tools()
            for name, args in SMALL_CALLS:
                await session.call_tool(name, args)
            try:
                await session.call_tool("fail")
                fail_error = None
            except MCPError as exc:
                fail_error = (exc.code, exc.message)
        return {
            "protocol_version": session.protocol_version,
            "initialize": proc.wire_result("initialize")["result"],
            "tools": proc.wire_result("tools/list")["result"]["tools"],
            "calls": {name: proc.wire_result("tools/call", name)["result"] for name, _ in SMALL_CALLS},
            "fail": proc.wire_result("tools/call", "fail")["error"],
            "fail_error": fail_error,
        }


@pytest.fixture(scope="module")
def transcripts(tmp_path_factory) -> tuple[dict, dict, Path]:
    """(direct, proxied, the proxy's offload dir)."""
    tmp = tmp_path_factory.mktemp("transcripts")
    out = tmp / "offload"
    out.mkdir()
    fenv = {"FIXTURE_PID_FILE": str(tmp / "pids")}
    want = anyio.run(_transcript, fixture_cmd(), full_env(fenv), tmp / "direct.err")
    got = anyio.run(_transcript, proxy_argv(upstream=fixture_cmd()), full_env({**fenv, **offload_env(out)}), tmp / "proxy.err")
    return want, got, out


def test_initialize_matches_direct(transcripts):
    want, got, _ = transcripts
    assert got["protocol_version"] == want["protocol_version"]
    assert got["initialize"]["serverInfo"] == want["initialize"]["serverInfo"] == {"name": fixture.NAME, "version": fixture.VERSION}
    assert got["initialize"]["instructions"] == want["initialize"]["instructions"] == fixture.INSTRUCTIONS
    assert got["initialize"]["protocolVersion"] == want["initialize"]["protocolVersion"]
    assert got["initialize"]["capabilities"] == want["initialize"]["capabilities"]


def test_tools_list_is_direct_plus_lro_extract(transcripts):
    want, got, _ = transcripts
    names = [t["name"] for t in got["tools"]]
    assert names.count("lro_extract") == 1
    assert sorted(names) == sorted([t["name"] for t in want["tools"]] + ["lro_extract"])
    extract = next(t for t in got["tools"] if t["name"] == "lro_extract")
    assert "file_path" in extract["inputSchema"]["properties"]
    by_name = {t["name"]: t for t in got["tools"]}
    for tool in want["tools"]:
        mine = copy.deepcopy(by_name[tool["name"]])
        if "outputSchema" in tool:
            # The one documented change: the schema also admits the descriptor.
            assert mine.pop("outputSchema") == relaxed(tool["outputSchema"]), tool["name"]
            tool = {k: v for k, v in tool.items() if k != "outputSchema"}
        assert mine == tool


@pytest.mark.parametrize("name", [name for name, _ in SMALL_CALLS])
def test_small_results_equal_direct(transcripts, name):
    want, got, out = transcripts
    assert got["calls"][name] == want["calls"][name]
    assert not list(out.iterdir()), "a small result must not be offloaded"


def test_structured_results_keep_their_key_order(transcripts):
    # Dict equality ignores order; the model reads the JSON as written.
    want, got, _ = transcripts
    keep = got["calls"]["ordered"]["structuredContent"]
    assert json.dumps(keep) == json.dumps(want["calls"]["ordered"]["structuredContent"])
    assert list(keep) == ["zeta", "items", "alpha"] and list(keep["items"][0]["a"]) == ["z", "b"]


def test_upstream_error_keeps_code_and_message(transcripts):
    want, got, _ = transcripts
    assert got["fail_error"] == want["fail_error"] == (fixture.FAIL_CODE, fixture.FAIL_MESSAGE)
    assert got["fail"] == want["fail"]


@pytest.mark.anyio
async def test_upstream_sees_client_capabilities_and_proxy_flag(tmp_path, fixture_env, out_dir):
    async def sampling(ctx, params):
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="x"), model="m")

    async def elicitation(ctx, params):
        return types.ElicitResult(action="decline")

    client_info = types.Implementation(name="interop-client", version="9.9")
    async with proxied(
        tmp_path, fixture_env, out_dir, sampling_callback=sampling, elicitation_callback=elicitation, client_info=client_info
    ) as (_, session):
        seen = json.loads(texts(await session.call_tool("client"))[0])
    assert seen["clientInfo"]["name"] == "interop-client"
    caps = seen["capabilities"]
    assert "sampling" in caps and "elicitation" in caps, caps
    assert caps.get("extensions", {}).get("io.atlatl/lro") == {"proxy": True}, caps


@pytest.mark.anyio
async def test_sampling_round_trip(tmp_path, fixture_env, out_dir):
    seen: list[types.CreateMessageRequestParams] = []

    async def sampling(ctx, params):
        seen.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="hello from the client"), model="test-model"
        )

    async with proxied(tmp_path, fixture_env, out_dir, sampling_callback=sampling) as (_, session):
        with anyio.fail_after(PROMPT_S):
            result = await session.call_tool("sample", {"prompt": "ping?"})
    assert texts(result) == ["sampled: hello from the client"]
    assert len(seen) == 1
    assert seen[0].messages[0].content.text == "ping?"
    assert seen[0].max_tokens == 64


@pytest.mark.anyio
async def test_elicitation_round_trip(tmp_path, fixture_env, out_dir):
    seen: list = []

    async def elicitation(ctx, params):
        seen.append(params)
        return types.ElicitResult(action="accept", content={"colour": "teal"})

    async with proxied(tmp_path, fixture_env, out_dir, elicitation_callback=elicitation) as (_, session):
        with anyio.fail_after(PROMPT_S):
            result = await session.call_tool("elicit")
    assert texts(result) == ["accepted: teal"]
    assert len(seen) == 1
    assert seen[0].message == "Which colour?"
    assert "colour" in seen[0].requested_schema["properties"]


@pytest.mark.anyio
async def test_progress_notifications_arrive(tmp_path, fixture_env, out_dir):
    events: list[tuple] = []

    async def on_progress(progress, total, message):
        events.append((progress, total, message))

    async with proxied(tmp_path, fixture_env, out_dir) as (proc, session):
        with anyio.fail_after(PROMPT_S):
            result = await session.call_tool("progress", {"steps": 4}, progress_callback=on_progress)
        assert texts(result) == ["done 4"]
        await await_until(lambda: len(events) >= 4, what="4 progress notifications")
        # The client's own token came back on every notification.
        call = next(m for m in proc.sent if m.get("method") == "tools/call")
        token = call["params"]["_meta"]["progressToken"]
        tokens = {m["params"]["progressToken"] for m in proc.received if m.get("method") == "notifications/progress"}
    assert events == [(i, 4, f"step {i}") for i in range(1, 5)]
    assert tokens == {token}


@pytest.mark.anyio
async def test_log_notifications_arrive(tmp_path, fixture_env, out_dir):
    logs: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params):
        logs.append(params)

    async with proxied(tmp_path, fixture_env, out_dir, logging_callback=on_log) as (_, session):
        with anyio.fail_after(PROMPT_S):
            result = await session.call_tool("log", {"msg": "hi"})
        assert texts(result) == ["logged"]
        await await_until(lambda: len(logs) >= 2, what="2 log notifications")
    assert [(p.level, p.data) for p in logs] == [("info", "first: hi"), ("info", "second: hi")]


@pytest.mark.anyio
async def test_cancellation_reaches_upstream(tmp_path, fixture_env, out_dir):
    cancelled = Path(fixture_env["FIXTURE_CANCEL_FILE"])
    async with proxied(tmp_path, fixture_env, out_dir) as (proc, session):
        await cancel_slow_call(session, fixture_env)
        # The SDK told the proxy ...
        sent = [m for m in proc.sent if m.get("method") == "notifications/cancelled"]
        assert sent, "the SDK did not send notifications/cancelled"
        # ... and the proxy told the upstream, which stopped the tool.
        await await_until(cancelled.exists, what="the upstream's cancellation marker")
        # The session is still usable.
        with anyio.fail_after(PROMPT_S):
            assert texts(await session.call_tool("short")) == ["ok"]


@pytest.mark.anyio
async def test_slow_call_does_not_block_fast_one(tmp_path, fixture_env, out_dir):
    started = Path(fixture_env["FIXTURE_STARTED_FILE"])
    async with proxied(tmp_path, fixture_env, out_dir) as (_, session):
        slow_done = anyio.Event()
        async with anyio.create_task_group() as tg:

            async def slow() -> None:
                await session.call_tool("slow", {"seconds": 20})
                slow_done.set()

            tg.start_soon(slow)
            await await_until(started.exists, what="slow() to start upstream")
            with anyio.fail_after(5):
                assert texts(await session.call_tool("short")) == ["ok"]
            assert not slow_done.is_set()
            tg.cancel_scope.cancel()


def _raw_initialize(argv: list[str], env: dict[str, str], version: str) -> dict:
    """The answer to one raw `initialize` offering `version` (no SDK in between)."""
    request = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
    }
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((json.dumps(request) + "\n").encode())
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], PROMPT_S * 2)
        assert ready, f"no answer to initialize({version}) from {argv[0]} within {PROMPT_S * 2}s"
        return json.loads(proc.stdout.readline())
    finally:
        proc.stdin.close()
        try:
            proc.wait(EXIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("offered", ["2025-03-26", "1999-01-01"])
def test_version_negotiation_matches_direct(tmp_path, fixture_env, out_dir, offered):
    """An older known version is kept; an unknown one gets the server's
    counter-offer. Through the proxy, the client agrees what it would agree
    with the server directly."""
    env = full_env({**fixture_env, **offload_env(out_dir)})
    want = _raw_initialize(fixture_cmd(), env, offered)
    got = _raw_initialize(proxy_argv(upstream=fixture_cmd()), env, offered)
    assert "result" in got, got
    assert got["result"]["protocolVersion"] == want["result"]["protocolVersion"]

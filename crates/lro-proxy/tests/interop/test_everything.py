"""E. `lro proxy` with third-party parts from npm: the reference server
`@modelcontextprotocol/server-everything` as upstream, and the official
TypeScript SDK (`ts/client.mjs`) or Python SDK as client.

  a. TS client -> `lro proxy -- node server-everything stdio` vs the server direct:
     tools, small results, a large result offloaded (its file read by the real jq);
  b. the same over streamable HTTP: `lro proxy --url` in front of server-everything's
     HTTP mode, and the proxy's own HTTP face (`--http 127.0.0.1:0`);
  c. Python SDK -> proxy: sampling, elicitation, roots, progress and logging arrive;
  d. Python SDK direct vs proxied: prompts and resources answers are equal JSON values.

The npm parts are pinned in ts/package.json + ts/package-lock.json and installed by
testkit/npm-ci.sh (`npm ci`, a no-op when already installed), so the tests run offline.
What rmcp's typed model changes on the way through is kept as strict xfails (see
BUG_*): fixing one turns its test into an XPASS failure, the signal to drop the marker.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import shlex
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from support import (
    EVERYTHING_JS, TS, connect, everything_stdio, full_env, offload_env, proxy_argv, relaxed, run_client, texts,
)
from testkit.paths import LRO, REPO
from testkit.procs import Background, kill_quietly, tagged_pids
from testkit.waiting import PROMPT_S, await_until

LOOPBACK_JS = REPO / "testkit" / "listen-loopback.mjs"

# Every wait is bounded by one of these (no sleeps as synchronisation).
READY_S = 20  # a readiness line
STOP_S = 10  # a process group to exit after SIGTERM

# Offload everything over ~200 characters: a medium result of the reference server
# is then offloaded while echo("hello ...") and the small tools are not.
THRESHOLD = 50
BIG_MESSAGE = "\n".join(f"row {i}: alpha beta gamma {i * i}" for i in range(40))
SMALL_CALLS = [
    ("echo", {"message": "hello through the proxy"}),
    ("get-structured-content", {"location": "Chicago"}),
    ("get-sum", {"a": 2, "b": 3}),
]
TAG_VAR = "LRO_EVERYTHING_TAG"

BUG_TASKS_CAPABILITY = (
    "proxy bug: the initialize answer loses capabilities.tasks "
    '({"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}): rmcp 3.11 ServerCapabilities has no `tasks` '
    "field (tasks moved to the io.modelcontextprotocol/tasks extension), so the 2025-11-25 field is dropped"
)
BUG_TOOL_EXECUTION = (
    "proxy bug: tools/list loses Tool.execution ({'taskSupport': 'forbidden'|'required'}) on every tool "
    "(rmcp 3.11 Tool has no `execution`); simulate-research-query requires task augmentation and the client cannot know"
)
BUG_SERVER_REQUESTS = (
    "proxy bug: server->client requests are rewritten: sampling temperature 0.7 -> 0.699999988079071 (f32), "
    "_meta.progressToken injected, elicitation mode:'form' added and requestedSchema.properties reordered"
)


# --------------------------------------------------------------------------
# processes


def call_ops(calls: list[tuple[str, dict]], progress: tuple[str, ...] = ()) -> list[str]:
    ops: list[str] = []
    for name, args in calls:
        ops += ["--call", name, "--args", json.dumps(args)]
        if name in progress:
            ops.append("--progress")
    return ops


def op(transcript: dict, name: str, nth: int = 0) -> dict:
    """The nth operation record of `transcript` for tool `name`."""
    found = [o for o in transcript["ops"] if o.get("name") == name]
    assert len(found) > nth, f"no call #{nth} of {name} in {[o.get('name') for o in transcript['ops']]}"
    record = found[nth]
    assert record["ok"], f"{name} failed: {record.get('error')}\nclient stderr:\n{transcript['stderr'][-3000:]}"
    return record


# --------------------------------------------------------------------------
# offload descriptors


def descriptor_of(wire: dict) -> dict:
    """The offload descriptor in a raw tools/call result (its first text block)."""
    blocks = [c for c in wire.get("content", []) if c.get("type") == "text"]
    assert blocks, f"no text content: {json.dumps(wire)[:500]}"
    try:
        desc = json.loads(blocks[0]["text"])
    except json.JSONDecodeError as exc:
        raise AssertionError(f"not a descriptor: {blocks[0]['text'][:300]!r}") from exc
    assert isinstance(desc, dict) and desc.get("offloaded") is True, f"not a descriptor: {blocks[0]['text'][:500]}"
    return desc


def offload_file(desc: dict, out_dir: Path) -> tuple[Path, dict, list[dict]]:
    """(path, header, records) of the descriptor's file, checked to be in `out_dir`."""
    path = Path(desc["file_path"])
    assert path.is_absolute() and path.parent == out_dir, (path, out_dir)
    assert re.fullmatch(r"atlatl-[A-Za-z0-9_]+-[0-9A-HJKMNP-TV-Z]{26}\.jsonl", path.name), path.name
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    records = [json.loads(line) for line in lines[1:]]
    assert header["type"] == "lro_header" and header["count"] == len(records) == desc["summary"]["count"], header
    return path, header, records


def run_recipe(command: str) -> subprocess.CompletedProcess[str]:
    """A descriptor's recipe, run by bash with the real jq."""
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=30)


def json_lines(text: str) -> list[Any]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def check_big_echo(desc: dict, out_dir: Path, direct_text: str) -> None:
    """The offloaded big echo: the file's records are the direct answer's lines, and
    recipes 1 (every line, tab-separated) and 2 (a stretch of lines) run with jq
    (exit 0) over them."""
    assert len(desc["jq_recipes"]) == 10, desc["jq_recipes"]
    assert all(set(r) >= {"description", "command"} for r in desc["jq_recipes"])
    path, header, records = offload_file(desc, out_dir)
    assert header["operation"] == "echo"
    assert [r["line"] for r in records] == list(range(1, len(records) + 1))
    assert "\n".join(r["text"] for r in records) == direct_text
    one, two = (run_recipe(desc["jq_recipes"][i]["command"]) for i in (0, 1))
    assert one.returncode == 0, (desc["jq_recipes"][0], one.stderr)
    assert two.returncode == 0, (desc["jq_recipes"][1], two.stderr)
    assert str(path) in desc["jq_recipes"][0]["command"]
    assert one.stdout.splitlines() == [f"{r['line']}\t{r['text']}" for r in records]
    stretch = json_lines(two.stdout)
    assert stretch and stretch == records[stretch[0]["line"] - 1 : stretch[-1]["line"]], two.stdout


# --------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="module")
def tag() -> Any:
    """A tag in the environment of every process this module starts; at the end, any
    process still carrying it (a leaked upstream child, say) is killed by pid."""
    value = uuid.uuid4().hex
    yield value
    for pid in tagged_pids(TAG_VAR, value):
        kill_quietly(pid)


def env_for(tag: str, out_dir: Path | None = None, threshold: int | None = THRESHOLD) -> dict[str, str]:
    extra = {TAG_VAR: tag}
    if out_dir is not None:
        extra.update(offload_env(out_dir, threshold=threshold))
    return full_env(extra)


@pytest.fixture(scope="module")
def stdio_transcripts(everything, tag, tmp_path_factory) -> tuple[dict, dict, Path]:
    """a. (direct, proxied, offload dir): the same TS-client session straight to
    server-everything over stdio and through `lro proxy` (threshold 50)."""
    out = tmp_path_factory.mktemp("everything-stdio")
    calls = [*SMALL_CALLS, ("echo", {"message": BIG_MESSAGE})]
    direct = run_client(["--stdio", "--", *everything_stdio()], call_ops(calls), env_for(tag))
    proxied = run_client(
        ["--stdio", "--", str(LRO), "proxy", "--", *everything_stdio()], call_ops([*calls, ("get-env", {})]), env_for(tag, out)
    )
    return direct, proxied, out


@pytest.fixture(scope="module")
def http_everything(everything, tag, tmp_path_factory) -> Any:
    """server-everything in streamable-HTTP mode on 127.0.0.1 (a free port it picks)."""
    log = tmp_path_factory.mktemp("everything-http") / "server.err"
    env = env_for(tag) | {"PORT": "0", "HOST": "127.0.0.1"}
    daemon = Background(
        [shutil.which("node") or "node", "--import", str(LOOPBACK_JS), str(EVERYTHING_JS), "streamableHttp"],
        env,
        log,
        cwd=TS,
        new_session=True,
    )
    try:
        url = daemon.wait_line(r"listen-loopback: listening on (http://127\.0\.0\.1:\d+/mcp)", READY_S).group(1)
        yield url
    finally:
        daemon.stop()


# --------------------------------------------------------------------------
# comparisons


def tool_diffs(direct_tools: list[dict], proxied_tools: list[dict]) -> dict[str, dict]:
    """Per tool, the top-level fields whose values differ (outputSchema compared
    against its documented relaxed form): {tool: {field: (direct, proxied)}}."""
    by_name = {t["name"]: t for t in proxied_tools}
    diffs: dict[str, dict] = {}
    for tool in direct_tools:
        mine = copy.deepcopy(by_name[tool["name"]])
        want = copy.deepcopy(tool)
        if "outputSchema" in want:
            want["outputSchema"] = relaxed(want["outputSchema"])
        for key in sorted(set(want) | set(mine)):
            if want.get(key) != mine.get(key):
                diffs.setdefault(tool["name"], {})[key] = (want.get(key), mine.get(key))
    return diffs


def check_tools_list(direct: dict, proxied: dict) -> None:
    names = [t["name"] for t in proxied["tools"]]
    assert names.count("lro_extract") == 1, names
    assert sorted(names) == sorted([t["name"] for t in direct["tools"]] + ["lro_extract"])
    extract = next(t for t in proxied["tools"] if t["name"] == "lro_extract")
    assert "file_path" in extract["inputSchema"]["properties"]
    # Everything but the known loss of `execution` (BUG_TOOL_EXECUTION) is the same.
    rest = {name: {k: v for k, v in d.items() if k != "execution"} for name, d in tool_diffs(direct["tools"], proxied["tools"]).items()}
    assert not {name: d for name, d in rest.items() if d}, rest


# --------------------------------------------------------------------------
# a. TS SDK client over stdio


def test_stdio_initialize_matches_direct(stdio_transcripts):
    direct, proxied, _ = stdio_transcripts
    assert direct["server"]["info"]["name"] == "mcp-servers/everything"
    for key in ("info", "instructions", "protocolVersion"):
        assert proxied["server"][key] == direct["server"][key], key


@pytest.mark.xfail(strict=True, reason=BUG_TASKS_CAPABILITY)
def test_stdio_capabilities_match_direct(stdio_transcripts):
    direct, proxied, _ = stdio_transcripts
    assert "tasks" in direct["server"]["capabilities"]
    assert proxied["server"]["capabilities"] == direct["server"]["capabilities"]


def test_stdio_tools_are_direct_plus_lro_extract(stdio_transcripts):
    direct, proxied, _ = stdio_transcripts
    # The client declared sampling and elicitation: the conditional tools are there too.
    assert {"echo", "trigger-sampling-request", "trigger-elicitation-request"} <= {t["name"] for t in direct["tools"]}
    check_tools_list(direct, proxied)


@pytest.mark.xfail(strict=True, reason=BUG_TOOL_EXECUTION)
def test_stdio_tools_equal_direct_field_by_field(stdio_transcripts):
    direct, proxied, _ = stdio_transcripts
    assert tool_diffs(direct["tools"], proxied["tools"]) == {}


@pytest.mark.parametrize("name", [name for name, _ in SMALL_CALLS])
def test_stdio_small_results_equal_direct(stdio_transcripts, name):
    direct, proxied, out = stdio_transcripts
    want, got = op(direct, name), op(proxied, name)
    assert got["wire"] == want["wire"]
    assert got["result"] == want["result"]
    if name == "echo":
        assert want["wire"] == {"content": [{"type": "text", "text": "Echo: hello through the proxy"}]}


def test_stdio_big_echo_offloaded_and_jq_reads_it(stdio_transcripts):
    direct, proxied, out = stdio_transcripts
    want = op(direct, "echo", 1)["wire"]
    assert want["content"][0]["text"] == f"Echo: {BIG_MESSAGE}"
    got = op(proxied, "echo", 1)["wire"]
    desc = descriptor_of(got)
    check_big_echo(desc, out, want["content"][0]["text"])
    # The descriptor comes once, as text: echo declares no output schema. No
    # resource link (a client would follow it with resources/read, which the
    # upstream cannot answer).
    assert "structuredContent" not in got, got
    assert [c["type"] for c in got["content"]] == ["text"], got["content"]


def test_stdio_large_real_result_all_recipes_run(stdio_transcripts):
    """get-env (the server's whole environment, ~2.7 kB): offloaded, and every one of
    the ten recipes runs with the real jq."""
    _, proxied, out = stdio_transcripts
    desc = descriptor_of(op(proxied, "get-env")["wire"])
    path, header, records = offload_file(desc, out)
    assert header["operation"] == "get_env"
    env_text = "\n".join(r["text"] for r in records)
    assert json.loads(env_text)[TAG_VAR], "the records are the upstream's answer, line by line"
    for i, recipe in enumerate(desc["jq_recipes"], 1):
        proc = run_recipe(recipe["command"])
        assert proc.returncode == 0, (i, recipe, proc.stderr)
        assert proc.stdout.strip(), (i, recipe)
        # `jq [-s] -r|-c …`: a raw recipe prints text (TSV), the others JSON.
        if "-r" not in shlex.split(recipe["command"].split("| jq", 1)[1])[:2]:
            json_lines(proc.stdout)


# --------------------------------------------------------------------------
# b. streamable HTTP: the proxy in front of an HTTP upstream, and the proxy's HTTP face


def test_http_upstream_through_proxy(http_everything, tag, tmp_path):
    out = tmp_path / "offload"
    out.mkdir()
    calls = [SMALL_CALLS[0], ("echo", {"message": BIG_MESSAGE})]
    direct = run_client(["--url", http_everything], call_ops(calls), env_for(tag))
    proxied = run_client(["--stdio", "--", str(LRO), "proxy", "--url", http_everything], call_ops(calls), env_for(tag, out))
    for key in ("info", "instructions", "protocolVersion"):
        assert proxied["server"][key] == direct["server"][key], key
    check_tools_list(direct, proxied)
    assert op(proxied, "echo")["wire"] == op(direct, "echo")["wire"] == {"content": [{"type": "text", "text": "Echo: hello through the proxy"}]}
    check_big_echo(descriptor_of(op(proxied, "echo", 1)["wire"]), out, op(direct, "echo", 1)["wire"]["content"][0]["text"])


def test_proxy_http_face(everything, stdio_transcripts, tag, tmp_path):
    """`lro proxy --http 127.0.0.1:0 -- node server-everything stdio`, driven by the TS
    client over streamable HTTP: tools, echo, offload, sampling and progress (SSE)."""
    direct, _, _ = stdio_transcripts
    out = tmp_path / "offload"
    out.mkdir()
    proxy = Background(
        [str(LRO), "proxy", "--http", "127.0.0.1:0", "--", *everything_stdio()],
        env_for(tag, out),
        tmp_path / "proxy.err",
        new_session=True,
    )
    try:
        url = proxy.wait_line(r"lro proxy listening on (http://127\.0\.0\.1:\d+/mcp)", READY_S).group(1)
        calls = [
            SMALL_CALLS[0],
            ("echo", {"message": BIG_MESSAGE}),
            ("trigger-sampling-request", {"prompt": "over http", "maxTokens": 42}),
            ("trigger-long-running-operation", {"duration": 0.3, "steps": 3}),
        ]
        got = run_client(["--url", url], call_ops(calls, progress=("trigger-long-running-operation",)), env_for(tag))
        assert proxy.proc.poll() is None, f"the proxy exited:\n{proxy.stderr()}"
    finally:
        proxy.stop()
    for key in ("info", "instructions", "protocolVersion"):
        assert got["server"][key] == direct["server"][key], key
    check_tools_list(direct, got)
    assert op(got, "echo")["wire"] == op(direct, "echo")["wire"]
    check_big_echo(descriptor_of(op(got, "echo", 1)["wire"]), out, op(direct, "echo", 1)["wire"]["content"][0]["text"])
    # Sampling: the upstream's request reached this client, its answer went back.
    assert [s["messages"][0]["content"]["text"] for s in got["sampling"]] == ["Resource trigger-sampling-request context: over http"]
    assert got["sampling"][0]["maxTokens"] == 42
    sampled = op(got, "trigger-sampling-request")["wire"]["content"][0]["text"]
    assert sampled.startswith("LLM sampling result:")
    assert json.loads(sampled.split("\n", 1)[1])["content"]["text"] == "hello from the TS client"
    # Progress on the client's own token, in order, then the result. Only the first two
    # of three are required: the TS SDK itself drops a notification that arrives in the
    # same read as the result.
    long_op = op(got, "trigger-long-running-operation")
    wire = [(p["progress"], p["total"]) for p in long_op["progressWire"]]
    assert wire in ([(1, 3), (2, 3)], [(1, 3), (2, 3), (3, 3)]), wire
    assert {p["progressToken"] for p in long_op["progressWire"]} == {long_op["progressToken"]}
    assert [(p["progress"], p["total"]) for p in long_op["progress"]] == wire[: len(long_op["progress"])]
    assert len(long_op["progress"]) >= 1
    assert long_op["wire"]["content"][0]["text"] == "Long running operation completed. Duration: 0.3 seconds, Steps: 3."


# --------------------------------------------------------------------------
# c. Python SDK client through the proxy: server-to-client requests and notifications


def proxied_session(tag: str, tmp_path: Path, **callbacks: Any):
    out = tmp_path / "offload"
    out.mkdir(exist_ok=True)
    return connect(proxy_argv(upstream=everything_stdio()), env_for(tag, out, threshold=None), tmp_path / "proxy.err", **callbacks)


@pytest.mark.anyio
async def test_py_sampling_and_elicitation(everything, tag, tmp_path):
    sampled: list[types.CreateMessageRequestParams] = []
    elicited: list[Any] = []

    async def sampling(ctx, params):
        sampled.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="hello from python"), model="py-model"
        )

    async def elicitation(ctx, params):
        elicited.append(params)
        return types.ElicitResult(action="accept", content={"name": "Ada", "check": True})

    async with proxied_session(tag, tmp_path, sampling_callback=sampling, elicitation_callback=elicitation) as (_, session):
        with anyio.fail_after(PROMPT_S):
            tools = {t.name for t in (await session.list_tools()).tools}
            assert {"trigger-sampling-request", "trigger-elicitation-request", "lro_extract"} <= tools
            sample = await session.call_tool("trigger-sampling-request", {"prompt": "ping?", "maxTokens": 42})
            elicit = await session.call_tool("trigger-elicitation-request", {})
    assert len(sampled) == 1
    assert sampled[0].messages[0].content.text == "Resource trigger-sampling-request context: ping?"
    assert sampled[0].max_tokens == 42
    assert sampled[0].system_prompt == "You are a helpful test server."
    body = json.loads(texts(sample)[0].split("\n", 1)[1])
    assert body["model"] == "py-model" and body["content"]["text"] == "hello from python"
    assert len(elicited) == 1
    assert elicited[0].message == "Please provide inputs for the following fields:"
    assert elicited[0].requested_schema["required"] == ["name"]
    assert {"name", "check", "email", "integer", "titledMultipleSelectEnum"} <= set(elicited[0].requested_schema["properties"])
    assert texts(elicit)[:2] == ["✅ User provided the requested information!", "User inputs:\n- Name: Ada\n- Agreed to terms: true"]


@pytest.mark.anyio
async def test_py_progress(everything, tag, tmp_path):
    events: list[tuple] = []

    async def on_progress(progress, total, message):
        events.append((progress, total, message))

    async with proxied_session(tag, tmp_path) as (proc, session):
        with anyio.fail_after(PROMPT_S):
            result = await session.call_tool(
                "trigger-long-running-operation", {"duration": 0.4, "steps": 4}, progress_callback=on_progress
            )
        assert texts(result) == ["Long running operation completed. Duration: 0.4 seconds, Steps: 4."]
        await await_until(lambda: len(events) >= 4, what="4 progress notifications")
        call = next(m for m in proc.sent if m.get("method") == "tools/call")
        token = call["params"]["_meta"]["progressToken"]
        tokens = {m["params"]["progressToken"] for m in proc.received if m.get("method") == "notifications/progress"}
    assert [(p, t) for p, t, _ in events] == [(1, 4), (2, 4), (3, 4), (4, 4)], events
    assert tokens == {token}


RACE_CALLS = 60


@pytest.mark.anyio
async def test_py_every_progress_notification_precedes_the_result(everything, tag, tmp_path):
    """The upstream sends each call's progress notification before its result; through
    the proxy each one must arrive, before the result, for every call. (rmcp handles each
    notification in a task of its own; the proxy holds an answer back until its
    request's progress has been sent.)"""
    async with proxied_session(tag, tmp_path) as (proc, session):

        async def ignore(progress, total, message):
            pass

        with anyio.fail_after(PROMPT_S * 3):
            for _ in range(RACE_CALLS):
                await session.call_tool("trigger-long-running-operation", {"duration": 0, "steps": 1}, progress_callback=ignore)
    calls = [m for m in proc.sent if m.get("method") == "tools/call"]
    assert len(calls) == RACE_CALLS
    lost = []
    for call in calls:
        token = call["params"]["_meta"]["progressToken"]
        answer = next(i for i, m in enumerate(proc.received) if m.get("id") == call["id"] and "result" in m)
        before = [m for m in proc.received[:answer] if m.get("method") == "notifications/progress" and m["params"]["progressToken"] == token]
        if len(before) != 1:
            lost.append(call["id"])
    assert not lost, f"{len(lost)} of {RACE_CALLS} calls lost their progress notification (request ids {lost})"


@pytest.mark.anyio
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_py_logging_and_roots(everything, tag, tmp_path):
    """Logging: the roots sync's log line (the server asks roots/list of the client, through
    the proxy, then logs) and simulated logging after logging/setLevel."""
    logs: list[types.LoggingMessageNotificationParams] = []
    roots_asked = anyio.Event()

    async def on_log(params):
        logs.append(params)

    async def list_roots(ctx):
        roots_asked.set()
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/lro-interop", name="interop")])

    async with proxied_session(tag, tmp_path, logging_callback=on_log, list_roots_callback=list_roots) as (_, session):
        with anyio.fail_after(PROMPT_S):
            await roots_asked.wait()
        await await_until(lambda: any("Roots updated" in str(p.data) for p in logs), what="the roots log line")
        roots_log = next(p for p in logs if "Roots updated" in str(p.data))
        assert (roots_log.level, roots_log.logger, roots_log.data) == ("info", "everything-server", "Roots updated: 1 root(s) received from client")
        with anyio.fail_after(PROMPT_S):
            listed = await session.call_tool("get-roots-list", {})
            assert "file:///tmp/lro-interop" in "\n".join(texts(listed))
            await session.set_logging_level("debug")
            before = len(logs)
            started = await session.call_tool("toggle-simulated-logging", {})
            assert texts(started)[0].startswith("Started simulated, random-leveled logging")
        # The first simulated message is sent at once; any of the eight levels.
        await await_until(lambda: len(logs) > before, what="a simulated log message")
        simulated = logs[before]
        assert simulated.level in ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
        assert re.fullmatch(r"\w+[- ]level[- ]message", str(simulated.data), re.IGNORECASE), simulated.data
        with anyio.fail_after(PROMPT_S):
            stopped = await session.call_tool("toggle-simulated-logging", {})
        assert texts(stopped)[0].startswith("Stopped simulated logging")


# --------------------------------------------------------------------------
# c/d. the same Python sessions straight to the server and through the proxy


STATIC_DOC = "demo://resource/static/document/"
DYNAMIC_URIS = ["demo://resource/dynamic/text/1", "demo://resource/dynamic/blob/2"]
PROMPT_GETS = [
    ("simple-prompt", None),
    ("args-prompt", {"city": "Paris", "state": "Texas"}),
    ("completable-prompt", {"department": "Engineering", "name": "Alice"}),
    ("resource-prompt", {"resourceType": "Text", "resourceId": "3"}),
]
# "created at <toLocaleTimeString()>": the one moving part of the dynamic resources.
CREATED_AT = re.compile(r"created at [^\"\\]+$")


def _answer(proc, method: str, match: dict | None = None) -> dict:
    """The raw JSON-RPC answer (result or error) to the request with this method whose
    params contain `match`."""
    ids = [
        m["id"]
        for m in proc.sent
        if m.get("method") == method and "id" in m and all((m.get("params") or {}).get(k) == v for k, v in (match or {}).items())
    ]
    assert len(ids) == 1, f"{len(ids)} {method} requests matching {match}"
    answers = [m for m in proc.received if m.get("id") == ids[0] and ("result" in m or "error" in m)]
    assert len(answers) == 1, answers
    answer = answers[0]
    return answer["result"] if "result" in answer else {"error": answer["error"]}


def _server_request(proc, method: str) -> dict:
    """The params of the one server-to-client request with this method."""
    found = [m["params"] for m in proc.received if m.get("method") == method and "id" in m]
    assert len(found) == 1, f"{len(found)} {method} requests"
    return found[0]


def _steady(value: Any) -> Any:
    """`value` with the timestamps of the dynamic resources replaced (blobs decoded)."""
    if isinstance(value, dict):
        out = {k: _steady(v) for k, v in value.items()}
        if isinstance(value.get("blob"), str):
            out["blob"] = CREATED_AT.sub("created at T", base64.b64decode(value["blob"]).decode())
        return out
    if isinstance(value, list):
        return [_steady(v) for v in value]
    if isinstance(value, str):
        return CREATED_AT.sub("created at T", value)
    return value


async def _py_transcript(argv: list[str], env: dict[str, str], err: Path) -> dict:
    async def sampling(ctx, params):
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="s"), model="m")

    async def elicitation(ctx, params):
        return types.ElicitResult(action="decline")

    async with connect(argv, env, err, sampling_callback=sampling, elicitation_callback=elicitation) as (proc, session):
        with anyio.fail_after(PROMPT_S * 3):
            # Every page of each list, following nextCursor.
            pages: dict[str, int] = {}
            resources: list[types.Resource] = []
            for method, call in (
                ("prompts/list", session.list_prompts),
                ("resources/list", session.list_resources),
                ("resources/templates/list", session.list_resource_templates),
            ):
                cursor = None
                while True:
                    page = await call(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
                    pages[method] = pages.get(method, 0) + 1
                    if method == "resources/list":
                        resources += page.resources
                    cursor = page.next_cursor
                    if not cursor or pages[method] >= 50:
                        break
            for name, args in PROMPT_GETS:
                await session.get_prompt(name, args)
            uris = [r.uri for r in resources if r.uri.startswith(STATIC_DOC)] + DYNAMIC_URIS
            for uri in uris:
                await session.read_resource(uri)
            await session.complete(types.PromptReference(type="ref/prompt", name="completable-prompt"), {"name": "department", "value": "E"})
            await session.call_tool("trigger-sampling-request", {"prompt": "fidelity", "maxTokens": 7})
            await session.call_tool("trigger-elicitation-request", {})
        raw_lists = {
            method: [m for m in proc.sent if m.get("method") == method and "id" in m] for method in ("prompts/list", "resources/list", "resources/templates/list")
        }
        answers = {
            "initialize": _answer(proc, "initialize"),
            "prompts/list": [_answer_by_id(proc, m["id"]) for m in raw_lists["prompts/list"]],
            "resources/list": [_answer_by_id(proc, m["id"]) for m in raw_lists["resources/list"]],
            "resources/templates/list": [_answer_by_id(proc, m["id"]) for m in raw_lists["resources/templates/list"]],
            "prompts/get": {name: _steady(_answer(proc, "prompts/get", {"name": name})) for name, _ in PROMPT_GETS},
            "resources/read": {uri: _steady(_answer(proc, "resources/read", {"uri": uri})) for uri in uris},
            "completion/complete": _answer(proc, "completion/complete"),
            "sampling/createMessage": _server_request(proc, "sampling/createMessage"),
            "elicitation/create": _server_request(proc, "elicitation/create"),
        }
        return {"answers": answers, "pages": pages, "uris": uris}


def _answer_by_id(proc, rid: Any) -> dict:
    answers = [m for m in proc.received if m.get("id") == rid and ("result" in m or "error" in m)]
    assert len(answers) == 1, answers
    return answers[0].get("result", {"error": answers[0].get("error")})


@pytest.fixture(scope="module")
def py_transcripts(everything, tag, tmp_path_factory) -> tuple[dict, dict]:
    """(direct, proxied) Python SDK transcripts over stdio."""
    tmp = tmp_path_factory.mktemp("everything-py")
    out = tmp / "offload"
    out.mkdir()
    direct = anyio.run(_py_transcript, everything_stdio(), env_for(tag), tmp / "direct.err")
    proxied = anyio.run(_py_transcript, proxy_argv(upstream=everything_stdio()), env_for(tag, out, threshold=None), tmp / "proxy.err")
    return direct, proxied


def test_py_lists_equal_direct(py_transcripts):
    """prompts/list, resources/list, resources/templates/list: every page, equal JSON."""
    direct, proxied = py_transcripts
    assert proxied["pages"] == direct["pages"]
    for method in ("prompts/list", "resources/list", "resources/templates/list"):
        assert proxied["answers"][method] == direct["answers"][method], method
    want = direct["answers"]
    assert [p["name"] for page in want["prompts/list"] for p in page["prompts"]] == [
        "simple-prompt",
        "args-prompt",
        "completable-prompt",
        "resource-prompt",
    ]
    assert len([r for page in want["resources/list"] for r in page["resources"]]) >= 5
    assert {t["uriTemplate"] for page in want["resources/templates/list"] for t in page["resourceTemplates"]} == {
        "demo://resource/dynamic/text/{resourceId}",
        "demo://resource/dynamic/blob/{resourceId}",
    }


@pytest.mark.parametrize("name", [name for name, _ in PROMPT_GETS])
def test_py_prompt_get_equal_direct(py_transcripts, name):
    direct, proxied = py_transcripts
    want = direct["answers"]["prompts/get"][name]
    assert "messages" in want, want
    assert proxied["answers"]["prompts/get"][name] == want


def test_py_resource_reads_equal_direct(py_transcripts):
    direct, proxied = py_transcripts
    assert proxied["uris"] == direct["uris"]
    assert len(direct["uris"]) >= 4
    for uri in direct["uris"]:
        want = direct["answers"]["resources/read"][uri]
        assert want.get("contents") and want["contents"][0]["uri"] == uri, want
        assert proxied["answers"]["resources/read"][uri] == want, uri


def test_py_completion_equal_direct(py_transcripts):
    direct, proxied = py_transcripts
    assert direct["answers"]["completion/complete"]["completion"]["values"] == ["Engineering"]
    assert proxied["answers"]["completion/complete"] == direct["answers"]["completion/complete"]


def test_py_initialize_equal_direct_but_capabilities(py_transcripts):
    direct, proxied = py_transcripts
    want, got = direct["answers"]["initialize"], proxied["answers"]["initialize"]
    strip = lambda r: {k: v for k, v in r.items() if k != "capabilities"}  # noqa: E731
    assert strip(got) == strip(want)
    caps = {k: v for k, v in want["capabilities"].items() if k != "tasks"}
    assert got["capabilities"] == caps


@pytest.mark.xfail(strict=True, reason=BUG_TASKS_CAPABILITY)
def test_py_initialize_capabilities_equal_direct(py_transcripts):
    direct, proxied = py_transcripts
    assert proxied["answers"]["initialize"]["capabilities"] == direct["answers"]["initialize"]["capabilities"]


@pytest.mark.xfail(strict=True, reason=BUG_SERVER_REQUESTS)
@pytest.mark.parametrize("method", ["sampling/createMessage", "elicitation/create"])
def test_py_server_requests_equal_direct(py_transcripts, method):
    """The upstream's request as the client receives it, through the proxy or not
    (JSON text compared: key order is what a form shows its fields in)."""
    direct, proxied = py_transcripts
    want, got = direct["answers"][method], proxied["answers"][method]
    assert json.dumps(got) == json.dumps(want)

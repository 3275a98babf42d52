"""End to end: the real memory-server, a real Prometheus, every dashboard query.

1. Starts the live stack (live_stack.launch, proxy=True, store=True):
   `memory-server --http … --metrics …` (TTL 1 s, cleanup every 2 s, offload
   directory in a temp dir), `lro proxy --http … --metrics … -- memory-server
   --no-lro`, a second memory-server whose results go to a real SeaweedFS
   (`store = "s3://…"`), the node exporter serving a real `lro audit
   --textfile` report, and a real Prometheus scraping them every second with
   the alert rules loaded.
2. Drives a workload through the official MCP Python SDK over streamable HTTP
   that exercises every outcome: inline results, offloaded results, an
   lro_extract recipe (if the server lists the tool), a real write failure
   (the offload directory replaced by a regular file) that must fall back to a
   truncated result with a warning, TTL expiry by the cleanup task, and the
   context_offload tool (compaction and compression of an agent history). Then,
   through the proxy: tool calls, an unknown tool (a JSON-RPC error from the
   upstream), a session ended normally (a shutdown exit), a session whose
   child is killed (a failed exit), and a new session (a restart). Through
   the store replica: offloads and reads by handle.
3. Evaluates every PromQL expression of every panel of both dashboards
   through /api/v1/query and requires a non-empty result (the panels on the
   metrics only `lro proxy` exports against the proxy's target, the store's
   against the store replica's, the others against the server's), checks that every metric any panel or alert rule
   names is really exported, that the template-variable queries resolve, that
   the Level 3 conformance panels read PASS, that the upstream metrics count
   what the proxy workload did, and that the alert rules load,
   LroOffloadWriteFailures fires and the upstream alerts stay quiet.

Needs what live_stack.py needs (the binaries, `prometheus`,
`prometheus-node-exporter` and `weed` on PATH, pip packages pytest, mcp, pyyaml). Uses
only 127.0.0.1. Takes about a minute once the binaries are built.

Metric names and label values come from the catalogue, deploy/metrics.json
(lrolib.M, lrolib.L), never typed here.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest

from live_stack import (
    AUDIT_JOB, JOB, PROXY_JOB, STARTUP_TIMEOUT_S, Background, Prometheus, PromError, call, is_error, launch, mcp_session,
    offload_path, scraped, text_of, wait_until,
)
from lrolib import (
    CATALOGUE, COUNT, DASHBOARDS, EXTRACT_TOOL, REPO, L, M, content_panels, load_dashboard, load_metrics, load_rules,
    panel_exprs, resolve_series, scan, split_label_values, variable_query,
)
from testkit.procs import children

# Substituted for $__rate_interval: wide enough to cover the whole workload,
# so rates, ratios and quantiles have real values, not just series.
RATE_INTERVAL = "5m"
EXPIRY_TIMEOUT_S = 90
SETTLE_TIMEOUT_S = 90

METRICS = load_metrics()
MEMORY_TOOLS = {"list_memories", "recall_memories", "search_memories", "inject_context"}
# The demo server's context-offload tool (started with --context-store-root).
CONTEXT_TOOL = "context_offload"
# The metrics about EXTRACT_TOOL: not checked when the server does not list the tool.
EXTRACT_METRICS = frozenset({M.EXTRACT_REQUESTS_TOTAL, M.EXTRACT_DURATION_SECONDS})
# The metrics only `lro proxy` exports: evaluated against the proxy's target.
PROXY_METRICS = frozenset({
    M.UPSTREAM_UP,
    M.UPSTREAM_SESSIONS,
    M.UPSTREAM_EXITS_TOTAL,
    M.UPSTREAM_RESTARTS_TOTAL,
    M.UPSTREAM_ERRORS_TOTAL,
    M.UPSTREAM_REQUEST_DURATION_SECONDS,
})
# The `lro audit --textfile` metrics (job lro-audit).
AUDIT_METRICS = frozenset({M.AUDIT_LEVEL, M.AUDIT_CHECK})
# Exported only by a server with a shared store: the stack's store replica.
STORE_METRICS = frozenset({M.STORE_OPERATION_DURATION_SECONDS, M.STORE_BYTES_TOTAL, M.STORE_ERRORS_TOTAL})
# A tool the memory server does not have: calling it through the proxy gets a
# JSON-RPC error from the upstream.
UNKNOWN_TOOL = "no_such_tool"
OUTCOME = L.ToolOutcome
EXTRACT = L.ExtractOutcome
MODE = L.ExtractMode
EXIT = L.UpstreamExit
METHOD = L.UpstreamMethod
CODE = L.UpstreamErrorCode


@dataclass
class Observed:
    tools: set[str] = field(default_factory=set)
    inline: int = 0
    offloaded: int = 0
    truncated: int = 0
    extracted: int = 0
    offload_paths: list[str] = field(default_factory=list)
    fallback_text: str = ""


def agent_history(seed: int) -> list[dict]:
    """An agent loop with large tool results and a long exchange before the last answer."""
    msgs = [{"role": "system", "content": "You are a research assistant."},
            {"role": "user", "content": f"Survey context management, round {seed}."}]
    for i in range(4):
        call_id = f"call_{seed}_{i}"
        msgs.append({"role": "assistant", "content": f"Step {i}.", "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "web_search", "arguments": "{}"}}]})
        msgs.append({"role": "tool", "tool_call_id": call_id, "content": f"result {seed}.{i} " + "word " * 2500})
    msgs.append({"role": "assistant", "content": "Three techniques stand out."})
    return msgs


async def workload(url: str, offload_dir: Path, prom: Prometheus) -> Observed:
    seen = Observed()
    async with mcp_session(url) as session:
        listed = await session.list_tools()
        seen.tools = {t.name for t in listed.tools}
        missing = MEMORY_TOOLS - seen.tools
        assert not missing, f"server does not list {sorted(missing)}; it lists {sorted(seen.tools)}"

        # Inline: small results stay under the threshold. (list_memories is
        # judged on its whole filtered set, pagination notwithstanding: LRO
        # takes precedence over pagination; so the small inline results come
        # from the ranked tools with a small limit.)
        for name, args in (
            ("recall_memories", {"query": "cache", "limit": 3, "detail": "light"}),
            ("search_memories", {"query": "a", "limit": 3, "detail": "light"}),
            ("recall_memories", {"query": "deployment", "limit": 2, "detail": "medium"}),
        ):
            r = await call(session, name, args)
            assert offload_path(r) is None, f"{name} {args} should be inline, got: {text_of(r)[:300]}"
            seen.inline += 1
        await call(session, "inject_context", {"query": "deployment", "limit": 3, "token_budget": 400})
        await call(session, "list_memories", {"limit": 3, "detail": "light"})

        # Offloaded: the whole corpus at full detail is far above 1600 tokens.
        for _ in range(3):
            r = await call(session, "list_memories", {"detail": "full"})
            path = offload_path(r)
            assert path, f"list_memories full should be offloaded, got: {text_of(r)[:300]}"
            assert Path(path).resolve().parent == offload_dir.resolve(), path
            seen.offloaded += 1
            seen.offload_paths.append(path)
        await call(session, "recall_memories", {"query": "memory", "limit": 100, "detail": "full"})
        await call(session, "search_memories", {"query": "memory", "limit": 100, "detail": "full"})

        # lro_extract with a recipe, twice: a series is born at its first
        # value, so rate() needs a second increment after Prometheus has
        # scraped the first. The TTL is 1 s, so a file may expire between the
        # offload and the extraction: retry with a fresh offload.
        if EXTRACT_TOOL in seen.tools:
            for round_ in range(2):
                last = ""
                for _ in range(5):
                    path = offload_path(await call(session, "list_memories", {"detail": "full"}))
                    assert path
                    # Arguments: the offload file and recipe 1 of the descriptor's recipe library.
                    r = await session.call_tool(EXTRACT_TOOL, dict(file_path=path, recipe=1, limit=5))
                    if not is_error(r):
                        seen.extracted += 1
                        break
                    last = text_of(r)[:300]
                assert seen.extracted == round_ + 1, f"{EXTRACT_TOOL} recipe 1 never succeeded: {last}"
                if round_ == 0:
                    recipe_ok = f'job="{JOB}", {MODE.eq(MODE.Recipe)}, {EXTRACT.eq(EXTRACT.Ok)}'
                    await scraped(prom, f"sum({M.EXTRACT_REQUESTS_TOTAL}{{{recipe_ok}}}) >= 1")

        # Context offload of an agent history on the demo server: compaction,
        # then compression (summariser calls), twice, with a scrape between
        # for rates and latency quantiles.
        assert CONTEXT_TOOL in seen.tools, f"the demo server does not list {CONTEXT_TOOL}"
        store = offload_dir.parent / "context-store" / "chat"
        for round_ in range(2):
            for mode, extra in (("compact", {}), ("compress", {"group_token_threshold": 2000})):
                r = await call(session, CONTEXT_TOOL, dict(messages=agent_history(round_), context_manage_mode=mode,
                                                           max_total_tokens=500, store_dir=str(store), **extra))
                reply = json.loads(text_of(r))
                assert reply["success"] is True, reply
            if round_ == 0:
                await scraped(prom, f'sum({M.CONTEXT_SUMMARISER_CALLS_TOTAL}{{job="{JOB}"}}) >= 1')

        # A real write failure: the offload directory becomes a regular file.
        # The call must still succeed, truncated, with a warning.
        parked = offload_dir.with_name(offload_dir.name + ".parked")
        offload_dir.rename(parked)
        try:
            offload_dir.write_text("not a directory\n")
            r = await call(session, "list_memories", {"detail": "full"})
            assert offload_path(r) is None, "the write cannot have succeeded"
            seen.fallback_text = text_of(r)
            assert "warning" in seen.fallback_text.lower(), seen.fallback_text[:500]
            assert "truncat" in seen.fallback_text.lower(), seen.fallback_text[:500]
            seen.truncated += 1
        finally:
            if offload_dir.is_file() or offload_dir.is_symlink():
                offload_dir.unlink()
            elif offload_dir.is_dir():  # something recreated it: keep both sets of files
                for f in parked.iterdir():
                    f.rename(offload_dir / f.name)
                parked.rmdir()
            if parked.exists():
                parked.rename(offload_dir)

        # Offloading works again once the directory is back.
        r = await call(session, "list_memories", {"detail": "full"})
        assert offload_path(r), "offloading should recover once the directory is restored"
        seen.offloaded += 1
    return seen


async def rpc_error(request) -> int:
    """The JSON-RPC error code the awaited request failed with."""
    try:  # mcp 2.x
        from mcp.shared.exceptions import MCPError as RpcError
    except ImportError:  # 1.x
        from mcp.shared.exceptions import McpError as RpcError
    try:
        result = await request
    except RpcError as e:
        return e.error.code
    raise AssertionError(f"expected a JSON-RPC error, got {result!r}")


@dataclass
class ProxyObserved:
    # JSON-RPC error codes of the unknown-tool calls, as the client saw them.
    unknown_tool_codes: list[int] = field(default_factory=list)
    # The code of the call made after the child was killed.
    after_kill_code: int | None = None
    killed: list[int] = field(default_factory=list)  # pids, for the failure messages


def proxy_series(metric: str, *matchers: str) -> str:
    """metric{job="lro-proxy", matchers...}"""
    return metric + "{" + ", ".join((f'job="{PROXY_JOB}"', *matchers)) + "}"


def exits(reason: str) -> str:
    """Upstream sessions of the test proxy that ended with `reason`."""
    return f"sum({proxy_series(M.UPSTREAM_EXITS_TOTAL, EXIT.eq(reason))})"


async def proxy_workload(url: str, proxy: Background, prom: Prometheus) -> ProxyObserved:
    """Through `lro proxy` (stdio child: memory-server --no-lro): calls, upstream errors, a
    normal session end, a child killed under a session, a new session."""
    seen = ProxyObserved()

    # Session 1: tool calls (the proxy's own LRO layer offloads the full list),
    # an unknown tool twice, then the session ends normally: a shutdown exit.
    async with mcp_session(url) as session:
        listed = await session.list_tools()
        missing = MEMORY_TOOLS - {t.name for t in listed.tools}
        assert not missing, f"the proxy does not list {sorted(missing)}"
        r = await call(session, "recall_memories", {"query": "cache", "limit": 3, "detail": "light"})
        assert offload_path(r) is None, text_of(r)[:300]
        r = await call(session, "list_memories", {"detail": "full"})
        assert offload_path(r), f"the proxy should offload list_memories full: {text_of(r)[:300]}"
        seen.unknown_tool_codes.append(await rpc_error(session.call_tool(UNKNOWN_TOOL, {})))
        # Series are born at their first value: rate() and the latency
        # quantiles need increments after Prometheus has scraped the first.
        await scraped(prom, f"sum({proxy_series(M.UPSTREAM_ERRORS_TOTAL)}) >= 1")
        seen.unknown_tool_codes.append(await rpc_error(session.call_tool(UNKNOWN_TOOL, {})))
        await call(session, "recall_memories", {"query": "deployment", "limit": 2, "detail": "medium"})
    await scraped(prom, f"{exits(EXIT.Shutdown)} >= 1")

    # Session 2: its child is killed: a failed exit; the call after it fails.
    async with mcp_session(url) as session:
        spawned = children(proxy.pid)  # spawned for the session's initialize
        assert len(spawned) == 1, f"one child per session, found {spawned}"
        # The child is the upstream's outer watchdog; the inner one under it
        # started the upstream.
        inner = children(spawned[0])
        assert len(inner) == 1, f"one inner watchdog under the outer one, found {inner}"
        upstream = children(inner[0])
        assert len(upstream) == 1, f"one upstream under the watchdogs, found {upstream}"
        os.kill(upstream[0], signal.SIGKILL)
        seen.killed = upstream
        await scraped(prom, f"{exits(EXIT.Failed)} >= 1")
        seen.after_kill_code = await rpc_error(session.call_tool("recall_memories", {"query": "cache", "limit": 1}))

    # Session 3: a new child after the loss: a restart, and up again.
    async with mcp_session(url) as session:
        await call(session, "recall_memories", {"query": "cache", "limit": 2, "detail": "light"})
    return seen


# ---------------------------------------------------------------------------
# The stack
# ---------------------------------------------------------------------------


@dataclass
class Stack:
    prom: Prometheus
    instance: str
    seen: Observed
    server: Background
    prometheus: Background
    proxy: Background
    proxy_instance: str
    proxy_seen: ProxyObserved
    store_instance: str

    def logs(self) -> str:
        return "\n".join(p.tail() for p in (self.server, self.proxy, self.prometheus))

    def target(self, expr: str) -> tuple[str, str]:
        """(job, instance) an expression is evaluated for: the proxy's for the metrics only
        `lro proxy` exports, the store replica's for the store's, else the
        memory-server's. (The audit panels select no job.)"""
        if proxy_only(expr):
            return (PROXY_JOB, self.proxy_instance)
        if store_only(expr):
            return (JOB, self.store_instance)
        return (JOB, self.instance)


async def store_workload(url: str, prom: Prometheus) -> None:
    """Through the replica whose results go to SeaweedFS: offloads and reads
    by handle, twice, the second time after Prometheus has scraped the first
    (series are born at their first value; rates need an increase after it)."""
    async with mcp_session(url) as session:
        for _ in range(2):
            r = await call(session, "list_memories", {"detail": "full"})
            handle = json.loads(text_of(r))["handle"]
            await call(session, EXTRACT_TOOL, {"handle": handle, L.ExtractMode.Recipe: 1})
            await scraped(prom, f'sum({M.STORE_BYTES_TOTAL}{{job="{JOB}"}}) > 0')


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    procs: list[Background] = []
    up = None
    try:
        up = launch(
            tmp_path_factory.mktemp("live"),
            procs,
            {"ATLATL_PROMPT__OFFLOAD__TTL_SECONDS": "1", "ATLATL_PROMPT__OFFLOAD__CLEANUP_SCHEDULE": "*/2 * * * * *"},
            proxy=True,
            store=True,
        )
        server, prometheus, prom, instance, offload_dir = up.server, up.prometheus, up.prom, up.instance, up.offload_dir
        # A few samples before the workload, so increases start from a baseline.
        wait_until(lambda: (prom.value(f'count_over_time({M.BUILD_INFO}{{job="{JOB}"}}[1m])') or 0) >= 3, STARTUP_TIMEOUT_S, "baseline samples")

        try:
            seen = anyio.run(workload, up.mcp_url, offload_dir, prom)
        except BaseException as e:
            raise AssertionError(f"workload failed: {e!r}\n{server.tail()}") from e
        try:
            proxy_seen = anyio.run(proxy_workload, up.proxy_url, up.proxy, prom)
        except BaseException as e:
            raise AssertionError(f"proxy workload failed: {e!r}\n{up.proxy.tail()}") from e

        # Cleanup expires the 1-second-old files (schedule: every 2 s).
        wait_until(
            lambda: (prom.value(f'sum({M.OFFLOAD_FILES_EXPIRED_TOTAL}{{job="{JOB}"}})') or 0) > 0,
            EXPIRY_TIMEOUT_S,
            f"{M.OFFLOAD_FILES_EXPIRED_TOTAL} to rise",
        )
        try:
            anyio.run(store_workload, up.store_url, prom)
        except BaseException as e:
            raise AssertionError(f"store workload failed: {e!r}\n{up.store.tail()}") from e
        yield Stack(prom, instance, seen, server, prometheus, up.proxy, up.proxy_instance, proxy_seen, up.store_instance)
    finally:
        for p in reversed(procs):
            p.stop()
        if up is not None and up.seaweed is not None:
            up.seaweed.close()


# ---------------------------------------------------------------------------
# Expression evaluation
# ---------------------------------------------------------------------------


def substitute(expr: str, instance: str, job: str = JOB) -> str:
    values = {
        "datasource": "prometheus",
        "job": job,
        "instance": instance,  # dots match themselves in the regex
        "tool": ".*",
        "__rate_interval": RATE_INTERVAL,
        "__interval": "15s",
        "__range": RATE_INTERVAL,
    }
    for name, value in values.items():
        expr = expr.replace("${" + name + "}", value)
    return re.sub(r"\$(\w+)", lambda m: values.get(m.group(1), m.group(0)), expr)


def is_extract_series(name: str) -> bool:
    """A series of one of EXTRACT_METRICS (histograms as _bucket/_sum/_count)."""
    m, _ = resolve_series(name, METRICS)
    return m is not None and m.name in EXTRACT_METRICS


def extract_only(expr: str, seen: Observed) -> bool:
    """True for expressions about the extraction tool when the server does not list it."""
    if EXTRACT_TOOL in seen.tools:
        return False
    names = scan(expr).metrics
    return bool(names) and any(is_extract_series(n) for n in names)


def is_proxy_series(name: str) -> bool:
    """A series of one of PROXY_METRICS (histograms as _bucket/_sum/_count)."""
    m, _ = resolve_series(name, METRICS)
    return m is not None and m.name in PROXY_METRICS


def is_audit_series(name: str) -> bool:
    """A series of one of AUDIT_METRICS."""
    m, _ = resolve_series(name, METRICS)
    return m is not None and m.name in AUDIT_METRICS


def store_only(expr: str) -> bool:
    """True for expressions about the metrics only a server with a shared store exports."""
    names = scan(expr).metrics
    return bool(names) and all((m := resolve_series(n, METRICS)[0]) is not None and m.name in STORE_METRICS for n in names)


def proxy_only(expr: str) -> bool:
    """True for expressions about the metrics only `lro proxy` exports."""
    names = scan(expr).metrics
    return bool(names) and all(is_proxy_series(n) for n in names)


def all_panel_exprs():
    return [(d, title, ref, expr) for d in DASHBOARDS for title, ref, expr in panel_exprs(load_dashboard(d))]


def evaluate_all(stack: Stack) -> list[str]:
    """Problems with any panel expression: errors, empty results, no finite value."""
    problems = []
    for dash, title, ref, expr in all_panel_exprs():
        if extract_only(expr, stack.seen):
            continue
        job, instance = stack.target(expr)
        q = substitute(expr, instance, job)
        try:
            result = stack.prom.query(q)
        except PromError as e:
            problems.append(f"{dash} / {title} [{ref}]: query error {e}\n    {q}")
            continue
        if not result:
            problems.append(f"{dash} / {title} [{ref}]: empty result\n    {q}")
        elif not any(math.isfinite(float(r["value"][1])) for r in result):
            problems.append(f"{dash} / {title} [{ref}]: no finite value in {result}\n    {q}")
    return problems


@pytest.fixture(scope="module")
def settled(stack):
    """Waits until every panel query has data (new series need a few scrapes)."""
    last: list[str] = []

    def ok():
        nonlocal last
        last = evaluate_all(stack)
        return not last

    try:
        wait_until(ok, SETTLE_TIMEOUT_S, "every panel query to return data", interval=2)
    except AssertionError:
        pass  # test_every_panel_query_returns_data reports `last` in detail
    return stack


# ---------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------


def test_workload_exercised_every_outcome(stack):
    seen = stack.seen
    assert seen.inline and seen.offloaded and seen.truncated
    counts = {
        r["metric"]["outcome"]: float(r["value"][1])
        for r in stack.prom.query(f'sum by (outcome) ({M.TOOL_RESULTS_TOTAL}{{job="{JOB}"}})')
    }
    for outcome in (OUTCOME.Inline, OUTCOME.Offloaded, OUTCOME.Truncated):
        assert counts.get(outcome, 0) > 0, f"no {outcome} results in Prometheus: {counts}\n{stack.logs()}"
    failures = stack.prom.value(f'sum({M.OFFLOAD_WRITE_FAILURES_TOTAL}{{job="{JOB}"}})')
    assert failures and failures >= 1, "the induced write failure was not counted"
    if EXTRACT_TOOL in seen.tools:
        assert stack.prom.value(f'sum({M.EXTRACT_REQUESTS_TOTAL}{{job="{JOB}", {EXTRACT.eq(EXTRACT.Ok)}}})'), f"{EXTRACT_TOOL} not counted"
    else:
        import warnings

        warnings.warn(f"the server does not list {EXTRACT_TOOL}: extraction panels were not exercised")


def test_every_panel_query_returns_data(settled):
    problems = evaluate_all(settled)
    assert problems == [], "panel queries without data:\n" + "\n".join(problems) + "\n" + settled.logs()


def test_every_referenced_metric_is_exported(settled):
    """Each series name in any panel or rule exists, so `or vector(0)` cannot hide a typo."""
    metrics = METRICS
    names = set()
    for _, _, _, expr in all_panel_exprs():
        names |= set(scan(expr).metrics)
    for rule in load_rules():
        names |= set(scan(rule["expr"]).metrics)
    missing = []
    for name in sorted(names):
        if is_extract_series(name) and EXTRACT_TOOL not in settled.seen.tools:
            continue
        m, _ = resolve_series(name, metrics)
        assert m is not None, f"{name} is not in {CATALOGUE.relative_to(REPO)}"
        job = PROXY_JOB if is_proxy_series(name) else AUDIT_JOB if is_audit_series(name) else JOB
        if not settled.prom.api("series", **{"match[]": f'{name}{{job="{job}"}}'}):
            missing.append(f"{name} (job {job})")
    assert missing == [], f"named by dashboards or rules but not exported: {missing}"


def test_template_variables_resolve(settled):
    expected = {"job": JOB, "instance": settled.instance, "tool": "list_memories"}
    for dash in DASHBOARDS:
        for var in load_dashboard(dash)["templating"]["list"]:
            if var["type"] != "query":
                continue
            selector, label = split_label_values(variable_query(var))
            params = {"match[]": substitute(selector, settled.instance)} if selector else {}
            values = settled.prom.api(f"label/{label}/values", **params)
            assert expected[var["name"]] in values, f"{dash} ${var['name']}: {values}"
            if var["name"] == "job":  # the proxy exports lro_build_info too
                assert PROXY_JOB in values, f"{dash} $job: {values}"


def test_conformance_dashboard_reads_pass(settled):
    """The workload evidences every Level 3 requirement: each panel reads 1 (PASS)."""
    dash = load_dashboard("lro-conformance.json")
    for panel in content_panels(dash):
        mappings = panel["fieldConfig"]["defaults"].get("mappings", [])
        if not any(m.get("type") == "value" and "1" in m["options"] for m in mappings):
            continue  # not a PASS/NOT OBSERVED panel
        expr = panel["targets"][0]["expr"]
        if extract_only(expr, settled.seen):
            continue
        value = settled.prom.value(substitute(expr, settled.instance))
        assert value == 1, f"{panel['title']}: {value} (expected 1 = PASS)\n    {expr}"
    level = settled.prom.query(f'{M.BUILD_INFO}{{job="{JOB}"}}')
    assert level and level[0]["metric"].get("conformance_level"), level


def test_alert_rules_load_and_write_failure_alert_fires(settled):
    groups = settled.prom.api("rules")["groups"]
    rules = [r for g in groups for r in g["rules"]]
    assert len(rules) == len(load_rules())
    unhealthy = [(r["name"], r.get("lastError")) for r in rules if r.get("health") != "ok"]
    assert unhealthy == [], unhealthy

    def firing():
        alerts = settled.prom.api("alerts")["alerts"]
        return {a["labels"]["alertname"]: a["state"] for a in alerts}

    def settled_states():
        # The killed child had the proxy's upstream down for a moment:
        # LroUpstreamDown may still be pending (never firing: `for: 2m`) until
        # the next rule evaluation sees the upstream up again.
        states = firing()
        return states.get("LroOffloadWriteFailures") == "firing" and "LroUpstreamDown" not in states and states

    states = wait_until(settled_states, 30, "LroOffloadWriteFailures to fire and LroUpstreamDown to clear")
    # One killed child among normal session ends is no flapping.
    for quiet in ("LroTargetDown", "LroMetricsAbsent", "LroCleanupStalled", "LroOffloadDiskUsageHigh", "LroUpstreamFlapping"):
        assert quiet not in states, f"{quiet} should not be active: {states}"


def test_audit_textfile_reaches_prometheus(settled):
    """`lro audit --textfile` of the bare server, through the node exporter: Level 0,
    the aggregate-threshold check failed, and every check of the report present."""
    prom = settled.prom
    assert prom.value(f'{M.AUDIT_LEVEL}{{job="{AUDIT_JOB}"}}') == 0
    checks = {r["metric"]["check"]: float(r["value"][1]) for r in prom.query(f'{M.AUDIT_CHECK}{{job="{AUDIT_JOB}"}}')}
    assert checks.get("threshold-aggregate") == 0, checks
    assert checks.get("probes") == 1, checks
    assert len(checks) >= 20, checks


def test_proxy_upstream_metrics_count_the_proxy_workload(settled):
    """Exits by reason, the restart, up, sessions and errors are what proxy_workload did."""
    prom, seen = settled.prom, settled.proxy_seen

    def settle(expr: str, ok, what: str) -> None:
        wait_until(lambda: ok(prom.value(expr)), SETTLE_TIMEOUT_S, f"{what}: {expr} (last: {prom.value(expr)})")

    # Sessions 1 and 3 ended normally, session 2's child was killed (a signal: failed).
    settle(exits(EXIT.Shutdown), lambda v: v is not None and v >= 2, "normal session ends")
    settle(exits(EXIT.Failed), lambda v: v == 1, "the killed child")
    assert prom.value(exits(EXIT.Exited)) == 0
    assert prom.value(exits(EXIT.Disconnected)) == 0  # a command upstream never disconnects
    settle(f"sum({proxy_series(M.UPSTREAM_RESTARTS_TOTAL)})", lambda v: v == 1, "the new session after the loss")
    settle(proxy_series(M.UPSTREAM_UP), lambda v: v == 1, "the upstream up again")
    settle(proxy_series(M.UPSTREAM_SESSIONS), lambda v: v == 0, "every session closed")

    # The unknown tool: the upstream's own JSON-RPC error code, under tools/call.
    codes = set(seen.unknown_tool_codes)
    assert len(codes) == 1 and len(seen.unknown_tool_codes) == 2, seen
    code = str(codes.pop())
    label = code if code in CODE.values else CODE.Other
    errors = f"sum({proxy_series(M.UPSTREAM_ERRORS_TOTAL, METHOD.eq(METHOD.ToolsCall), CODE.eq(label))})"
    settle(errors, lambda v: v == 2, "the unknown-tool errors")
    # The call on the session whose child was killed: the upstream was gone.
    assert seen.after_kill_code is not None, seen
    transport = f"sum({proxy_series(M.UPSTREAM_ERRORS_TOTAL, METHOD.eq(METHOD.ToolsCall), CODE.eq(CODE.Transport))})"
    settle(transport, lambda v: v == 1, "the call after the kill")
    calls = f"sum({proxy_series(M.UPSTREAM_REQUEST_DURATION_SECONDS + COUNT, METHOD.eq(METHOD.ToolsCall))})"
    settle(calls, lambda v: v is not None and v >= 7, "forwarded tools/call requests")

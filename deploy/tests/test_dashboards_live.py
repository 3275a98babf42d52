"""End to end: the real memory-server, a real Prometheus, every dashboard query.

1. Builds and starts `memory-server --http … --metrics …` (TTL 1 s, cleanup
   every 2 s, offload directory in a temp dir), `lro proxy --http …
   --metrics … -- memory-server --no-lro` (the same settings, its own
   offload directory), and a real Prometheus scraping both every second (jobs
   memory-server and lro-proxy of deploy/prometheus/prometheus.yml), with
   deploy/prometheus/alerts.yml loaded; and the real node exporter serving,
   through its textfile collector, the report of a real `lro audit --textfile`
   of the bare server (job lro-audit).
2. Drives a workload through the official MCP Python SDK over streamable HTTP
   that exercises every outcome: inline results, offloaded results, an
   lro_extract recipe (if the server lists the tool), a real write failure
   (the offload directory replaced by a regular file) that must fall back to a
   truncated result with a warning, TTL expiry by the cleanup task, and the
   context_offload tool (compaction and compression of an agent history). Then,
   through the proxy: tool calls, an unknown tool (a JSON-RPC error from the
   upstream), a session ended normally (a shutdown exit), a session whose
   child is killed (a failed exit), and a new session (a restart).
3. Evaluates every PromQL expression of every panel of both dashboards
   through /api/v1/query and requires a non-empty result (the panels on the
   metrics only `lro proxy` exports against the proxy's target, the others
   against the server's), checks that every metric any panel or alert rule
   names is really exported, that the template-variable queries resolve, that
   the Level 3 conformance panels read PASS, that the upstream metrics count
   what the proxy workload did, and that the alert rules load,
   LroOffloadWriteFailures fires and the upstream alerts stay quiet.

Needs: cargo (or LRO_MEMORY_SERVER_BIN=path/to/memory-server and
LRO_BIN=path/to/lro), `prometheus` on PATH (Debian package prometheus), pip
packages pytest, mcp, pyyaml. Uses only 127.0.0.1. Takes about a minute once
the binaries are built.

Metric names and label values come from the catalogue, deploy/metrics.json
(lrolib.M, lrolib.L), never typed here.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest
import yaml

from lrolib import (
    CATALOGUE,
    COUNT,
    DASHBOARDS,
    EXTRACT_TOOL,
    PROM_DIR,
    REPO,
    L,
    M,
    content_panels,
    load_dashboard,
    load_metrics,
    load_rules,
    panel_exprs,
    resolve_series,
    scan,
    split_label_values,
    variable_query,
)

JOB = "memory-server"
# The scrape job of `lro proxy` in deploy/prometheus/prometheus.yml.
PROXY_JOB = "lro-proxy"
# Substituted for $__rate_interval: wide enough to cover the whole workload,
# so rates, ratios and quantiles have real values, not just series.
RATE_INTERVAL = "5m"
SCRAPE_INTERVAL_S = 1
STARTUP_TIMEOUT_S = 60
EXPIRY_TIMEOUT_S = 90
SETTLE_TIMEOUT_S = 90
CARGO_BUILD_TIMEOUT_S = 1800

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
# The `lro audit --textfile` metrics: scraped from a node exporter's textfile
# collector (job lro-audit), not from any LRO server.
AUDIT_JOB = "lro-audit"
AUDIT_METRICS = frozenset({M.AUDIT_LEVEL, M.AUDIT_CHECK})
# A tool the memory server does not have: calling it through the proxy gets a
# JSON-RPC error from the upstream.
UNKNOWN_TOOL = "no_such_tool"
OUTCOME = L.ToolOutcome
EXTRACT = L.ExtractOutcome
MODE = L.ExtractMode
EXIT = L.UpstreamExit
METHOD = L.UpstreamMethod
CODE = L.UpstreamErrorCode

# Loopback traffic must never go through a proxy from the environment.
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


# ---------------------------------------------------------------------------
# Processes and HTTP
# ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    try:
        with _NO_PROXY.open(url, timeout=timeout) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def wait_until(predicate, timeout: float, what: str, interval: float = 0.5):
    """Polls `predicate` until it returns a truthy value; fails after `timeout`."""
    deadline = time.monotonic() + timeout
    last_exc: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception as e:  # noqa: BLE001 - retried until the deadline
            last_exc = e
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}" + (f" (last error: {last_exc})" if last_exc else ""))


class Proc:
    """A child process with its output in a log file; stopped by stop()."""

    def __init__(self, name: str, cmd: list[str], log: Path, env: dict | None = None, cwd: Path | None = None):
        self.name, self.cmd, self.log_path = name, cmd, log
        self._log = open(log, "wb")
        self.p = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True)

    def alive(self) -> bool:
        return self.p.poll() is None

    def search(self, pattern: str) -> re.Match | None:
        """The first match of `pattern` in the output so far."""
        self._log.flush()
        return re.search(pattern, self.log_path.read_text(encoding="utf-8", errors="replace"))

    def children(self) -> list[int]:
        """Process ids of its live child processes (from /proc)."""
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                state, ppid = stat.read_text().rsplit(")", 1)[1].split()[:2]
            except (OSError, ValueError):
                continue  # gone meanwhile
            if int(ppid) == self.p.pid and state != "Z":
                found.append(int(stat.parent.name))
        return found

    def tail(self, n: int = 40) -> str:
        self._log.flush()
        lines = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        return f"--- last {min(n, len(lines))} lines of {self.name} ({self.log_path}) ---\n" + "\n".join(lines[-n:])

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(timeout=10)
        self._log.close()


@dataclass
class Prometheus:
    base: str

    def api(self, path: str, **params) -> dict:
        url = f"{self.base}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params, doseq=True)
        status, body = http_get(url, timeout=15)
        doc = json.loads(body)
        if status != 200 or doc.get("status") != "success":
            raise PromError(f"{path} {params}: HTTP {status}: {body[:1000]}")
        return doc["data"]

    def query(self, expr: str) -> list[dict]:
        data = self.api("query", query=expr)
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        return data["result"]

    def value(self, expr: str) -> float | None:
        res = self.query(expr)
        return float(res[0]["value"][1]) if res else None


class PromError(AssertionError):
    pass


# ---------------------------------------------------------------------------
# MCP client (official Python SDK, streamable HTTP)
# ---------------------------------------------------------------------------


@asynccontextmanager
async def mcp_session(url: str):
    from mcp import ClientSession

    try:  # mcp >= 1.2x and 2.x
        from mcp.client.streamable_http import streamable_http_client as connect
    except ImportError:  # older 1.x
        from mcp.client.streamable_http import streamablehttp_client as connect
    async with connect(url) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


def is_error(result) -> bool:
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


def offload_path(result) -> str | None:
    """The descriptor's file_path if the result was offloaded, else None."""
    structured = getattr(result, "structured_content", None) or getattr(result, "structuredContent", None)
    if isinstance(structured, dict) and isinstance(structured.get("file_path"), str):
        return structured["file_path"]
    for block in result.content:
        if getattr(block, "type", None) == "text":
            try:
                doc = json.loads(block.text)
            except ValueError:
                continue
            if isinstance(doc, dict) and isinstance(doc.get("file_path"), str):
                return doc["file_path"]
    return None


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


async def call(session, name: str, args: dict):
    result = await session.call_tool(name, args)
    assert not is_error(result), f"{name}({args}) failed: {text_of(result)[:500]}"
    return result


async def scraped(prom: Prometheus, expr: str, timeout: float = 30) -> None:
    """Waits, without blocking the event loop, until Prometheus returns data for expr."""
    with anyio.fail_after(timeout):
        while not await anyio.to_thread.run_sync(prom.query, expr):
            await anyio.sleep(0.5)


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


async def proxy_workload(url: str, proxy: Proc, prom: Prometheus) -> ProxyObserved:
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
        children = proxy.children()  # spawned for the session's initialize
        assert len(children) == 1, f"one child per session, found {children}"
        os.kill(children[0], signal.SIGKILL)
        seen.killed = children
        await scraped(prom, f"{exits(EXIT.Failed)} >= 1")
        seen.after_kill_code = await rpc_error(session.call_tool("recall_memories", {"query": "cache", "limit": 1}))

    # Session 3: a new child after the loss: a restart, and up again.
    async with mcp_session(url) as session:
        await call(session, "recall_memories", {"query": "cache", "limit": 2, "detail": "light"})
    return seen


# ---------------------------------------------------------------------------
# The stack
# ---------------------------------------------------------------------------


def cargo_binary(package: str, binary: str, override_var: str) -> Path:
    """target/debug/<binary> after `cargo build -p <package>`, or the path in $<override_var>."""
    override = os.environ.get(override_var)
    if override:
        path = Path(override)
        assert path.is_file(), f"{override_var}={override} does not exist"
        return path
    cargo = shutil.which("cargo")
    assert cargo, f"cargo not found (or set {override_var})"
    proc = subprocess.run(
        [cargo, "build", "-p", package], cwd=REPO, capture_output=True, text=True, timeout=CARGO_BUILD_TIMEOUT_S
    )
    assert proc.returncode == 0, f"cargo build -p {package} failed:\n{proc.stderr[-4000:]}"
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    return (target if target.is_absolute() else REPO / target) / "debug" / binary


def server_binary() -> Path:
    return cargo_binary("memory-server", "memory-server", "LRO_MEMORY_SERVER_BIN")


def proxy_binary() -> Path:
    """The `lro` CLI, whose `lro proxy` puts LRO in front of any MCP server."""
    return cargo_binary("lro-cli", "lro", "LRO_BIN")


def prometheus_config(path: Path, metrics_port: int, proxy_metrics_port: int | None = None, audit_port: int | None = None) -> None:
    """deploy/prometheus/prometheus.yml, pointed at the test server (job memory-server) and,
    if given, the test proxy (job lro-proxy) and the node exporter serving the
    audit textfile (job lro-audit), scraping every second."""
    cfg = yaml.safe_load((PROM_DIR / "prometheus.yml").read_text(encoding="utf-8"))
    cfg["global"].update(
        scrape_interval=f"{SCRAPE_INTERVAL_S}s", scrape_timeout=f"{SCRAPE_INTERVAL_S}s", evaluation_interval=f"{SCRAPE_INTERVAL_S}s"
    )
    cfg["rule_files"] = [str(PROM_DIR / f) for f in cfg.get("rule_files", [])]
    targets = {JOB: metrics_port}
    if proxy_metrics_port is not None:
        targets[PROXY_JOB] = proxy_metrics_port
    if audit_port is not None:
        targets[AUDIT_JOB] = audit_port
    scrape = []
    for name, port in targets.items():
        jobs = [j for j in cfg["scrape_configs"] if j["job_name"] == name]
        assert len(jobs) == 1, f"deploy/prometheus/prometheus.yml must have one job {name!r}"
        job = jobs[0]
        job["static_configs"] = [{"targets": [f"127.0.0.1:{port}"], "labels": job["static_configs"][0].get("labels", {})}]
        scrape.append(job)
    cfg["scrape_configs"] = scrape
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")


@dataclass
class Stack:
    prom: Prometheus
    instance: str
    seen: Observed
    server: Proc
    prometheus: Proc
    proxy: Proc
    proxy_instance: str
    proxy_seen: ProxyObserved

    def logs(self) -> str:
        return "\n".join(p.tail() for p in (self.server, self.proxy, self.prometheus))

    def target(self, expr: str) -> tuple[str, str]:
        """(job, instance) an expression is evaluated for: the proxy's for the metrics only
        `lro proxy` exports, else the memory-server's. (The audit panels select no job.)"""
        return (PROXY_JOB, self.proxy_instance) if proxy_only(expr) else (JOB, self.instance)


@dataclass
class Launched:
    """A memory-server and a Prometheus scraping it, both up and scraping;
    with proxy=True also an `lro proxy` in front of a memory-server, scraped too."""

    server: Proc
    prometheus: Proc
    prom: Prometheus
    instance: str
    mcp_url: str
    offload_dir: Path
    proxy: Proc | None = None
    proxy_instance: str | None = None
    proxy_url: str | None = None


def launch(tmp: Path, procs: list[Proc], extra_env: dict[str, str], proxy: bool = False) -> Launched:
    """Starts the stack under `tmp` (offload files in `tmp/offload`) and waits
    until Prometheus scrapes the server. With `proxy`, also starts
    `lro proxy --http … --metrics … -- memory-server --no-lro` (the same
    settings, offload files in `tmp/proxy-offload`), scraped as job lro-proxy.
    Started processes are appended to `procs` as they start, so the caller can
    stop them whatever happens."""
    prom_bin = shutil.which("prometheus")
    assert prom_bin, "prometheus not found on PATH: apt-get install -y prometheus"
    binary = server_binary()
    help_text = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30).stdout
    assert "--metrics" in help_text, f"{binary} has no --metrics option:\n{help_text}"
    lro = proxy_binary() if proxy else None

    offload_dir = tmp / "offload"
    offload_dir.mkdir(mode=0o700)
    http_port, metrics_port, prom_port = free_port(), free_port(), free_port()
    instance = f"127.0.0.1:{metrics_port}"
    proxy_metrics_port = free_port() if proxy else None
    proxy_instance = f"127.0.0.1:{proxy_metrics_port}" if proxy else None

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATLATL_", "OTEL_"))}
    env.update(
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
        RUST_LOG=env.get("RUST_LOG", "info"),
        ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR=str(offload_dir),
        **extra_env,
    )
    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
    os.environ.setdefault("no_proxy", "127.0.0.1,localhost")

    # A real audit's textfile, served by the real node exporter's textfile
    # collector: the audit panels of the conformance dashboard read it. The
    # audited target is the bare server, so the report has failed checks too.
    audit_port = None
    if lro is not None:
        exporter = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
        assert exporter, "prometheus-node-exporter not found on PATH: apt-get install -y prometheus-node-exporter"
        textfiles = tmp / "textfile"
        textfiles.mkdir()
        audit = subprocess.run(
            [str(lro), "audit", "--textfile", str(textfiles / "audit.prom"), "--", str(binary), "--no-lro"],
            capture_output=True, text=True, timeout=120, env=env, cwd=tmp,
        )
        assert audit.returncode == 0, f"lro audit failed ({audit.returncode}):\n{audit.stdout}\n{audit.stderr}"
        audit_port = free_port()
        procs.append(Proc(
            "node exporter",
            [exporter, "--collector.disable-defaults", "--collector.textfile",
             f"--collector.textfile.directory={textfiles}", f"--web.listen-address=127.0.0.1:{audit_port}"],
            tmp / "node-exporter.log", env=env, cwd=tmp,
        ))

    prom_cfg = tmp / "prometheus.yml"
    prometheus_config(prom_cfg, metrics_port, proxy_metrics_port, audit_port)

    server = Proc(
        "memory-server",
        [str(binary), "--http", f"127.0.0.1:{http_port}", "--metrics", instance, "--context-store-root", str(tmp / "context-store")],
        tmp / "memory-server.log",
        env=env,
        cwd=tmp,
    )
    procs.append(server)
    proxy_proc = None
    if lro is not None:
        proxy_offload = tmp / "proxy-offload"
        proxy_offload.mkdir(mode=0o700)
        # Port 0: the proxy prints the address it bound ("lro proxy listening on http://ADDR/mcp").
        proxy_proc = Proc(
            "lro proxy",
            [str(lro), "proxy", "--http", "127.0.0.1:0", "--metrics", proxy_instance, "--", str(binary), "--no-lro"],
            tmp / "lro-proxy.log",
            env={**env, "ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR": str(proxy_offload)},
            cwd=tmp,
        )
        procs.append(proxy_proc)
    prometheus = Proc(
        "prometheus",
        [
            prom_bin,
            f"--config.file={prom_cfg}",
            f"--storage.tsdb.path={tmp / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{prom_port}",
            "--storage.tsdb.retention.time=1h",
            "--log.level=warn",
        ],
        tmp / "prometheus.log",
        env=env,
        cwd=tmp,
    )
    procs.append(prometheus)
    prom = Prometheus(f"http://127.0.0.1:{prom_port}")

    def ready(proc: Proc, url: str):
        assert proc.alive(), f"{proc.name} exited with {proc.p.returncode}\n{proc.tail()}"
        return http_get(url, timeout=2)[0] == 200

    wait_until(lambda: ready(server, f"http://{instance}/metrics"), STARTUP_TIMEOUT_S, "the memory-server metrics endpoint")
    proxy_url = None
    if proxy_proc is not None:
        wait_until(lambda: ready(proxy_proc, f"http://{proxy_instance}/metrics"), STARTUP_TIMEOUT_S, "the lro proxy metrics endpoint")
        listening = wait_until(
            lambda: proxy_proc.search(r"lro proxy listening on (http://\S+)"), STARTUP_TIMEOUT_S, "lro proxy to listen"
        )
        proxy_url = listening.group(1)
    wait_until(lambda: ready(prometheus, f"{prom.base}/-/ready"), STARTUP_TIMEOUT_S, "Prometheus to be ready")
    wait_until(lambda: prom.value(f'up{{job="{JOB}", instance="{instance}"}}') == 1, STARTUP_TIMEOUT_S, "the scrape target to be up")
    if proxy_proc is not None:
        wait_until(
            lambda: prom.value(f'up{{job="{PROXY_JOB}", instance="{proxy_instance}"}}') == 1, STARTUP_TIMEOUT_S, "the proxy's scrape target to be up"
        )
    if audit_port is not None:
        wait_until(lambda: prom.value(f'up{{job="{AUDIT_JOB}"}}') == 1, STARTUP_TIMEOUT_S, "the node exporter's scrape target to be up")
    return Launched(
        server, prometheus, prom, instance, f"http://127.0.0.1:{http_port}/mcp", offload_dir, proxy_proc, proxy_instance, proxy_url
    )


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    procs: list[Proc] = []
    try:
        up = launch(
            tmp_path_factory.mktemp("live"),
            procs,
            {"ATLATL_PROMPT__OFFLOAD__TTL_SECONDS": "1", "ATLATL_PROMPT__OFFLOAD__CLEANUP_SCHEDULE": "*/2 * * * * *"},
            proxy=True,
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
        yield Stack(prom, instance, seen, server, prometheus, up.proxy, up.proxy_instance, proxy_seen)
    finally:
        for p in reversed(procs):
            p.stop()


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

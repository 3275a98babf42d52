"""The live stack of the deploy tests: real processes on 127.0.0.1, scraped by a real Prometheus.

`launch(tmp, procs, extra_env[, proxy=True])` starts `memory-server --http …
--metrics …` (its offload directory in tmp/offload), with `proxy` also `lro
proxy --http … --metrics … -- memory-server --no-lro` (the same settings, its
own offload directory) and the real node exporter serving, through its
textfile collector, the report of a real `lro audit --textfile` of the bare
server; and a real Prometheus scraping them every second (jobs memory-server,
lro-proxy and lro-audit of deploy/prometheus/prometheus.yml), with
deploy/prometheus/alerts.yml loaded. It returns once every target is up.

Beside it: `Prometheus` (its HTTP API), and the official MCP Python SDK's
client over streamable HTTP (`mcp_session`, `call`, `offload_path`, …).
test_dashboards_live.py and test_metrics_values.py drive workloads through it.

Needs the binaries (testkit.binaries builds them), `prometheus` and
`prometheus-node-exporter` on PATH (Debian packages of those names), pip
packages mcp and pyyaml. Uses only 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.parse
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import yaml

from lrolib import PROM_DIR
from testkit import waiting
from testkit.binaries import ensure_built
from testkit.http import http_get
from testkit.procs import Background, environ_without, free_port
from testkit.seaweed import Seaweed

JOB = "memory-server"
# The scrape job of `lro proxy` in deploy/prometheus/prometheus.yml.
PROXY_JOB = "lro-proxy"
# The `lro audit --textfile` metrics: scraped from a node exporter's textfile
# collector (job lro-audit), not from any LRO server.
AUDIT_JOB = "lro-audit"
SCRAPE_INTERVAL_S = 1
STARTUP_TIMEOUT_S = 60


def wait_until(predicate, timeout: float, what: str, interval: float = 0.5):
    """Polls `predicate` until it returns a truthy value; fails after `timeout`.
    Errors are retried: the endpoints refuse connections while they start."""
    return waiting.wait_until(predicate, timeout, interval, what, errors=(Exception,))


# ---------------------------------------------------------------------------
# Prometheus
# ---------------------------------------------------------------------------


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



async def scraped(prom: Prometheus, expr: str, timeout: float = 30) -> None:
    """Waits, without blocking the event loop, until Prometheus returns data for expr."""
    with anyio.fail_after(timeout):
        while not await anyio.to_thread.run_sync(prom.query, expr):
            await anyio.sleep(0.5)


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



async def call(session, name: str, args: dict):
    result = await session.call_tool(name, args)
    assert not is_error(result), f"{name}({args}) failed: {text_of(result)[:500]}"
    return result


# ---------------------------------------------------------------------------
# The stack
# ---------------------------------------------------------------------------


def prometheus_config(path: Path, metrics_port: int | list[int], proxy_metrics_port: int | None = None, audit_port: int | None = None) -> None:
    """deploy/prometheus/prometheus.yml, pointed at the test server(s) (job memory-server) and,
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
        ports = port if isinstance(port, list) else [port]
        job["static_configs"] = [{"targets": [f"127.0.0.1:{p}" for p in ports], "labels": job["static_configs"][0].get("labels", {})}]
        scrape.append(job)
    cfg["scrape_configs"] = scrape
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")



@dataclass
class Launched:
    """A memory-server and a Prometheus scraping it, both up and scraping;
    with proxy=True also an `lro proxy` in front of a memory-server, scraped too."""

    server: Background
    prometheus: Background
    prom: Prometheus
    instance: str
    mcp_url: str
    offload_dir: Path
    proxy: Background | None = None
    proxy_instance: str | None = None
    proxy_url: str | None = None
    store: Background | None = None
    store_instance: str | None = None
    store_url: str | None = None
    seaweed: Seaweed | None = None


def launch(tmp: Path, procs: list[Background], extra_env: dict[str, str], proxy: bool = False, store: bool = False) -> Launched:
    """Starts the stack under `tmp` (offload files in `tmp/offload`) and waits
    until Prometheus scrapes the server. With `proxy`, also starts
    `lro proxy --http … --metrics … -- memory-server --no-lro` (the same
    settings, offload files in `tmp/proxy-offload`), scraped as job lro-proxy.
    With `store`, also a SeaweedFS and a second memory-server whose results go
    to it (`store = "s3://…"`), scraped as a second target of job
    memory-server. Started processes are appended to `procs` as they start,
    so the caller can stop them whatever happens; the SeaweedFS is returned,
    for the caller to close."""
    prom_bin = shutil.which("prometheus")
    assert prom_bin, "prometheus not found on PATH: apt-get install -y prometheus"
    built = ensure_built()
    binary = built.memory_server
    help_text = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30).stdout
    assert "--metrics" in help_text, f"{binary} has no --metrics option:\n{help_text}"
    lro = built.lro if proxy else None

    offload_dir = tmp / "offload"
    offload_dir.mkdir(mode=0o700)
    http_port, metrics_port, prom_port = free_port(), free_port(), free_port()
    instance = f"127.0.0.1:{metrics_port}"
    proxy_metrics_port = free_port() if proxy else None
    proxy_instance = f"127.0.0.1:{proxy_metrics_port}" if proxy else None

    env = environ_without("ATLATL_", "OTEL_")
    env.update(
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
        RUST_LOG=env.get("RUST_LOG", "info"),
        ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR=str(offload_dir),
        **extra_env,
    )
    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
    os.environ.setdefault("no_proxy", "127.0.0.1,localhost")

    def start(name: str, argv: list, env: dict[str, str]) -> Background:
        """A process of the stack in a process group of its own, its stderr in
        tmp/NAME.log; appended to `procs`."""
        proc = Background(argv, env, tmp / f"{name.replace(' ', '-')}.log", cwd=tmp, new_session=True, name=name)
        procs.append(proc)
        return proc

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
        start("node exporter", [
            exporter, "--collector.disable-defaults", "--collector.textfile",
            f"--collector.textfile.directory={textfiles}", f"--web.listen-address=127.0.0.1:{audit_port}",
        ], env)

    seaweed = store_proc = store_instance = store_url = None
    server_ports = [metrics_port]
    if store:
        seaweed = Seaweed(tmp)
        seaweed.start()
        assert seaweed.proc is not None
        procs.append(seaweed.proc)
        seaweed.create_bucket("lro-live")
        store_metrics = free_port()
        server_ports.append(store_metrics)
        store_instance = f"127.0.0.1:{store_metrics}"
        (tmp / "store-scratch").mkdir(mode=0o700)
        store_proc = start(
            "memory-server store",
            [binary, "--http", "127.0.0.1:0", "--metrics", store_instance],
            # Results live an hour: the workload reads each back.
            {**env, **seaweed.env(), "ATLATL_PROMPT__OFFLOAD__STORE": "s3://lro-live/live",
             "ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR": str(tmp / "store-scratch"),
             "ATLATL_PROMPT__OFFLOAD__TTL_SECONDS": "3600"},
        )
        store_url = store_proc.wait_url(STARTUP_TIMEOUT_S)

    prom_cfg = tmp / "prometheus.yml"
    prometheus_config(prom_cfg, server_ports, proxy_metrics_port, audit_port)

    server = start(
        "memory-server",
        [binary, "--http", f"127.0.0.1:{http_port}", "--metrics", instance, "--context-store-root", tmp / "context-store"],
        env,
    )
    proxy_proc = None
    if lro is not None:
        proxy_offload = tmp / "proxy-offload"
        proxy_offload.mkdir(mode=0o700)
        # Port 0: the proxy prints the address it bound ("lro proxy listening on http://ADDR/mcp").
        proxy_proc = start(
            "lro proxy",
            [lro, "proxy", "--http", "127.0.0.1:0", "--metrics", proxy_instance, "--", binary, "--no-lro"],
            {**env, "ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR": str(proxy_offload)},
        )
    prometheus = start(
        "prometheus",
        [
            prom_bin,
            f"--config.file={prom_cfg}",
            f"--storage.tsdb.path={tmp / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{prom_port}",
            "--storage.tsdb.retention.time=1h",
            "--log.level=warn",
        ],
        env,
    )
    prom = Prometheus(f"http://127.0.0.1:{prom_port}")

    def ready(proc: Background, url: str):
        assert proc.alive(), f"{proc.name} exited with {proc.proc.returncode}\n{proc.tail()}"
        return http_get(url, timeout=2)[0] == 200

    wait_until(lambda: ready(server, f"http://{instance}/metrics"), STARTUP_TIMEOUT_S, "the memory-server metrics endpoint")
    proxy_url = None
    if proxy_proc is not None:
        wait_until(lambda: ready(proxy_proc, f"http://{proxy_instance}/metrics"), STARTUP_TIMEOUT_S, "the lro proxy metrics endpoint")
        proxy_url = proxy_proc.wait_line(r"lro proxy listening on (http://\S+)", STARTUP_TIMEOUT_S).group(1)
    wait_until(lambda: ready(prometheus, f"{prom.base}/-/ready"), STARTUP_TIMEOUT_S, "Prometheus to be ready")
    wait_until(lambda: prom.value(f'up{{job="{JOB}", instance="{instance}"}}') == 1, STARTUP_TIMEOUT_S, "the scrape target to be up")
    if proxy_proc is not None:
        wait_until(
            lambda: prom.value(f'up{{job="{PROXY_JOB}", instance="{proxy_instance}"}}') == 1, STARTUP_TIMEOUT_S, "the proxy's scrape target to be up"
        )
    if audit_port is not None:
        wait_until(lambda: prom.value(f'up{{job="{AUDIT_JOB}"}}') == 1, STARTUP_TIMEOUT_S, "the node exporter's scrape target to be up")
    if store_instance is not None:
        wait_until(lambda: prom.value(f'up{{job="{JOB}", instance="{store_instance}"}}') == 1, STARTUP_TIMEOUT_S, "the store replica's scrape target to be up")
    return Launched(
        server, prometheus, prom, instance, f"http://127.0.0.1:{http_port}/mcp", offload_dir, proxy_proc, proxy_instance, proxy_url,
        store_proc, store_instance, store_url, seaweed,
    )


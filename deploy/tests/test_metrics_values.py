"""The memory-server's metrics have exactly the values its workload implies.

A small, exact workload through the official MCP Python SDK over streamable
HTTP: 2 inline results, 3 offloaded results (500 full-detail memories each),
1 failed write that falls back to a truncated result, then custodial cleanup
expiring the 3 files (TTL 2 s, schedule every second). A real Prometheus
scrapes the server every second; every assertion goes through its HTTP API.
`promtool check metrics` must accept the raw exposition.

Runs on the live stack of live_stack.py, as test_dashboards_live.py does. Metric
names and label values come from the catalogue, deploy/metrics.json (lrolib.M,
lrolib.L), never typed here.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import anyio
import pytest

from lrolib import COUNT, SUM, L, M
from live_stack import JOB, Prometheus, call, launch, mcp_session, offload_path, text_of, wait_until
from testkit.http import http_get

EXPIRY_TIMEOUT_S = 60

OUTCOME = L.ToolOutcome
FAILURE = L.WriteFailureReason
EXPIRY = L.ExpiryReason
CLEANUP = L.CleanupOutcome


async def exact_workload(url: str, offload_dir: Path) -> dict:
    sizes = []
    async with mcp_session(url) as session:
        for args in ({"query": "cache", "limit": 2}, {"query": "deployment", "limit": 1}):
            r = await call(session, "recall_memories", args)
            assert offload_path(r) is None, text_of(r)[:300]
        for _ in range(3):
            r = await call(session, "list_memories", {"detail": "full"})
            path = offload_path(r)
            assert path, text_of(r)[:300]
            sizes.append(Path(path).stat().st_size)
        parked = offload_dir.with_name("parked")
        offload_dir.rename(parked)
        offload_dir.write_text("a regular file where the directory was\n")
        try:
            r = await call(session, "list_memories", {"detail": "full"})
            assert offload_path(r) is None
            assert "offloading failed" in text_of(r)
        finally:
            offload_dir.unlink()
            parked.rename(offload_dir)
    return {"bytes": sum(sizes)}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    procs = []
    try:
        up = launch(
            tmp_path_factory.mktemp("values"),
            procs,
            {"ATLATL_PROMPT__OFFLOAD__TTL_SECONDS": "2", "ATLATL_PROMPT__OFFLOAD__CLEANUP_SCHEDULE": "* * * * * *"},
        )
        workload = anyio.run(exact_workload, up.mcp_url, up.offload_dir)
        yield up.prom, up.instance, workload, up.server
    finally:
        for p in reversed(procs):
            p.stop()


def settle(prom: Prometheus, expr: str, expected: float, timeout: float = EXPIRY_TIMEOUT_S) -> None:
    """Waits until Prometheus has scraped the value the workload implies."""
    wait_until(lambda: prom.value(expr) == expected, timeout, f"{expr} == {expected} (last: {prom.value(expr)})")


def series(metric: str, *matchers: str) -> str:
    """metric{job="memory-server", matchers...}"""
    return metric + "{" + ", ".join((f'job="{JOB}"', *matchers)) + "}"


def test_tool_results_and_offload_series_are_exact(run):
    prom, _, workload, _ = run
    settle(prom, f"sum({series(M.TOOL_RESULTS_TOTAL, OUTCOME.eq(OUTCOME.Offloaded))})", 3)
    settle(prom, f"sum({series(M.TOOL_RESULTS_TOTAL, OUTCOME.eq(OUTCOME.Inline))})", 2)
    settle(prom, f"sum({series(M.TOOL_RESULTS_TOTAL, OUTCOME.eq(OUTCOME.Truncated))})", 1)
    settle(prom, f"sum({series(M.OFFLOAD_WRITE_FAILURES_TOTAL, FAILURE.eq(FAILURE.NotADirectory))})", 1)
    settle(prom, f"sum({series(M.OFFLOAD_WRITE_FAILURES_TOTAL)})", 1)
    settle(prom, f"sum({series(M.OFFLOAD_WRITE_DURATION_SECONDS + COUNT)})", 3)
    settle(prom, f"sum({series(M.OFFLOADED_RECORDS_TOTAL)})", 1500)
    settle(prom, f"sum({series(M.OFFLOADED_BYTES_TOTAL)})", workload["bytes"])
    assert prom.value(f"sum({series(M.OFFLOAD_WRITE_DURATION_SECONDS + SUM)})") > 0
    # Every result, inline or not, lands in the size histogram.
    settle(prom, f"sum({series(M.RESULT_ESTIMATED_TOKENS + COUNT)})", 6)


def test_cleanup_expires_every_offloaded_file(run):
    prom, _, workload, _ = run
    settle(prom, f"sum({series(M.OFFLOAD_FILES_EXPIRED_TOTAL, EXPIRY.eq(EXPIRY.Ttl))})", 3)
    settle(prom, f"sum({series(M.CLEANUP_BYTES_FREED_TOTAL)})", workload["bytes"])
    settle(prom, series(M.OFFLOAD_FILES), 0)
    settle(prom, series(M.OFFLOAD_DISK_BYTES), 0)
    assert prom.value(f"sum({series(M.CLEANUP_RUNS_TOTAL, CLEANUP.eq(CLEANUP.Success))})") >= 1
    assert prom.value(f"sum({series(M.CLEANUP_RUNS_TOTAL, CLEANUP.eq(CLEANUP.Error))})") == 0
    last = prom.value(series(M.CLEANUP_LAST_SUCCESS_TIMESTAMP_SECONDS))
    assert abs(time.time() - last) < 120, last
    assert prom.value(f"sum({series(M.OFFLOAD_FILES_EXPIRED_TOTAL, EXPIRY.eq(EXPIRY.Quota))})") == 0


def test_promtool_accepts_the_exposition(run, tmp_path):
    _, instance, _, _ = run
    status, body = http_get(f"http://{instance}/metrics")
    assert status == 200
    assert M.BUILD_INFO in body
    promtool = shutil.which("promtool")
    assert promtool, "promtool not found: apt-get install -y prometheus"
    proc = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr

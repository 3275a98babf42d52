"""The memory-server's metrics have exactly the values its workload implies.

A small, exact workload through the official MCP Python SDK over streamable
HTTP: 2 inline results, 3 offloaded results (500 full-detail memories each),
1 failed write that falls back to a truncated result, then custodial cleanup
expiring the 3 files (TTL 2 s, schedule every second). A real Prometheus
scrapes the server every second; every assertion goes through its HTTP API.
`promtool check metrics` must accept the raw exposition.

Shares the process and Prometheus helpers of test_dashboards_live.py.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import anyio
import pytest

from test_dashboards_live import (
    JOB,
    Prometheus,
    call,
    http_get,
    launch,
    mcp_session,
    offload_path,
    text_of,
    wait_until,
)

EXPIRY_TIMEOUT_S = 60


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


def test_tool_results_and_offload_series_are_exact(run):
    prom, _, workload, _ = run
    sel = f'job="{JOB}"'
    settle(prom, f'sum(lro_tool_results_total{{{sel}, outcome="offloaded"}})', 3)
    settle(prom, f'sum(lro_tool_results_total{{{sel}, outcome="inline"}})', 2)
    settle(prom, f'sum(lro_tool_results_total{{{sel}, outcome="truncated"}})', 1)
    settle(prom, f'sum(lro_offload_write_failures_total{{{sel}, reason="not_a_directory"}})', 1)
    settle(prom, f'sum(lro_offload_write_failures_total{{{sel}}})', 1)
    settle(prom, f'sum(lro_offload_write_duration_seconds_count{{{sel}}})', 3)
    settle(prom, f'sum(lro_offloaded_records_total{{{sel}}})', 1500)
    settle(prom, f'sum(lro_offloaded_bytes_total{{{sel}}})', workload["bytes"])
    assert prom.value(f'sum(lro_offload_write_duration_seconds_sum{{{sel}}})') > 0
    # Every result, inline or not, lands in the size histogram.
    settle(prom, f'sum(lro_result_estimated_tokens_count{{{sel}}})', 6)


def test_cleanup_expires_every_offloaded_file(run):
    prom, _, workload, _ = run
    sel = f'job="{JOB}"'
    settle(prom, f'sum(lro_offload_files_expired_total{{{sel}, reason="ttl"}})', 3)
    settle(prom, f'sum(lro_cleanup_bytes_freed_total{{{sel}}})', workload["bytes"])
    settle(prom, f'lro_offload_files{{{sel}}}', 0)
    settle(prom, f'lro_offload_disk_bytes{{{sel}}}', 0)
    assert prom.value(f'sum(lro_cleanup_runs_total{{{sel}, outcome="success"}})') >= 1
    assert prom.value(f'sum(lro_cleanup_runs_total{{{sel}, outcome="error"}})') == 0
    last = prom.value(f'lro_cleanup_last_success_timestamp_seconds{{{sel}}}')
    assert abs(time.time() - last) < 120, last
    assert prom.value(f'sum(lro_offload_files_expired_total{{{sel}, reason="quota"}})') == 0


def test_promtool_accepts_the_exposition(run, tmp_path):
    _, instance, _, _ = run
    status, body = http_get(f"http://{instance}/metrics")
    assert status == 200
    assert "lro_build_info" in body
    promtool = shutil.which("promtool")
    assert promtool, "promtool not found: apt-get install -y prometheus"
    proc = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr

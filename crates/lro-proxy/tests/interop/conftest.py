"""pytest configuration for the `lro proxy` interop suite
(run: python3 -m pytest -q crates/lro-proxy/tests/interop).

The suite drives target/debug/lro (and target/debug/memory-server) with real
third-party parts: the official Python `mcp` SDK as client and as upstream
server (fixtures/py_server.py), and the real `jq` binary for the recipes.

Session fixture `binaries` makes sure both binaries exist: when one is missing
(another build may be relinking it) it waits a bounded time for it to come
back, then builds it with `cargo build -p lro-cli -p memory-server`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import support  # noqa: E402

# A relinking build removes the binary for a short while.
BINARY_WAIT_S = 120
BUILD_TIMEOUT_S = 1800


def _present() -> bool:
    return all(p.is_file() and p.stat().st_size > 0 for p in (support.LRO, support.MEMORY_SERVER))


@pytest.fixture(scope="session", autouse=True)
def binaries() -> None:
    if shutil.which("jq") is None:
        pytest.fail("jq not found on PATH (the recipes run through the real jq binary)")
    deadline = time.monotonic() + BINARY_WAIT_S
    while not _present() and time.monotonic() < deadline:
        time.sleep(1)  # a poll with a deadline: waiting for another build to relink
    if not _present():
        if shutil.which("cargo") is None:
            pytest.fail(f"{support.LRO} or {support.MEMORY_SERVER} is missing and cargo is not on PATH")
        cmd = ["cargo", "build", "-p", "lro-cli", "-p", "memory-server"]
        proc = subprocess.run(cmd, cwd=support.REPO, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stderr[-6000:]}"
    assert _present(), "the binaries are still missing after the build"


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    """The proxy's offload directory (ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR)."""
    d = tmp_path / "offload"
    d.mkdir()
    return d


@pytest.fixture
def pid_file(tmp_path: Path) -> Path:
    """FIXTURE_PID_FILE: every fixture server started appends its pid here."""
    return tmp_path / "fixture.pids"


@pytest.fixture
def fixture_env(tmp_path: Path, pid_file: Path) -> dict[str, str]:
    """The fixture server's variables (markers in tmp_path)."""
    return {
        "FIXTURE_PID_FILE": str(pid_file),
        "FIXTURE_CANCEL_FILE": str(tmp_path / "cancelled.marker"),
        "FIXTURE_STARTED_FILE": str(tmp_path / "started.marker"),
    }


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def reap_fixture_children(pid_file: Path):
    """Kills any fixture server a failing test left behind."""
    yield
    for pid in support.read_pids(pid_file):
        if support.pid_alive(pid):
            support.kill_quietly(pid)

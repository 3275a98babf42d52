"""pytest configuration for the `lro proxy` interop suite
(run: python3 -m pytest -q crates/lro-proxy/tests/interop).

The suite drives target/debug/lro (and target/debug/memory-server) with real
third-party parts: the official Python `mcp` SDK as client and as upstream
server (fixtures/py_server.py, and the conformance fixture
deploy/conformance/fixture/everything.py, which speaks both wires), the
reference npm servers and the TypeScript SDK client (ts/, pinned),
`mcp-server-git` (pinned in .ci/run), and the real `jq` binary for the recipes.
The binaries and jq come from the test kit's session fixtures (testkit.fixtures).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from testkit.npm import npm_ci
from testkit.procs import Background, kill_quietly, pid_alive
from support import EVERYTHING_JS, TS, fixture_cmd, full_env, offload_env, proxy_argv, read_pids


@pytest.fixture(scope="session", autouse=True)
def parts(binaries, jq) -> None:
    """Every test runs the binaries, and the recipes through the real jq."""


@pytest.fixture(scope="session")
def everything() -> Path:
    """ts/node_modules installed from package-lock.json (a no-op when already there)."""
    npm_ci(TS)
    assert EVERYTHING_JS.is_file(), EVERYTHING_JS
    return EVERYTHING_JS


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
def start_proxy(tmp_path: Path, fixture_env: dict[str, str], out_dir: Path):
    """Starts `lro proxy --http 127.0.0.1:0 [ARGS] -- fixture`; returns (process, URL)."""
    started: list[Background] = []

    def start(*args: str) -> tuple[Background, str]:
        env = full_env({**fixture_env, **offload_env(out_dir, threshold=500)})
        proc = Background(
            proxy_argv("--http", "127.0.0.1:0", *args, upstream=fixture_cmd()), env, tmp_path / f"proxy{len(started)}.err"
        )
        started.append(proc)
        return proc, proc.wait_url()

    yield start
    for proc in started:
        proc.stop()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def reap_fixture_children(pid_file: Path):
    """Kills any fixture server a failing test left behind."""
    yield
    for pid in read_pids(pid_file):
        if pid_alive(pid):
            kill_quietly(pid)

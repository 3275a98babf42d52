"""The official MCP conformance suite and its reference server, for the tests.

Everything lives in deploy/conformance/ (see its README.md): package.json and
package-lock.json pin npm `@modelcontextprotocol/conformance` (SUITE_VERSION)
and the reference "everything" server's dependencies; reference/ holds that
server's source, vendored; testkit/npm-ci.sh installs both (`npm ci`, once)
and the package's `check-install` script applies the Node 20 shim to the suite.

    ensure_installed()                    runs testkit/npm-ci.sh once per session
    with start_reference_server() as url: the reference server on a free loopback port
    run_suite(url[, scenario])            {scenario: {"passed": bool, "checks": [...], ...}}

Only 127.0.0.1 is used; the npm registry only by testkit/npm-ci.sh, only when
node_modules is missing or stale (.ci/run runs it ahead of the tests).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from testkit.http import DIRECT
from testkit.npm import npm_ci
from testkit.paths import REPO
from testkit.procs import free_port, kill_group

CONF_DIR = REPO / "deploy" / "conformance"
REFERENCE_DIR = CONF_DIR / "reference"
REFERENCE_SERVER = REFERENCE_DIR / "everything-server.ts"
LISTEN_LOOPBACK = REPO / "testkit" / "listen-loopback.mjs"
SUITE_PKG = CONF_DIR / "node_modules" / "@modelcontextprotocol" / "conformance"
SUITE_JS = SUITE_PKG / "dist" / "index.js"

# The pinned suite version (deploy/conformance/package.json).
SUITE_VERSION = "0.1.16"

SERVER_READY_TIMEOUT_S = 60  # tsx transpiles the server on first start; ~1 s warm
SUITE_TIMEOUT_S = 180  # the active suite takes ~2 s against the reference server
SCENARIO_TIMEOUT_S = 60

# A check's status in the suite's checks.json.
SUCCESS, FAILURE, WARNING, INFO = "SUCCESS", "FAILURE", "WARNING", "INFO"

# Result directories the CLI writes under --output-dir: `server-<scenario>-<ISO time, ':' and '.' as '-'>`.
_RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")
# Summary lines of a suite run: `✓ ping: 1 passed, 0 failed` (✗ when a check failed).
_SUMMARY_LINE = re.compile(r"^[\u2713\u2717] (?P<scenario>\S+): (?P<ok>\d+) passed, (?P<bad>\d+) failed$", re.MULTILINE)



# ---------------------------------------------------------------------------
# Installation
# ---------------------------------------------------------------------------


def node_env(**extra: str) -> dict[str, str]:
    """The environment for node children: loopback never goes through a proxy."""
    env = dict(os.environ)
    loopback = "127.0.0.1,localhost,::1"
    for key in ("NO_PROXY", "no_proxy"):
        env[key] = f"{env[key]},{loopback}" if env.get(key) else loopback
    env.update(extra)
    return env


def ensure_installed() -> None:
    """Installs deploy/conformance with testkit/npm-ci.sh once per session (fast
    when already installed), and checks the suite's version."""
    npm_ci(CONF_DIR)
    installed = json.loads((SUITE_PKG / "package.json").read_text(encoding="utf-8"))["version"]
    if installed != SUITE_VERSION:
        raise RuntimeError(f"installed conformance suite is {installed}, expected {SUITE_VERSION}")


# ---------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------


def _http_answers(url: str, timeout: float = 1.0) -> bool:
    """True once anything answers HTTP at `url` (the server says 400 to a bare GET /mcp)."""
    try:
        with DIRECT.open(url, timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, ConnectionError, socket.timeout, OSError):
        return False


def _tail(path: Path, n: int = 40) -> str:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines() if path.exists() else []
    return f"--- last {min(n, len(lines))} lines of {path} ---\n" + "\n".join(lines[-n:])


@contextmanager
def start_reference_server(log_dir: Path | None = None, ready_timeout: float = SERVER_READY_TIMEOUT_S) -> Iterator[str]:
    """Runs the suite's reference server on a free 127.0.0.1 port; yields its MCP URL.

    `node --import tsx` runs reference/everything-server.ts in one process;
    testkit/listen-loopback.mjs makes its bare `app.listen(PORT)` bind 127.0.0.1
    instead of every interface. The server validates Host (localhost, 127.0.0.1, [::1]),
    so the URL is http://127.0.0.1:PORT/mcp. Readiness is polled over HTTP with
    a deadline; on exit the whole process group is killed. Its output goes to
    log_dir/reference-server.log (a temp dir by default), tailed on failure.
    """
    ensure_installed()
    own_dir = None
    if log_dir is None:
        own_dir = tempfile.TemporaryDirectory(prefix="lro-conformance-")
        log_dir = Path(own_dir.name)
    log_path = Path(log_dir) / "reference-server.log"
    node = shutil.which("node")
    assert node is not None
    try:
        for attempt in range(3):  # the port may be taken between free_port() and the server's bind
            port = free_port()
            url = f"http://127.0.0.1:{port}/mcp"
            with open(log_path, "ab") as log:
                proc = subprocess.Popen(
                    [node, "--import", "tsx", "--import", LISTEN_LOOPBACK.as_uri(), REFERENCE_SERVER.name],
                    cwd=REFERENCE_DIR,
                    env=node_env(PORT=str(port), HOST="127.0.0.1"),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            try:
                deadline = time.monotonic() + ready_timeout
                while proc.poll() is None and time.monotonic() < deadline and not _http_answers(url):
                    time.sleep(0.05)
                if proc.poll() is None and _http_answers(url):
                    break
                if proc.poll() is not None and "EADDRINUSE" in _tail(log_path, 20) and attempt < 2:
                    continue
                state = f"exited with {proc.returncode}" if proc.poll() is not None else f"not answering after {ready_timeout:.0f}s"
                raise RuntimeError(f"reference server on port {port} {state}\n{_tail(log_path)}")
            except BaseException:
                kill_group(proc)
                raise
        try:
            yield url
        finally:
            kill_group(proc)
    finally:
        if own_dir is not None:
            own_dir.cleanup()


# ---------------------------------------------------------------------------
# The suite
# ---------------------------------------------------------------------------


def _summarize(checks: list[dict]) -> dict:
    count = {s: sum(1 for c in checks if c.get("status") == s) for s in (SUCCESS, FAILURE, WARNING)}
    return {
        # The suite's own verdict for a scenario (its tier-check report): no failed check, one passed at least.
        "passed": count[FAILURE] == 0 and count[SUCCESS] > 0,
        "successes": count[SUCCESS],
        "failures": count[FAILURE],
        "warnings": count[WARNING],
        "checks": checks,
    }


def run_suite(
    url: str,
    scenario: str | None = None,
    *,
    suite: str = "active",
    spec_version: str | None = None,
    timeout: float | None = None,
) -> dict[str, dict]:
    """Runs `conformance server --url URL` (one scenario, or the whole `suite`).

    Returns {scenario: {"passed", "successes", "failures", "warnings", "checks"}},
    read from the checks.json files the CLI writes under --output-dir; "checks"
    is that list of checks (id, name, description, status SUCCESS | FAILURE |
    WARNING | INFO, errorMessage, details, specReferences). A scenario that
    crashed the CLI (no checks.json) gets one synthesized FAILURE check.
    Raises RuntimeError if the CLI fails for other reasons, TimeoutError after `timeout`.
    """
    ensure_installed()
    node = shutil.which("node")
    assert node is not None
    if timeout is None:
        timeout = SCENARIO_TIMEOUT_S if scenario else SUITE_TIMEOUT_S
    with tempfile.TemporaryDirectory(prefix="lro-conformance-results-") as out:
        cmd = [node, str(SUITE_JS), "server", "--url", url, "--output-dir", out]
        cmd += ["--scenario", scenario] if scenario else ["--suite", suite]
        if spec_version:
            cmd += ["--spec-version", spec_version]
        proc = subprocess.Popen(
            cmd,
            cwd=CONF_DIR,
            env=node_env(NO_COLOR="1"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            raise TimeoutError(f"conformance suite did not finish within {timeout:.0f}s: {' '.join(cmd)}") from None
        finally:
            if proc.poll() is None:
                kill_group(proc)

        results: dict[str, dict] = {}
        for d in sorted(Path(out).iterdir()):
            m = _RESULT_DIR.match(d.name)
            checks_file = d / "checks.json"
            if m and checks_file.is_file():
                results[m.group("scenario")] = _summarize(json.loads(checks_file.read_text(encoding="utf-8")))

    ran = [m.group("scenario") for m in _SUMMARY_LINE.finditer(output)] if not scenario else [scenario]
    for name in ran:
        if name not in results:  # the scenario threw before writing checks.json
            results[name] = _summarize(
                [{"id": name, "name": name, "description": "Failed to run scenario", "status": FAILURE, "errorMessage": output[-2000:]}]
            )
    failed_checks = sum(r["failures"] for r in results.values())
    if not results or proc.returncode not in (0, 1) or (proc.returncode == 0) != (failed_checks == 0):
        raise RuntimeError(f"conformance CLI exited with {proc.returncode} ({failed_checks} failed checks parsed):\n{output[-4000:]}")
    return results


def list_server_scenarios() -> list[str]:
    """Every server scenario of the installed suite (`conformance list --server`), pending ones included."""
    ensure_installed()
    node = shutil.which("node")
    assert node is not None
    out = subprocess.run(
        [node, str(SUITE_JS), "list", "--server"], cwd=CONF_DIR, env=node_env(), capture_output=True, text=True, timeout=60, check=True
    ).stdout
    return re.findall(r"^\s+- (\S+)", out, re.MULTILINE)


def describe_failures(results: dict[str, dict]) -> str:
    """One line per failed or warning check of the scenarios that did not pass (for assertion messages)."""
    lines = []
    for name, r in sorted(results.items()):
        if r["passed"]:
            continue
        lines.append(f"{name}: {r['successes']} passed, {r['failures']} failed, {r['warnings']} warnings")
        for c in r["checks"]:
            if c.get("status") in (FAILURE, WARNING):
                lines.append(f"  {c.get('status')} {c.get('id')}: {c.get('errorMessage') or c.get('description')}")
    return "\n".join(lines)

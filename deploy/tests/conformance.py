"""The official MCP conformance suite and the project's fixture server, for the tests.

deploy/conformance/ (see its README.md) pins npm `@modelcontextprotocol/conformance`
0.2.0-alpha.12 (SUITE_VERSION) and 0.1.16 beside it (LEGACY_SUITE, the npm
alias `conformance-016`); testkit/npm-ci.sh installs both with the system npm,
and they run on a Node >= 22 (testkit.node). fixture/everything.py is the
server the scenarios call, written for this project on the Python SDK.

    ensure_installed()                  testkit/npm-ci.sh once per session, versions checked
    with start_fixture(log_dir) as url: the fixture over HTTP on a free loopback port
    with start_proxy(args, log_dir) as url: `lro proxy --http 127.0.0.1:0 ARGS`
    run_suite(url, run=RUNS[0])         {scenario: {"passed": bool, "checks": [...], ...}}
    side_by_side(log_dir)               every RUN against every TARGET, in parallel
    table(results)                      those results as one table, scenario x target

Only 127.0.0.1 is used; the npm registry only by testkit/npm-ci.sh, only when
node_modules is missing or stale (.ci/run runs it ahead of the tests).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from testkit.node import node_at_least
from testkit.npm import npm_ci
from testkit.paths import LRO, REPO, conformance_fixture
from testkit.procs import kill_group, serving

CONF_DIR = REPO / "deploy" / "conformance"

# The pinned suites (deploy/conformance/package.json), by version: where each is installed.
SUITE_VERSION = "0.2.0-alpha.12"
LEGACY_SUITE = "0.1.16"
SUITES = {
    SUITE_VERSION: CONF_DIR / "node_modules" / "@modelcontextprotocol" / "conformance",
    LEGACY_SUITE: CONF_DIR / "node_modules" / "conformance-016",
}
# The suite 0.2 loads only on Node >= 22 (0.1.16 imports fs.globSync, also 22).
NODE_MAJOR = 22

SUITE_TIMEOUT_S = 600  # a requirement set through a proxy that times scenarios out is the slow case
SCENARIO_TIMEOUT_S = 120

# A check's status in the suite's checks.json.
SUCCESS, FAILURE, WARNING = "SUCCESS", "FAILURE", "WARNING"

# Result directories the CLI writes under --output-dir: `server-<scenario>-<ISO time, ':' and '.' as '-'>`.
_RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")
# Summary lines of a suite run: `✓ ping: 1 passed, 0 failed` (✗ when a check failed).
_SUMMARY_LINE = re.compile(r"^[\u2713\u2717] (?P<scenario>\S+): (?P<ok>\d+) passed, (?P<bad>\d+) failed$", re.MULTILINE)


@dataclass(frozen=True)
class Run:
    """One run of the suite: a pinned version and, for 0.2, a frozen requirement set
    (its scenarios at that revision's wire); 0.1.16 runs its active suite."""

    suite: str
    requirements: str | None = None

    @property
    def label(self) -> str:
        return f"{self.suite} --requirements {self.requirements}" if self.requirements else f"{self.suite} active suite"


RUNS = (Run(SUITE_VERSION, "2026-07-28"), Run(SUITE_VERSION, "2025-11-25"), Run(LEGACY_SUITE))


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


def installed_version(suite: str) -> str:
    return json.loads((SUITES[suite] / "package.json").read_text(encoding="utf-8"))["version"]


def ensure_installed() -> None:
    """Installs deploy/conformance with testkit/npm-ci.sh once per session (fast
    when already installed), and checks both suites' versions."""
    npm_ci(CONF_DIR)
    for suite in SUITES:
        if installed_version(suite) != suite:
            raise RuntimeError(f"{SUITES[suite]} holds conformance {installed_version(suite)}, expected {suite}")


def scored(run: Run) -> list[str] | None:
    """The server scenarios `run` scores: its requirement set's frozen list (the
    suite runs more, not scored); None for 0.1.16, which scores all it runs."""
    if run.requirements is None:
        return None
    path = SUITES[run.suite] / "requirements" / f"{run.requirements}.yaml"
    return list(yaml.safe_load(path.read_text(encoding="utf-8"))["server"])


# ---------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------


def start_fixture(log_dir: Path, only_2026: bool = False) -> AbstractContextManager[str]:
    """The fixture over HTTP on a free 127.0.0.1 port (it binds port 0 itself); yields its URL."""
    return serving("fixture", conformance_fixture(*(["--only-2026"] if only_2026 else []), "http", "0"), log_dir / "fixture.log")


def start_proxy(args: list[str], log_dir: Path) -> AbstractContextManager[str]:
    """`lro proxy --http 127.0.0.1:0 ARGS` with its offloads under log_dir; yields its URL."""
    out = log_dir / "offload"
    out.mkdir(exist_ok=True)
    env = {**os.environ, "ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR": str(out), "RUST_LOG": "warn"}
    return serving("lro proxy", [str(LRO), "proxy", "--http", "127.0.0.1:0", *args], log_dir / "proxy.log", env)


@contextmanager
def proxy_before_fixture(log_dir: Path) -> Iterator[str]:
    """`lro proxy --url` in front of the fixture over HTTP."""
    with start_fixture(log_dir) as upstream, start_proxy(["--url", upstream], log_dir) as url:
        yield url


# The three ways the suite reaches the fixture: directly, and through `lro proxy`'s
# HTTP face with the fixture as an HTTP upstream and as a stdio child.
TARGETS: dict[str, Callable[[Path], AbstractContextManager[str]]] = {
    "direct": start_fixture,
    "proxy --url": proxy_before_fixture,
    "proxy stdio": lambda log_dir: start_proxy(["--", *conformance_fixture("stdio")], log_dir),
}


# ---------------------------------------------------------------------------
# The suite
# ---------------------------------------------------------------------------


def _summarize(checks: list[dict]) -> dict:
    count = {s: sum(1 for c in checks if c.get("status") == s) for s in (SUCCESS, FAILURE, WARNING)}
    return {
        # The suite's own verdict for a scenario (its summary's ✓): no failed check, one passed at least.
        "passed": count[FAILURE] == 0 and count[SUCCESS] > 0,
        "successes": count[SUCCESS],
        "failures": count[FAILURE],
        "warnings": count[WARNING],
        "checks": checks,
    }


def run_suite(
    url: str,
    run: Run = RUNS[0],
    scenario: str | None = None,
    *,
    spec_version: str | None = None,
    timeout: float | None = None,
) -> dict[str, dict]:
    """Runs `conformance server --url URL`: `run`'s requirement set (or 0.1.16's
    active suite), or one `scenario` (at the wire of `spec_version`).

    Returns {scenario: {"passed", "successes", "failures", "warnings", "checks"}},
    read from the checks.json files the CLI writes under --output-dir; "checks"
    is that list of checks (id, name, description, status SUCCESS | FAILURE |
    WARNING | SKIPPED | INFO, errorMessage, details, specReferences). A scenario that
    crashed the CLI (no checks.json) gets one synthesized FAILURE check.
    Raises RuntimeError if the CLI fails for other reasons, TimeoutError after `timeout`.
    """
    ensure_installed()
    if timeout is None:
        timeout = SCENARIO_TIMEOUT_S if scenario else SUITE_TIMEOUT_S
    with tempfile.TemporaryDirectory(prefix="lro-conformance-results-") as out:
        cmd = [str(node_at_least(NODE_MAJOR)), str(SUITES[run.suite] / "dist" / "index.js"), "server", "--url", url, "--output-dir", out]
        if scenario:
            cmd += ["--scenario", scenario]
        elif run.requirements:
            cmd += ["--requirements", run.requirements]
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
    if not results or proc.returncode not in (0, 1):
        raise RuntimeError(f"conformance CLI exited with {proc.returncode}:\n{output[-4000:]}")
    return results


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


def passing(results: dict[str, dict]) -> set[str]:
    return {name for name, r in results.items() if r["passed"]}


# ---------------------------------------------------------------------------
# Side by side
# ---------------------------------------------------------------------------


@dataclass
class SideBySide:
    """Every RUN against every TARGET: results[target][run] (empty when the run
    did not complete, with the reason in errors[target][run]), and how long each
    target's runs took."""

    results: dict[str, dict[Run, dict[str, dict]]] = field(default_factory=dict)
    errors: dict[str, dict[Run, str]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def _run_target(side: SideBySide, target: str, log_dir: Path) -> None:
    """`target`'s RUNS, one after the other. The fixture gets a fresh server
    for each run, the baseline; a proxy serves all of them back to back, as
    one long-lived proxy serves clients of both wires, so what one run leaves
    behind in it (a principal's sessionless child, idle sessions) must not
    cost the next a scenario. A run that cannot complete (a server that does
    not start, a suite past its timeout) is recorded, so the other runs and
    the table still happen."""
    started = time.monotonic()
    side.results[target], side.errors[target] = {}, {}
    slug = re.sub(r"[^a-z0-9]+", "-", target)

    def run_all(url: str | None, runs) -> None:
        for i, run in runs:
            try:
                if url is None:
                    run_dir = log_dir / f"{slug}-{i}"
                    run_dir.mkdir(parents=True)
                    with TARGETS[target](run_dir) as fresh:
                        side.results[target][run] = run_suite(fresh, run)
                else:
                    side.results[target][run] = run_suite(url, run)
            except (AssertionError, RuntimeError, TimeoutError) as exc:
                side.results[target][run] = {}
                side.errors[target][run] = f"{type(exc).__name__}: {exc}"

    if target == "direct":
        run_all(None, enumerate(RUNS))
    else:
        run_dir = log_dir / slug
        run_dir.mkdir(parents=True)
        try:
            with TARGETS[target](run_dir) as url:
                run_all(url, enumerate(RUNS))
        except (AssertionError, RuntimeError, TimeoutError) as exc:
            for run in RUNS:
                side.results[target].setdefault(run, {})
                side.errors[target].setdefault(run, f"{type(exc).__name__}: {exc}")
    side.seconds[target] = time.monotonic() - started


def side_by_side(log_dir: Path) -> SideBySide:
    """Runs every target's RUNS, the targets in parallel: a suite run waits on
    its server far more than it computes, so two cores carry three at once."""
    ensure_installed()
    side = SideBySide()
    with ThreadPoolExecutor(max_workers=len(TARGETS)) as pool:
        for future in [pool.submit(_run_target, side, target, log_dir) for target in TARGETS]:
            future.result()
    return side


def table(side: SideBySide) -> str:
    """One table per run: scenario x target, `pass` or `FAIL`, the scenarios a
    requirement set does not score marked `(not scored)`; then, for every
    scenario that passes directly and fails through a proxy, the failed checks."""
    targets = list(side.results)
    lines = []
    regressions = []
    for run in RUNS:
        counted = scored(run)
        names = sorted({name for target in targets for name in side.results[target][run]}, key=lambda n: (counted is not None and n not in counted, n))
        width = max((len(n) for n in names), default=0) + len(" (not scored)")
        lines += ["", f"conformance {run.label}", f"{'scenario':<{width}}  " + "  ".join(f"{t:<11}" for t in targets)]
        totals = {t: 0 for t in targets}
        for name in names:
            label = name if counted is None or name in counted else f"{name} (not scored)"
            cells = []
            for target in targets:
                result = side.results[target][run].get(name)
                cells.append("-" if result is None else "pass" if result["passed"] else "FAIL")
                totals[target] += bool(result and result["passed"] and (counted is None or name in counted))
                if target != "direct" and result and not result["passed"] and name in passing(side.results["direct"][run]):
                    regressions.append(f"{run.label}, {target}: " + describe_failures({name: result}))
            lines.append(f"{label:<{width}}  " + "  ".join(f"{c:<11}" for c in cells))
        lines.append(f"{'scored, passed':<{width}}  " + "  ".join(f"{totals[t]:<11}" for t in targets))
    seconds = ", ".join(f"{t} {s:.0f} s" for t, s in side.seconds.items())
    lines += ["", f"wall time per target (in parallel): {seconds}"]
    lines += [f"did not complete: {run.label}, {target}: {error}" for target, errors in side.errors.items() for run, error in errors.items()]
    if regressions:
        lines += ["", "passing directly, failing through the proxy:", *regressions]
    return "\n".join(lines)

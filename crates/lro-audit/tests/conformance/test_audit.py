"""`lro audit` judged from outside (run: python3 -m pytest -q crates/lro-audit/tests/conformance).

The auditor must give the right verdict on implementations it shares no code
with, and catch each deliberate violation by a named failing check:

- this project's demo server (Level 3) and the same server without its LRO
  layer (Level 0);
- `lro proxy` in front of the bare server (Level 3);
- fixtures/lro_fixture.py, an independent implementation on the official
  Python `mcp` SDK: correct (Level 3), and with one violation each; with an
  answer that varies at each launch, and server-everything's `get-env`, which
  echoes its environment, told apart from an inline answer the layer changed;
- a streamable-HTTP target, where what needs control is skipped;
- the wire: the demo server (which speaks both) over 2026-07-28 and over
  `initialize`, and a server that speaks only 2025-11-25 (the reference
  memory server from npm), which `--wire auto` falls back for; the report
  names the wire either way;
- usage errors (exit 2) and unreachable targets (exit 3).

Recipes run through the real `jq`; the JUnit report is parsed as XML and the
textfile is checked by the real `promtool`. Uses only 127.0.0.1.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from testkit.npm import npm_ci
from testkit.paths import LRO, MEMORY_SERVER, REPO
from testkit.procs import Background, environ_without, free_port

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "lro_fixture.py"
# The pinned npm servers of the proxy's interop suite: TypeScript SDK 1.32,
# which speaks 2025-11-25 only.
NPM_SERVERS = REPO / "crates" / "lro-proxy" / "tests" / "interop" / "ts"
MEMORY_JS = NPM_SERVERS / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
EVERYTHING_JS = NPM_SERVERS / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"

MODERN = {"protocol_version": "2026-07-28", "lifecycle": "server/discover"}
LEGACY = {"protocol_version": "2025-11-25", "lifecycle": "initialize"}

# A full audit of a stdio server must finish in this time (the bound).
AUDIT_BUDGET_S = 60
# Bound on one `lro audit` process in these tests (a loaded CI machine).
AUDIT_TIMEOUT_S = 180

LEVEL1 = 1
LEVEL2 = 2
LEVEL3 = 3
EXIT_NOT_MET, EXIT_USAGE, EXIT_UNREACHABLE = 1, 2, 3


# Every test runs the binaries, and the recipes through the real jq.
pytestmark = pytest.mark.usefixtures("binaries", "jq")


def env() -> dict[str, str]:
    """The caller's environment without LRO settings: the auditor sets its own."""
    return environ_without("ATLATL_")


def run_audit(*args: str, timeout: float = AUDIT_TIMEOUT_S) -> tuple[int, dict | None, str, float]:
    """Runs `lro audit --json ARGS`: (exit status, the report, stderr, seconds)."""
    started = time.monotonic()
    proc = subprocess.run([str(LRO), "audit", "--json", *args], capture_output=True, text=True, timeout=timeout, env=env())
    took = time.monotonic() - started
    report = json.loads(proc.stdout) if proc.stdout.strip() else None
    return proc.returncode, report, proc.stderr, took


def status(report: dict) -> dict[str, str]:
    return {c["id"]: c["status"] for c in report["checks"]}


def explain(report: dict | None) -> str:
    if report is None:
        return "no report"
    bad = [f"  {c['id']} ({c['level']}): {c['status']}: {c['detail']}" for c in report["checks"] if c["status"] != "pass"]
    return report["verdict"] + "\n" + "\n".join(bad)


def fixture_cmd(*extra: str) -> list[str]:
    return [sys.executable, str(FIXTURE), *extra]


# ---------------------------------------------------------------------------
# The project's own parts, and the proxy


def test_demo_server_is_level_3_within_the_budget(tmp_path: Path):
    junit, textfile = tmp_path / "audit.xml", tmp_path / "audit.prom"
    code, report, err, took = run_audit(
        "--require-level", "3", "--junit", str(junit), "--textfile", str(textfile), "--", str(MEMORY_SERVER)
    )
    assert code == 0 and report["level"] == LEVEL3, explain(report) + err
    assert took < AUDIT_BUDGET_S, f"the audit took {took:.1f}s"
    assert report["verdict"] == "Level 3"
    assert all(s == "pass" for s in status(report).values()), explain(report)
    # It speaks 2026-07-28, so `--wire auto` (the default) audited over it.
    assert report["wire"] == {"asked": "auto", **MODERN}, report["wire"]

    # JUnit: one test case per check, none failed or skipped.
    suite = ET.parse(junit).getroot().find("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == len(report["checks"])
    assert not suite.findall(".//failure") and not suite.findall(".//skipped")

    # The textfile is valid exposition format, by the real promtool.
    text = textfile.read_text()
    lint = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert re.search(r"^lro_audit_level 3$", text, re.M), text
    assert text.count('lro_audit_check{check="') == len(report["checks"])


def test_demo_server_without_lro_is_level_0():
    code, report, err, _ = run_audit("--require-level", "1", "--", str(MEMORY_SERVER), "--no-lro")
    assert code == EXIT_NOT_MET, explain(report) + err
    assert report["level"] == 0, explain(report)
    assert status(report)["threshold-aggregate"] == "fail"
    assert report["verdict"].startswith("Level 0 — Level 1 blocked by: threshold-aggregate"), report["verdict"]
    assert "--require-level 1 not met" in err
    # Stopped at the first failing level: nothing above it ran.
    assert {c["status"] for c in report["checks"] if c["level"] in (LEVEL2, LEVEL3)} == {"skip"}


@pytest.mark.parametrize("wire,seen", [("2026-07-28", MODERN), ("legacy", LEGACY)])
def test_demo_server_is_level_3_over_either_wire(wire: str, seen: dict):
    code, report, err, _ = run_audit("--require-level", "3", "--wire", wire, "--", str(MEMORY_SERVER))
    assert code == 0 and report["level"] == LEVEL3, explain(report) + err
    assert report["wire"] == {"asked": wire, **seen}, report["wire"]
    # The proxy flag is honoured on either wire (over 2026-07-28 it rides in
    # every request's _meta).
    assert status(report)["proxy-flag"] == "pass", explain(report)


def test_a_legacy_server_is_audited_over_initialize_and_says_so():
    """server-memory (TypeScript SDK) answers `server/discover` with -32601: `auto`
    falls back to `initialize`, the report says so; `--wire 2026-07-28` cannot reach it."""
    npm_ci(NPM_SERVERS)
    target = ["node", str(MEMORY_JS)]
    code, report, err, _ = run_audit("--probe", "read_graph {}", "--", *target)
    assert code == 0 and report is not None, err
    assert report["wire"] == {"asked": "auto", **LEGACY}, report["wire"]
    # It offloads nothing: no LRO, Level 0, whichever the wire.
    assert report["level"] == 0, explain(report)
    code, report, err, _ = run_audit("--wire", "2026-07-28", "--probe", "read_graph {}", "--", *target, timeout=60)
    assert code == EXIT_UNREACHABLE and report is None, err
    assert "server/discover failed" in err, err


@pytest.mark.parametrize("wire,seen", [("auto", MODERN), ("legacy", LEGACY)])
def test_proxy_in_front_of_a_server_without_lro_is_level_3(wire: str, seen: dict):
    """The proxy's stdio face speaks both wires: `auto` gets 2026-07-28."""
    code, report, err, took = run_audit(
        "--require-level", "3", "--wire", wire, "--", str(LRO), "proxy", "--", str(MEMORY_SERVER), "--no-lro"
    )
    assert code == 0 and report["level"] == LEVEL3, explain(report) + err
    assert took < AUDIT_BUDGET_S
    assert report["wire"] == {"asked": wire, **seen}, report["wire"]
    assert status(report)["proxy-flag"] == "pass", explain(report)


def make_repository(repo: Path, commits: int) -> None:
    """`commits` commits, each with a subject and a body, in one `git fast-import`."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    stream = []
    for i in range(commits):
        message = f"Rework step {i}\n\nThe parser of step {i} moved out.\n"
        stamp = 1_700_000_000 + i * 3600
        stream.append(
            f"commit refs/heads/main\nauthor Dev {i % 3} <dev{i % 3}@example.org> {stamp} +0000\n"
            f"committer Dev {i % 3} <dev{i % 3}@example.org> {stamp} +0000\n"
            f"data {len(message.encode())}\n{message}\nM 644 inline file_{i % 5}.txt\ndata 8\nline {i:03}\n\n"
        )
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet"], input="".join(stream), text=True, check=True)


def test_proxy_in_front_of_a_generic_server_is_level_3(tmp_path: Path):
    """mcp-server-git's log is text, not memories: its lines are the records the
    threshold checks count, and the confidence sort, which presumes memories,
    is reported not applicable, not failed."""
    has_git_server = subprocess.run([sys.executable, "-c", "import mcp_server_git"], capture_output=True).returncode == 0
    assert has_git_server, "mcp-server-git is not installed (.ci/run's pip line installs it)"
    repo = tmp_path / "repo"
    make_repository(repo, 60)
    probe = "git_log " + json.dumps({"repo_path": str(repo), "max_count": 60})
    code, report, err, took = run_audit(
        "--require-level", "3", "--probe", probe, "--", str(LRO), "proxy", "--", sys.executable, "-m", "mcp_server_git"
    )
    assert code == 0 and report["level"] == LEVEL3, explain(report) + err
    assert report["wire"] == {"asked": "auto", **MODERN}, report["wire"]
    assert took < AUDIT_BUDGET_S, f"the audit took {took:.1f}s"
    s = status(report)
    assert s["recipes-confidence"] == "not_applicable", explain(report)
    assert "presumes them" in report_detail(report, "recipes-confidence")
    assert {v for k, v in s.items() if k != "recipes-confidence"} == {"pass"}, explain(report)
    # Its commits' lines are many small records, offloaded together.
    assert " records of at most " in report_detail(report, "threshold-aggregate")


def test_compact_guidance_is_reported_outside_the_spec_not_failed():
    code, report, err, _ = run_audit(
        "--keep-going", "--", "env", "ATLATL_PROMPT__OFFLOAD__GUIDANCE=compact", str(MEMORY_SERVER)
    )
    assert report is not None, err
    s = status(report)
    for check in ("recipes-run", "recipes-fields", "recipes-confidence", "line-schema", "guidance"):
        assert s[check] == "skip", explain(report)
        assert "compact guidance profile (outside the spec" in report_detail(report, check)
    assert "fail" not in s.values(), explain(report)
    # Level 3 is judged on the spec guidance: the compact server does not reach it.
    assert report["level"] == LEVEL1 and code == 0, explain(report)


def report_detail(report: dict, check: str) -> str:
    return next(c["detail"] for c in report["checks"] if c["id"] == check)


# ---------------------------------------------------------------------------
# An independent implementation (Python, official SDK), right and wrong


def test_correct_fixture_is_level_3():
    code, report, err, took = run_audit("--require-level", "3", "--", *fixture_cmd())
    assert code == 0 and report["level"] == LEVEL3, explain(report) + err
    assert took < AUDIT_BUDGET_S, f"the audit took {took:.1f}s"
    assert report["verdict"] == "Level 3"


VARIES = "answers differently at each launch, with no threshold in reach too"


def test_an_answer_that_varies_by_launch_is_not_judged_on():
    """The fixture's recall answer carries a nonce new at each launch: the audit
    sees the inline answer change, finds the same change with no threshold in
    reach, and judges the threshold on the next call, saying why."""
    code, report, err, _ = run_audit("--require-level", "3", "--", *fixture_cmd("--vary"))
    assert code == 0 and report["level"] == LEVEL3, explain(report) + err
    for check in ("threshold-inline", "threshold-boundary"):
        detail = report_detail(report, check)
        assert detail.startswith("list_memories("), detail
        assert f"(not judged on recall_memories(" in detail and VARIES in detail, detail


def test_a_third_party_tool_echoing_its_environment_is_named_not_failed():
    """server-everything's get-env echoes the environment each launch gets: with
    no other call to judge on, the threshold checks are skipped with the reason,
    not failed as an inline answer the layer changed."""
    npm_ci(NPM_SERVERS)
    target = [str(LRO), "proxy", "--", "node", str(EVERYTHING_JS), "stdio"]
    code, report, err, _ = run_audit("--keep-going", "--probe", "get-env {}", "--", *target)
    assert code == 0 and report is not None, err
    for check in ("threshold-inline", "threshold-boundary"):
        assert status(report)[check] == "skip", explain(report)
        assert VARIES in report_detail(report, check), explain(report)
    assert "changed" not in explain(report), explain(report)


# violation -> (the check that must catch it, the highest level still proven)
VIOLATIONS = {
    "per-record-threshold": ("threshold-aggregate", 0),
    "header-count-off": ("jsonl-count", 0),
    "no-header": ("jsonl-header", 0),
    "score-recipe": ("recipes-fields", 1),
    "nine-recipes": ("recipes-count", 1),
    "medium-confidence-path": ("recipes-confidence", 1),
    "no-cleanup": ("cleanup", 1),
    "fail-on-write-failure": ("write-failure-fallback", 2),
    "silent-truncation": ("write-failure-fallback", 2),
    "shell-recipe": ("recipes-run", 1),
}


@pytest.fixture(scope="module")
def violation_reports(tmp_path_factory) -> dict[str, tuple[int, dict | None, str]]:
    """Every violation audited, three at a time (each audit mostly waits on its server)."""
    marker_dir = tmp_path_factory.mktemp("markers")

    def one(name: str):
        marker = marker_dir / f"{name}.marker"
        code, report, err, _ = run_audit("--env", f"FIXTURE_MARKER={marker}", "--", *fixture_cmd("--violate", name))
        return name, (code, report, err)

    with ThreadPoolExecutor(max_workers=3) as pool:
        reports = dict(pool.map(one, VIOLATIONS))
    reports["_markers"] = sorted(p.name for p in marker_dir.iterdir())  # type: ignore[assignment]
    return reports


@pytest.mark.parametrize("violation", sorted(VIOLATIONS))
def test_each_violation_is_caught_by_its_named_check(violation_reports, violation: str):
    check, cap = VIOLATIONS[violation]
    code, report, err = violation_reports[violation]
    assert code == 0 and report is not None, err
    got = {c["id"]: c for c in report["checks"]}
    assert got[check]["status"] == "fail", f"{violation}: {check} should fail\n" + explain(report)
    assert report["level"] == cap, f"{violation}: expected Level {cap}\n" + explain(report)
    assert check in report["verdict"], report["verdict"]


def test_keep_going_judges_the_levels_above_a_failed_one():
    """Without --keep-going a failed Level 1 skips everything above it (see the
    --no-lro test); with it every check is judged and the verdict is unchanged."""
    code, report, err, _ = run_audit("--keep-going", "--", *fixture_cmd("--violate", "header-count-off"))
    assert code == 0 and report["level"] == 0, explain(report) + err
    got = status(report)
    assert got["jsonl-count"] == "fail", explain(report)
    above = {c["id"]: c["status"] for c in report["checks"] if c["level"] in (LEVEL2, LEVEL3)}
    assert set(above.values()) == {"pass"}, explain(report)


def test_recipes_never_reach_a_shell(violation_reports):
    """The shell-recipe fixture's recipe appends `; touch MARKER`: refused by
    shape, never run, so no marker file appears."""
    code, report, _ = violation_reports["shell-recipe"]
    detail = {c["id"]: c["detail"] for c in report["checks"]}["recipes-run"]
    assert "not in the spec's shape" in detail, detail
    assert violation_reports["_markers"] == [], violation_reports["_markers"]


def test_only_the_spec_tools_are_called(tmp_path: Path):
    """The fixture also lists `forget_all`, which writes a marker when called:
    the auditor must never call a tool that neither a probe nor the spec names."""
    marker = tmp_path / "forget_all.marker"
    code, report, err, _ = run_audit("--env", f"FIXTURE_MARKER={marker}", "--", *fixture_cmd())
    assert code == 0 and report["level"] == LEVEL3, explain(report) + err
    assert not marker.exists(), "the auditor called forget_all"


def test_events_are_observed_on_a_metrics_endpoint():
    """The fixture reports its events only as Prometheus counters: --metrics finds them."""
    port = free_port()
    code, report, err, _ = run_audit(
        "--metrics", f"http://127.0.0.1:{port}/metrics", "--env", f"FIXTURE_METRICS_PORT={port}", "--", *fixture_cmd()
    )
    assert code == 0 and report["level"] == LEVEL3, explain(report) + err
    details = {c["id"]: c["detail"] for c in report["checks"]}
    assert details["write-failure-event"].startswith("in the metrics: fixture_offload_write_failed_total"), details
    assert details["file-expired-event"].startswith("in the metrics: fixture_offload_file_expired_total"), details


def test_events_missing_from_stderr_fail_without_metrics():
    """Without --metrics the same server shows no event: Level 2, and the evidence names --metrics."""
    code, report, err, _ = run_audit("--env", f"FIXTURE_METRICS_PORT={free_port()}", "--", *fixture_cmd())
    assert code == 0 and report["level"] == LEVEL2, explain(report) + err
    assert "--metrics" in {c["id"]: c["detail"] for c in report["checks"]}["write-failure-event"]


def test_probes_replace_the_spec_tools():
    code, report, err, _ = run_audit(
        "--probe", 'recall_memories {"query": "deploy", "detail": "medium", "limit": 120}', "--", *fixture_cmd()
    )
    assert code == 0, err
    probes = {c["id"]: c["detail"] for c in report["checks"]}["probes"]
    assert probes.startswith("1 call: recall_memories("), probes
    # One call at medium shows Levels 1 and 2; it proves as much as it can.
    assert report["level"] >= LEVEL2, explain(report)


# ---------------------------------------------------------------------------
# A running server over streamable HTTP


def test_url_target_skips_what_needs_control(tmp_path: Path):
    out = tmp_path / "offload"
    out.mkdir()
    server = Background(
        [MEMORY_SERVER, "--http", "127.0.0.1:0"],
        {**env(), "ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR": str(out)},
        tmp_path / "memory-server.err",
    )
    try:
        url = server.wait_url()
        assert url.endswith("/mcp"), url
        code, report, err, _ = run_audit("--url", url)
        assert code == 0, err
        # Sessionless 2026-07-28 over streamable HTTP.
        assert report["wire"] == {"asked": "auto", **MODERN}, report["wire"]
        st = status(report)
        for needs_control in ("threshold-aggregate", "threshold-boundary"):
            assert st[needs_control] == "skip", explain(report)
        # Same host: the files are readable, so the file checks ran.
        assert st["jsonl-header"] == "pass" and st["jsonl-count"] == "pass", explain(report)
        assert report["level"] == 0
        assert report["verdict"].startswith("Level 0 — Level 1 blocked by: threshold-aggregate"), report["verdict"]
    finally:
        server.stop()


# ---------------------------------------------------------------------------
# Exit statuses


@pytest.mark.parametrize(
    "args",
    [
        ["--", "/nonexistent/lro-server"],
        ["--url", f"http://127.0.0.1:{free_port()}/mcp"],
        ["--", sys.executable, "-c", "import sys; sys.exit(1)"],
    ],
    ids=["missing-program", "closed-port", "exits-at-once"],
)
def test_unreachable_target_exits_3(args: list[str]):
    code, report, err, _ = run_audit(*args, timeout=60)
    assert code == EXIT_UNREACHABLE, err
    assert report is None and "cannot reach" in err, err


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--require-level", "4", "--", "x"],
        ["--probe", "tool [1]", "--", "x"],
        ["--url", "http://127.0.0.1:1/mcp", "--", "x"],
        ["--env", "K=V", "--url", "http://127.0.0.1:1/mcp"],
        ["--wire", "2024-11-05", "--", "x"],
    ],
    ids=["no-target", "level-4", "probe-not-object", "url-and-command", "env-with-url", "unknown-wire"],
)
def test_usage_errors_exit_2(args: list[str]):
    code, _, err, _ = run_audit(*args, timeout=30)
    assert code == EXIT_USAGE, err

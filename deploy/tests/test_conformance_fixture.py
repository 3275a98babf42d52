"""The pinned MCP conformance suite passes against the project's fixture server.

This is the yardstick for the tests that put `lro proxy` between the suite and
a server: the suite (npm @modelcontextprotocol/conformance 0.2.0-alpha.12 with
its 2026-07-28 and 2025-11-25 requirement sets, and 0.1.16's active suite,
pinned in deploy/conformance/package.json) runs against
deploy/conformance/fixture/everything.py directly, and every scenario a run
scores must pass. If this fails, the fixture or the harness (install, Node,
result parsing) is broken, not LRO.

The runs are the `side_by_side` session fixture's (deploy/tests/conftest.py),
shared with test_conformance_proxy.py. Needs Node >= 22 (testkit.node) and
npm; testkit/npm-ci.sh installs the rest. Uses only 127.0.0.1.
"""

from __future__ import annotations

import json
import re

import pytest

import conformance
from conformance import RUNS

# The scenarios 0.1.16's active suite runs (`conformance server` without
# --scenario): its pending ones, json-schema-2020-12 and server-sse-polling, left out.
ACTIVE_016 = [
    "server-initialize", "logging-set-level", "ping", "completion-complete", "tools-list",
    "tools-call-simple-text", "tools-call-image", "tools-call-audio", "tools-call-embedded-resource",
    "tools-call-mixed-content", "tools-call-with-logging", "tools-call-error", "tools-call-with-progress",
    "tools-call-sampling", "tools-call-elicitation", "elicitation-sep1034-defaults", "server-sse-multiple-streams",
    "elicitation-sep1330-enums", "resources-list", "resources-read-text", "resources-read-binary",
    "resources-templates-read", "resources-subscribe", "resources-unsubscribe", "prompts-list", "prompts-get-simple",
    "prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image", "dns-rebinding-protection",
]
# How many scenarios each frozen requirement set scores (the suite's requirements/*.yaml).
SCORED_COUNT = {"2026-07-28": 37, "2025-11-25": 30}


def test_the_suites_are_pinned_exactly():
    """package.json pins both suites to one version each; the installed ones are those."""
    conformance.ensure_installed()
    deps = json.loads((conformance.CONF_DIR / "package.json").read_text(encoding="utf-8"))["dependencies"]
    loose = {name: v for name, v in deps.items() if not re.fullmatch(r"(npm:@[\w./-]+@)?\d+\.\d+\.\d+(-[\w.]+)?", v)}
    assert not loose, f"not pinned to an exact version: {loose}"
    assert deps["@modelcontextprotocol/conformance"] == conformance.SUITE_VERSION
    assert deps["conformance-016"] == f"npm:@modelcontextprotocol/conformance@{conformance.LEGACY_SUITE}"
    assert {suite: conformance.installed_version(suite) for suite in conformance.SUITES} == {s: s for s in conformance.SUITES}


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.label)
def test_every_scored_scenario_runs(side_by_side, run):
    assert run not in side_by_side.errors["direct"], side_by_side.errors["direct"][run]
    direct = side_by_side.results["direct"][run]
    scored = conformance.scored(run)
    if scored is None:
        assert sorted(direct) == sorted(ACTIVE_016)
    else:
        assert len(scored) == SCORED_COUNT[run.requirements]
        assert set(scored) <= set(direct), f"not run: {sorted(set(scored) - set(direct))}"


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.label)
def test_every_scored_scenario_passes_directly(side_by_side, run):
    direct = side_by_side.results["direct"][run]
    counted = {name: r for name, r in direct.items() if name in (conformance.scored(run) or direct)}
    bad = {name: r for name, r in counted.items() if not r["passed"] or r["warnings"]}
    assert not bad, conformance.describe_failures(bad)

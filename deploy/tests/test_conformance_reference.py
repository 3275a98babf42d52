"""The pinned MCP conformance suite passes against its own reference server.

This is the yardstick for the tests that put LRO between a client and a server:
the suite (npm @modelcontextprotocol/conformance, pinned in
deploy/conformance/package.json) runs its active server scenarios against the
reference "everything" server (deploy/conformance/reference/), directly, and
every scenario must pass: 30 scenarios, 40 checks, as upstream states for this
version. If this fails, the harness (install, Node shim, server start, result
parsing) is broken, not LRO.

Needs node >= 20 and npm; testkit/npm-ci.sh installs the rest (npm registry,
once; .ci/run does it ahead of the tests). Uses only 127.0.0.1.
Takes about 4-5 s once installed (server start ~1 s, active suite ~2.5 s).
"""

from __future__ import annotations

import json
import os
import re
import socket
import urllib.parse
from dataclasses import dataclass

import pytest

import conformance

# The active server suite of conformance 0.1.16 (`conformance server` without
# --scenario; the pending ones, json-schema-2020-12 and server-sse-polling, are
# left out by the suite itself).
ACTIVE_SCENARIOS = [
    "server-initialize",
    "logging-set-level",
    "ping",
    "completion-complete",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "server-sse-multiple-streams",
    "elicitation-sep1330-enums",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "dns-rebinding-protection",
]
EXPECTED_CHECKS = 40  # SUCCESS checks over the active suite, per the suite's README for 0.1.16


@dataclass
class ReferenceRun:
    url: str
    pgid: int  # the server's process group, gone once the context manager exits
    results: dict[str, dict]  # the active suite
    single: dict[str, dict]  # run_suite(url, SINGLE)


SINGLE = "tools-call-simple-text"


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> ReferenceRun:
    conformance.ensure_installed()
    with conformance.start_reference_server(log_dir=tmp_path_factory.mktemp("reference")) as url:
        pgid = os.getpgid(_listener_pid(url))
        results = conformance.run_suite(url)
        single = conformance.run_suite(url, SINGLE)
    return ReferenceRun(url, pgid, results, single)


def test_everything_is_pinned_exactly():
    """package.json pins every dependency to one version; the installed suite is that version."""
    conformance.ensure_installed()
    pkg = json.loads((conformance.CONF_DIR / "package.json").read_text(encoding="utf-8"))
    deps = {**pkg["dependencies"], **pkg["devDependencies"]}
    loose = {name: v for name, v in deps.items() if not re.fullmatch(r"\d+\.\d+\.\d+", v)}
    assert not loose, f"not pinned to an exact version: {loose}"
    assert deps["@modelcontextprotocol/conformance"] == conformance.SUITE_VERSION
    installed = json.loads((conformance.SUITE_PKG / "package.json").read_text(encoding="utf-8"))
    assert installed["version"] == conformance.SUITE_VERSION


def test_active_suite_is_the_expected_scenarios(reference):
    assert sorted(reference.results) == sorted(ACTIVE_SCENARIOS)


@pytest.mark.parametrize("scenario", ACTIVE_SCENARIOS)
def test_scenario_passes(reference, scenario):
    result = reference.results[scenario]
    assert result["passed"] and result["failures"] == 0 and result["warnings"] == 0, conformance.describe_failures({scenario: result})


def test_every_check_passes(reference):
    total = sum(r["successes"] for r in reference.results.values())
    assert total == EXPECTED_CHECKS, conformance.describe_failures(reference.results)


def test_single_scenario_run(reference):
    assert list(reference.single) == [SINGLE], list(reference.single)
    assert reference.single[SINGLE]["passed"], conformance.describe_failures(reference.single)


def test_server_stopped_with_its_whole_process_group(reference):
    with pytest.raises(ProcessLookupError):
        os.killpg(reference.pgid, 0)
    port = urllib.parse.urlsplit(reference.url).port
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0, f"port {port} still open after the server stopped"


def _listener_pid(url: str) -> int:
    """The pid of the process listening on the URL's port (from /proc, Linux)."""
    port = urllib.parse.urlsplit(url).port
    inodes = set()
    with open("/proc/net/tcp", encoding="ascii") as f:
        for line in f.readlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and int(cols[1].split(":")[1], 16) == port:  # 0A: LISTEN
                inodes.add(cols[9])
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:[") and target[8:-1] in inodes:
                    return int(pid)
        except OSError:
            continue
    raise AssertionError(f"no process listens on port {port}")

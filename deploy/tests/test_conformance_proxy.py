"""The MCP conformance suite passes through `lro proxy` wherever it passes direct.

The pinned suite (deploy/conformance) runs its active server scenarios twice in
one session: against the reference "everything" server directly, and against
`lro proxy --http 127.0.0.1:0 --url <reference>`, so every message crosses the
proxy's own streamable-HTTP face, its forwarding handler, the LRO layer and its
HTTP client. Every scenario that passes direct must pass through the proxy:
sampling and elicitation round trips, progress and log notifications in the
middle of a call, resource subscriptions, prompts, completion, and
`dns-rebinding-protection`, which here hits the proxy's face (a foreign Host
and Origin must be refused, the proxy's own must be served).

Needs the debug `lro` binary (the `binaries` fixture of testkit), node >= 20
and deploy/conformance's npm install (testkit/npm-ci.sh). Uses only
127.0.0.1. Takes about 10 s.
"""

from __future__ import annotations

import os

import pytest

import conformance
from testkit.paths import LRO
from testkit.procs import Background

READY_TIMEOUT_S = 30


@pytest.fixture(scope="module")
def results(binaries, tmp_path_factory) -> tuple[dict, dict]:
    conformance.ensure_installed()
    out = tmp_path_factory.mktemp("lro-out")
    with conformance.start_reference_server() as url:
        direct = conformance.run_suite(url)
        env = {**os.environ, "ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR": str(out), "RUST_LOG": "warn"}
        proxy = Background(
            [LRO, "proxy", "--http", "127.0.0.1:0", "--url", url],
            env,
            tmp_path_factory.mktemp("lro-proxy") / "proxy.err",
            new_session=True,
        )
        try:
            # The URL from the proxy's readiness line; its stderr keeps draining after.
            proxy_url = proxy.wait_url(READY_TIMEOUT_S)
            through = conformance.run_suite(proxy_url)
        finally:
            proxy.proc.terminate()
            try:
                assert proxy.wait_exit(30) == 0, "lro proxy did not stop cleanly on SIGTERM"
            finally:
                proxy.stop()
    return direct, through


def test_every_scenario_that_passes_direct_passes_through_the_proxy(results):
    direct, through = results
    passing = sorted(name for name, r in direct.items() if r["passed"])
    assert len(passing) >= 30, f"the reference server itself fails: {conformance.describe_failures(direct)}"
    broken = [name for name in passing if not through.get(name, {}).get("passed")]
    assert broken == [], "through lro proxy:\n" + conformance.describe_failures(
        {name: through.get(name, {"checks": []}) for name in broken}
    )


def test_the_proxy_face_refuses_dns_rebinding(results):
    _, through = results
    assert through["dns-rebinding-protection"]["passed"], conformance.describe_failures(
        {"dns-rebinding-protection": through["dns-rebinding-protection"]}
    )

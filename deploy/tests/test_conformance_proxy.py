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

Needs the debug `lro` binary (`cargo build --workspace --bins` runs first in
.ci/test), node >= 20 and deploy/conformance/setup.sh's install. Uses only
127.0.0.1. Takes about 10 s.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
from pathlib import Path

import pytest

import conformance

REPO = Path(__file__).resolve().parents[2]
LRO = REPO / "target" / "debug" / "lro"
READY_TIMEOUT_S = 30


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> tuple[dict, dict]:
    assert LRO.is_file(), f"{LRO} missing: run `cargo build --workspace --bins`"
    conformance.ensure_installed()
    out = tmp_path_factory.mktemp("lro-out")
    with conformance.start_reference_server() as url:
        direct = conformance.run_suite(url)
        env = {**os.environ, "ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR": str(out), "RUST_LOG": "warn"}
        proxy = subprocess.Popen(
            [str(LRO), "proxy", "--http", "127.0.0.1:0", "--url", url],
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
            start_new_session=True,
        )
        try:
            proxy_url = _wait_for_listening(proxy)
            through = conformance.run_suite(proxy_url)
        finally:
            proxy.terminate()
            assert proxy.wait(timeout=30) == 0, "lro proxy did not stop cleanly on SIGTERM"
    return direct, through


def _wait_for_listening(proc: subprocess.Popen) -> str:
    """The URL from the proxy's readiness line; its stderr keeps draining after."""
    found: list[str] = []
    ready = threading.Event()
    lines: list[str] = []

    def read() -> None:
        for line in proc.stderr:
            lines.append(line)
            m = re.search(r"listening on (http://\S+)", line)
            if m and not found:
                found.append(m.group(1))
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    assert ready.wait(READY_TIMEOUT_S) and found, "lro proxy never got ready:\n" + "".join(lines[-40:])
    return found[0]


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

"""The MCP conformance suite passes through `lro proxy` wherever it passes directly.

The pinned suite (deploy/conformance) runs its 2026-07-28 and 2025-11-25
requirement sets (0.2.0-alpha.12) and 0.1.16's active suite against the
project's fixture server three ways (conformance.TARGETS): directly, through
`lro proxy --http 127.0.0.1:0 --url <fixture>` and through
`lro proxy --http 127.0.0.1:0 -- python3 everything.py stdio`. Every message
crosses the proxy's streamable-HTTP face, its forwarding handler, the LRO
layer and its upstream transport. Every scenario that passes directly must
pass through the proxy; `dns-rebinding-protection` there hits the proxy's own
face (a foreign Host and Origin refused, its own served).

Each proxy serves the three runs back to back (2026-07-28, then 2025-11-25,
then 0.1.16), and each must score as the fixture does fresh: a 2026-07-28
run leaves its principal's sessionless child holding one of the children,
which the later runs' sessions, counted with it, reclaim when idle (0.1.16
used to lose 15 of 30 scenarios to "too many sessions" after it).

The table of scenario x target is printed in the terminal summary
(deploy/tests/conftest.py). Needs the debug `lro` binary, Node >= 22 and
deploy/conformance's npm install. Uses only 127.0.0.1.
"""

from __future__ import annotations

import pytest

import conformance
from conformance import RUNS, Run

PROXIES = [target for target in conformance.TARGETS if target != "direct"]

def cases() -> list:
    return [
        pytest.param(target, run, id=f"{target}, {run.label}")
        for target in PROXIES
        for run in RUNS
    ]


@pytest.mark.parametrize(("target", "run"), cases())
def test_every_scenario_that_passes_directly_passes_through_the_proxy(side_by_side, target: str, run: Run):
    assert run not in side_by_side.errors[target], side_by_side.errors[target][run]
    direct = side_by_side.results["direct"][run]
    through = side_by_side.results[target][run]
    assert len(conformance.passing(direct)) >= 30, f"the fixture itself fails:\n{conformance.describe_failures(direct)}"
    broken = sorted(conformance.passing(direct) - conformance.passing(through))
    assert broken == [], f"through lro {target}:\n" + conformance.describe_failures(
        {name: through.get(name, {"passed": False, "successes": 0, "failures": 0, "warnings": 0, "checks": []}) for name in broken}
    )


@pytest.mark.parametrize("target", PROXIES)
@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.label)
def test_the_proxy_face_refuses_dns_rebinding(side_by_side, target: str, run: Run):
    assert run not in side_by_side.errors[target], side_by_side.errors[target][run]
    result = side_by_side.results[target][run]["dns-rebinding-protection"]
    assert result["passed"], conformance.describe_failures({"dns-rebinding-protection": result})


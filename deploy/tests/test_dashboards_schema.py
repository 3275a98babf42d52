"""The dashboards are what Grafana accepts, by Grafana's own published types.

No Grafana server can be installed from the registries here, so each
dashboard in dashboards/ is written out as a TypeScript literal that
`satisfies` `@grafana/schema`'s `Dashboard` (deploy/grafana/schema/wire.ts)
and checked by the pinned `tsc --noEmit`: a missing required field, a value
of the wrong type and an unknown key each fail with tsc's message. Broken
copies of a dashboard prove that the check can fail.

Needs: Node.js >= 20 with npm (./.ci/run installs the pinned package).
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from testkit.npm import npm_ci
from testkit.paths import REPO

SCHEMA = REPO / "deploy" / "grafana" / "schema"
DASHBOARDS = sorted((REPO / "dashboards").glob("*.json"))
TSC_TIMEOUT_S = 180


def broken(dashboards: dict[str, dict]) -> dict[str, tuple[dict, str]]:
    """Copies of the first dashboard, each with one fault, and the text tsc must report for it."""
    first = next(iter(dashboards.values()))
    unknown_key = copy.deepcopy(first)
    unknown_key["panels"][0]["colour"] = "red"
    missing = copy.deepcopy(first)
    del missing["links"][0]["tooltip"]
    wrong_type = copy.deepcopy(first)
    wrong_type["templating"]["list"][1]["refresh"] = 7
    return {
        "unknown-key": (unknown_key, "'\"colour\"' does not exist"),
        "missing-field": (missing, "Property 'tooltip' is missing"),
        "wrong-type": (wrong_type, "Type '7' is not assignable"),
    }


def tsc(work: Path, sources: dict[str, dict]) -> dict[str, list[str]]:
    """Runs the pinned tsc over one `NAME.ts` per source; tsc's errors by file name."""
    (work / "node_modules").symlink_to(SCHEMA / "node_modules", target_is_directory=True)
    shutil.copy(SCHEMA / "wire.ts", work / "wire.ts")
    for name, dashboard in sources.items():
        literal = json.dumps(dashboard, indent=1)
        (work / f"{name}.ts").write_text(
            f'import type {{ WireDashboard }} from "./wire";\n\nexport const dashboard = {literal} satisfies WireDashboard;\n',
            encoding="utf-8",
        )
    config = {"extends": str(SCHEMA / "tsconfig.json"), "files": [f"{name}.ts" for name in sources]}
    (work / "tsconfig.json").write_text(json.dumps(config), encoding="utf-8")
    proc = subprocess.run(
        ["node", str(SCHEMA / "node_modules" / "typescript" / "bin" / "tsc"), "-p", str(work)],
        cwd=work, capture_output=True, text=True, timeout=TSC_TIMEOUT_S,
    )
    errors: dict[str, list[str]] = {name: [] for name in sources}
    for line in proc.stdout.splitlines():
        found = re.match(r"(?P<name>[\w-]+)\.ts\(\d+,\d+\): error (?P<text>.*)", line)
        if found:
            errors[found["name"]].append(found["text"])
    assert proc.returncode in (0, 1, 2), f"tsc failed to run ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    assert proc.stderr == "", proc.stderr
    return errors


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> tuple[dict[str, list[str]], dict[str, str]]:
    """tsc's errors for every dashboard and every broken copy, from one run; and what each copy must report."""
    npm_ci(SCHEMA)
    dashboards = {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in DASHBOARDS}
    faults = broken(dashboards)
    sources = dashboards | {name: dashboard for name, (dashboard, _) in faults.items()}
    errors = tsc(tmp_path_factory.mktemp("grafana-schema"), sources)
    return errors, {name: expected for name, (_, expected) in faults.items()}


def test_there_are_dashboards_to_check():
    assert {p.stem for p in DASHBOARDS} >= {"lro-overview", "lro-conformance"}


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.stem)
def test_dashboard_satisfies_grafanas_published_type(path, checked):
    errors, _ = checked
    assert errors[path.stem] == [], "\n".join(errors[path.stem])


@pytest.mark.parametrize("fault", ["unknown-key", "missing-field", "wrong-type"])
def test_a_broken_dashboard_fails_the_check(fault, checked):
    errors, expected = checked
    assert any(expected[fault] in e for e in errors[fault]), f"{fault}: tsc said {errors[fault]}"

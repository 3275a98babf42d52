"""Structural checks of the Grafana dashboards and the alert rules.

- provisionable: a `datasource` variable of type datasource, no __inputs;
- every panel, rows' nested panels included, and every target uses
  ${datasource}; every panel has a unit and a unique id;
- every rate()/irate()/increase() uses [$__rate_interval];
- every metric name in any expression, variable query or alert rule is one
  of deploy/metrics.json (generated from `lro_core::metric::catalogue`, also
  printed by `lro metrics --json`; histograms as _bucket/_sum/_count), and
  every label used in a matcher belongs to that metric, and every value a
  matcher or a promtool test series gives a closed label (outcome, reason,
  method, code, …) is a value of its label set.

Metric names and label values below come from that catalogue (lrolib.M, lrolib.L).
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import yaml

from lrolib import (
    BUCKET,
    DASHBOARDS,
    DS_REF,
    PROM_DIR,
    RATE_INTERVAL,
    REPO,
    L,
    M,
    check_expr,
    closed_value_problems,
    content_panels,
    iter_panels,
    load_dashboard,
    load_metrics,
    load_rules,
    panel_exprs,
    resolve_series,
    rate_windows,
    runbook_anchors,
    scan,
    split_label_values,
    variable_query,
)

METRICS = load_metrics()
OUTCOME = L.ToolOutcome
EXIT = L.UpstreamExit
METHOD = L.UpstreamMethod


@pytest.fixture(params=DASHBOARDS)
def dash(request) -> dict:
    return load_dashboard(request.param)


# ---------------------------------------------------------------- the checker itself


# A name the catalogue does not have, in the catalogue's own naming style.
BOGUS = M.TOOL_RESULTS_TOTAL + "_bogus"


def test_metric_catalogue_parsed():
    assert M.TOOL_RESULTS_TOTAL in METRICS
    assert METRICS[M.TOOL_RESULTS_TOTAL].labels == ("tool", "outcome")
    assert METRICS[M.OFFLOAD_WRITE_DURATION_SECONDS].kind == "Histogram"
    assert METRICS[M.BUILD_INFO].labels == ("version", "conformance_level")
    assert len(METRICS) >= 18


def test_catalogue_lookups_fail_loudly():
    """A mistyped key is an error naming the key, not a query that matches nothing."""
    with pytest.raises(AttributeError, match="TOOL_RESULT_TOTAL"):
        M.TOOL_RESULT_TOTAL  # noqa: B018
    with pytest.raises(AttributeError, match="Outcome"):
        L.Outcome  # noqa: B018
    with pytest.raises(AttributeError, match="Inlined"):
        OUTCOME.Inlined  # noqa: B018


@pytest.mark.parametrize(
    "expr, complaint",
    [
        (f'sum(rate({BOGUS}{{job="x"}}[$__rate_interval]))', f"unknown metric '{BOGUS}'"),
        (M.OFFLOAD_WRITE_DURATION_SECONDS, "unknown metric"),  # histogram without suffix
        (f'sum({M.OFFLOAD_WRITE_FAILURES_TOTAL}{{tool="x"}})', "no label 'tool'"),
        (f"sum by (tool) ({M.CLEANUP_RUNS_TOTAL})", "grouping label 'tool'"),
        (M.BUILD_INFO + "_total", "unknown metric"),
    ],
)
def test_checker_rejects(expr, complaint):
    assert any(complaint in p for p in check_expr(expr, METRICS)), check_expr(expr, METRICS)


@pytest.mark.parametrize(
    "expr",
    [
        f'histogram_quantile(0.99, sum by (le) (rate({M.OFFLOAD_WRITE_DURATION_SECONDS}{BUCKET}{{tool=~"$tool"}}[$__rate_interval])))',
        f"time() - max by (job, instance) ({M.CLEANUP_LAST_SUCCESS_TIMESTAMP_SECONDS}) > 2 * 3600",
        'up{job="memory-server"} == 0',
        f"absent({M.BUILD_INFO})",
    ],
)
def test_checker_accepts(expr):
    assert check_expr(expr, METRICS) == []


@pytest.mark.parametrize(
    "expr, bad",
    [
        (f'sum(increase({M.UPSTREAM_EXITS_TOTAL}{{{EXIT.label}!="{EXIT.Shutdown}x"}}[10m]))', EXIT.Shutdown + "x"),
        (f'{M.TOOL_RESULTS_TOTAL}{{job="x", {OUTCOME.label}="{OUTCOME.Offloaded.upper()}"}}', OUTCOME.Offloaded.upper()),
        (f'rate({M.UPSTREAM_REQUEST_DURATION_SECONDS}{BUCKET}{{{METHOD.label}=~"{METHOD.ToolsCall}|bogus"}}[5m])', "bogus"),
    ],
)
def test_closed_value_checker_rejects(expr, bad):
    problems = closed_value_problems(expr)
    assert len(problems) == 1 and repr(bad) in problems[0], problems


@pytest.mark.parametrize(
    "expr",
    [
        f'{M.UPSTREAM_EXITS_TOTAL}{{{EXIT.label}!="{EXIT.Shutdown}"}}',
        f'{M.UPSTREAM_EXITS_TOTAL}{{{EXIT.label}=~"{EXIT.Failed}|{EXIT.Exited}", job="any-job"}}',
        f'{M.TOOL_RESULTS_TOTAL}{{tool="anything", {OUTCOME.label}=~"$outcome"}}',  # open label; a variable
        'up{job="memory-server"}',
    ],
)
def test_closed_value_checker_accepts(expr):
    assert closed_value_problems(expr) == []


def test_dashboards_are_generated_from_source():
    """dashboards/*.json match deploy/tools/build_dashboards.py (no hand edits lost)."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "deploy" / "tools" / "build_dashboards.py"), "--check"],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr


# ---------------------------------------------------------------- dashboards


def test_provisionable(dash):
    assert "__inputs" not in dash and "__requires" not in dash
    assert dash.get("id") is None, "provisioned dashboards must not pin a database id"
    assert re.fullmatch(r"[a-z0-9-]{1,40}", dash["uid"])
    assert dash["schemaVersion"] >= 39
    assert dash["title"]


def test_template_variables(dash):
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    ds = variables["datasource"]
    assert ds["type"] == "datasource" and ds["query"] == "prometheus"
    assert [v["name"] for v in dash["templating"]["list"] if v["type"] == "datasource"] == ["datasource"]
    for name in ("job", "instance", "tool"):
        v = variables[name]
        assert v["type"] == "query"
        assert v["multi"] is True and v["includeAll"] is True
        assert v["datasource"] == DS_REF
        selector, label = split_label_values(variable_query(v))
        assert label == name
        assert selector and scan(selector).metrics, f"{name}: label_values over an lro metric"
        assert check_expr(selector, METRICS) == []
        assert label in {l for m in scan(selector).metrics for l in resolve_series(m, METRICS)[1]}


def test_every_datasource_reference_is_the_variable(dash):
    """No hard-coded data source anywhere (the built-in annotation aside)."""
    found = []

    def walk(node, path):
        if isinstance(node, dict):
            if "datasource" in node:
                found.append((path, node["datasource"]))
            for k, v in node.items():
                walk(v, f"{path}.{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{path}[{i}]")

    walk({k: v for k, v in dash.items() if k != "annotations"}, "")
    assert found, "no datasource references at all"
    assert [(p, d) for p, d in found if d != DS_REF] == []


def test_panels(dash):
    panels = content_panels(dash)
    assert len(panels) >= 6
    for p in panels:
        where = f"panel {p.get('id')} {p.get('title')!r}"
        assert p.get("title"), where
        assert p.get("datasource") == DS_REF, where
        assert p.get("fieldConfig", {}).get("defaults", {}).get("unit"), f"{where}: no unit"
        assert p.get("targets"), f"{where}: no targets"
        for t in p["targets"]:
            assert t.get("datasource") == DS_REF, f"{where} target {t.get('refId')}"
            assert t.get("expr", "").strip(), f"{where} target {t.get('refId')}: no expr"
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs)), f"{where}: duplicate refIds"


def test_unique_ids_and_layout(dash):
    every = list(iter_panels(dash))
    ids = [p["id"] for p in every]
    assert all(isinstance(i, int) for i in ids)
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    cells = set()
    for p in every:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24, p["title"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, f"{p['title']!r} overlaps another panel"
                cells.add((x, y))


def test_rate_interval(dash):
    for title, ref, expr in panel_exprs(dash):
        for arg in rate_windows(expr):
            windows = re.findall(r"\[[^\]]*\]", arg)
            assert windows == [RATE_INTERVAL], f"{title} {ref}: {expr}"
        # No fixed range anywhere else either (subqueries, *_over_time).
        assert set(re.findall(r"\[[^\]]*\]", expr)) <= {RATE_INTERVAL}, f"{title} {ref}: {expr}"


def test_metric_names_are_emitted_by_the_code(dash):
    problems = []
    for title, ref, expr in panel_exprs(dash):
        for p in check_expr(expr, METRICS):
            problems.append(f"{title} [{ref}]: {p}")
    assert problems == []


def test_overview_covers_the_brief():
    dash = load_dashboard("lro-overview.json")
    exprs = " ".join(e for _, _, e in panel_exprs(dash))
    for needed in [
        OUTCOME.eq(OUTCOME.Offloaded),
        f"sum by (outcome) (rate({M.TOOL_RESULTS_TOTAL}",
        M.ESTIMATED_TOKENS_SAVED_TOTAL,
        M.OFFLOADED_BYTES_TOTAL,
        M.OFFLOAD_WRITE_FAILURES_TOTAL,
        M.RESULT_ESTIMATED_TOKENS + BUCKET,
        M.OFFLOAD_FILES + "{",
        M.OFFLOAD_DISK_BYTES + "{",
        M.CLEANUP_RUNS_TOTAL,
        M.OFFLOAD_FILES_EXPIRED_TOTAL,
        f"time() - max by (instance) ({M.CLEANUP_LAST_SUCCESS_TIMESTAMP_SECONDS}",
        M.EXTRACT_REQUESTS_TOTAL,
    ]:
        assert needed in exprs, needed
    for q in ("0.5", "0.95", "0.99"):
        assert f"histogram_quantile({q}, sum by (le) (rate({M.OFFLOAD_WRITE_DURATION_SECONDS}{BUCKET}" in exprs
    # The lro proxy row: upstream up, sessions, exits by reason, restarts, errors, latency.
    assert "Upstream (lro proxy)" in {p["title"] for p in iter_panels(dash) if p["type"] == "row"}
    for needed in [
        M.UPSTREAM_UP + "{",
        M.UPSTREAM_SESSIONS + "{",
        f"sum by (reason) (increase({M.UPSTREAM_EXITS_TOTAL}",
        f"increase({M.UPSTREAM_RESTARTS_TOTAL}",
        f"sum by (method, code) (rate({M.UPSTREAM_ERRORS_TOTAL}",
    ]:
        assert needed in exprs, needed
    for q in ("0.5", "0.95"):
        assert f"histogram_quantile({q}, sum by (method, le) (rate({M.UPSTREAM_REQUEST_DURATION_SECONDS}{BUCKET}" in exprs
    types = {p["type"] for p in content_panels(dash)}
    assert {"timeseries", "stat", "heatmap", "table"} <= types
    table = next(p for p in content_panels(dash) if p["type"] == "table")
    assert all(t["instant"] and t["format"] == "table" and "by (tool" in t["expr"] for t in table["targets"])


def test_conformance_covers_level_3():
    dash = load_dashboard("lro-conformance.json")
    by_title = {p["title"]: p for p in content_panels(dash)}
    level = by_title["Declared conformance level"]["targets"][0]["expr"]
    assert M.BUILD_INFO in level and "conformance_level" in level
    requirements = {
        "Threshold detection": [OUTCOME.eq(OUTCOME.Inline), OUTCOME.eq(OUTCOME.Offloaded)],
        "JSONL output": [M.OFFLOADED_RECORDS_TOTAL],
        "Custodial cleanup on schedule": [M.CLEANUP_LAST_SUCCESS_TIMESTAMP_SECONDS],
        "Fallback to inline truncation": [OUTCOME.eq(OUTCOME.Truncated), M.OFFLOAD_WRITE_FAILURES_TOTAL],
        "Observability events": [M.CLEANUP_RUNS_TOTAL],
    }
    for title, needles in requirements.items():
        panel = by_title[title]
        assert panel["type"] == "stat"
        expr = panel["targets"][0]["expr"]
        for n in needles:
            assert n in expr, (title, n)
        mapped = {o["text"] for m in panel["fieldConfig"]["defaults"]["mappings"] for o in (m["options"].values() if m["type"] == "value" else [m["options"]["result"]])}
        assert {"PASS", "NOT OBSERVED"} <= mapped


# ---------------------------------------------------------------- alert rules


def test_alert_rules_use_emitted_metrics():
    problems = []
    for rule in load_rules():
        for p in check_expr(rule["expr"], METRICS):
            problems.append(f"{rule.get('alert') or rule.get('record')}: {p}")
    assert problems == []


def test_alert_rules_are_documented():
    anchors = runbook_anchors()
    names = set()
    for rule in load_rules():
        name = rule["alert"]
        names.add(name)
        ann = rule.get("annotations", {})
        assert ann.get("summary") and ann.get("description"), name
        assert rule["labels"]["severity"] in {"warning", "critical"}, name
        url = ann["runbook_url"]
        assert url.startswith("deploy/RUNBOOK.md#"), url
        assert url.split("#", 1)[1] in anchors, f"{name}: no heading for {url} in deploy/RUNBOOK.md"
        assert url.split("#", 1)[1] == name.lower(), f"{name}: anchor should be #{name.lower()}"
    assert names == {
        "LroOffloadWriteFailures",
        "LroOffloadWriteFailureRatioHigh",
        "LroCleanupStalled",
        "LroOffloadDiskUsageHigh",
        "LroTargetDown",
        "LroMetricsAbsent",
        "LroUpstreamDown",
        "LroUpstreamFlapping",
        "LroStoreErrors",
    }


def test_closed_label_values_in_rules_and_rule_tests_are_catalogue_values():
    """alerts.yml spells label values (the YAML cannot read the catalogue): each one a rule
    matcher or a promtool input series gives a closed label must still be a catalogue value, so
    a renamed variant fails here instead of silently matching nothing."""
    problems = []
    for rule in load_rules():
        problems += [f"{rule['alert']}: {p}" for p in closed_value_problems(rule["expr"])]
    tests = yaml.safe_load((PROM_DIR / "alerts_test.yml").read_text(encoding="utf-8"))
    for test in tests["tests"]:
        for series in test.get("input_series", []):
            problems += [f"alerts_test.yml {test['name']!r}: {p}" for p in closed_value_problems(series["series"])]
    for dash in DASHBOARDS:
        for title, ref, expr in panel_exprs(load_dashboard(dash)):
            problems += [f"{dash} / {title} [{ref}]: {p}" for p in closed_value_problems(expr)]
    assert problems == []


def test_alert_thresholds():
    rules = {}
    for r in load_rules():
        rules.setdefault(r["alert"], []).append(r)
    assert "> 0.05" in rules["LroOffloadWriteFailureRatioHigh"][0]["expr"]
    assert rules["LroOffloadWriteFailureRatioHigh"][0]["labels"]["severity"] == "critical"
    assert rules["LroOffloadWriteFailures"][0]["labels"]["severity"] == "warning"
    assert "[5m]" in rules["LroOffloadWriteFailures"][0]["expr"]
    stalled = " ".join(r["expr"] for r in rules["LroCleanupStalled"])
    assert "time() - " in stalled and "> 2 * 3600" in stalled
    assert f"absent({M.BUILD_INFO}" in rules["LroMetricsAbsent"][0]["expr"]
    assert "up{" in rules["LroTargetDown"][0]["expr"] and "== 0" in rules["LroTargetDown"][0]["expr"]
    down = rules["LroUpstreamDown"][0]
    assert down["expr"].strip() == f"{M.UPSTREAM_UP} == 0" and down["for"] == "2m"
    assert down["labels"]["severity"] == "critical"
    flapping = rules["LroUpstreamFlapping"][0]
    # Normal session ends never count: every reason but shutdown.
    assert f'{M.UPSTREAM_EXITS_TOTAL}{{{EXIT.label}!="{EXIT.Shutdown}"}}[10m]' in flapping["expr"]
    assert flapping["expr"].strip().endswith(">= 3") and flapping["labels"]["severity"] == "warning"

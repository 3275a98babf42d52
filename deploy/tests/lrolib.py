"""Shared helpers for the deploy/ tests: the metric catalogue, dashboard
traversal and a small PromQL scanner for metric and label names.

The catalogue is deploy/metrics.json, generated from
`lro_core::metric::catalogue` (also printed by `lro metrics --json`) and read
through deploy/tools/catalogue.py, the loader the dashboard generator uses too.
Tests take metric names (`M.TOOL_RESULTS_TOTAL`) and label values
(`L.ToolOutcome.Inline`) from it and never type them
(test_no_hand_typed_names.py enforces it)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import catalogue  # deploy/tools/catalogue.py (on the root pytest.ini's pythonpath)
import yaml
from catalogue import BUCKET, COUNT, EXTRACT_TOOL, HISTOGRAM_SUFFIXES, SUM  # noqa: F401  (re-exported)

from testkit.paths import REPO

CATALOGUE = catalogue.CATALOGUE
CAT = catalogue.load()
M, L = CAT.M, CAT.L  # metric names by Rust constant name; label values by set and variant

DASHBOARD_DIR = REPO / "dashboards"
DASHBOARDS = ["lro-overview.json", "lro-conformance.json"]
PROM_DIR = REPO / "deploy" / "prometheus"
ALERTS = PROM_DIR / "alerts.yml"
RUNBOOK = REPO / "deploy" / "RUNBOOK.md"

DS_REF = {"type": "prometheus", "uid": "${datasource}"}
RATE_INTERVAL = "[$__rate_interval]"

# Series Prometheus adds itself, allowed beside the catalogue.
BUILTIN_SERIES = {"up": ()}
# Labels Prometheus attaches to every scraped series.
TARGET_LABELS = {"job", "instance"}


# ---------------------------------------------------------------------------
# The metric catalogue (deploy/metrics.json)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Metric:
    name: str
    kind: str  # Counter | Gauge | Histogram
    labels: tuple[str, ...] = field(default=())


def load_metrics(path: Path = CATALOGUE) -> dict[str, Metric]:
    """The metric catalogue the code generates (`lro metrics --json`), by name."""
    return {m.name: Metric(m.name, m.type.capitalize(), m.label_names) for m in catalogue.load(path).metrics}


def resolve_series(name: str, metrics: dict[str, Metric]) -> tuple[Metric | None, set[str]]:
    """The catalogue entry behind a series name, and the labels it may carry."""
    if name in BUILTIN_SERIES:
        return Metric(name, "Gauge", ()), set(TARGET_LABELS)
    if name in metrics:
        m = metrics[name]
        if m.kind == "Histogram":  # exposition has only _bucket/_sum/_count
            return None, set()
        return m, set(m.labels) | TARGET_LABELS
    for suffix in HISTOGRAM_SUFFIXES:
        base = name[: -len(suffix)]
        if name.endswith(suffix) and base in metrics and metrics[base].kind == "Histogram":
            extra = {"le"} if suffix == BUCKET else set()
            return metrics[base], set(metrics[base].labels) | TARGET_LABELS | extra
    return None, set()


# ---------------------------------------------------------------------------
# PromQL scanning
# ---------------------------------------------------------------------------

KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right",
    "bool", "and", "or", "unless", "offset", "inf", "nan", "atan2",
}
GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
AGGREGATIONS = {
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
    "bottomk", "topk", "quantile", "limitk", "limit_ratio",
}
_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<var>\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*)
  | (?P<number>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?(?:ms|[smhdwy])*)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<brace>\{)
  | (?P<bracket>\[[^\]]*\])
  | (?P<op>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_MATCHER = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')\s*,?')


@dataclass
class Scan:
    metrics: list[str] = field(default_factory=list)
    # (metric name or None for a bare {…} selector, label names in its matchers)
    selectors: list[tuple[str | None, list[str]]] = field(default_factory=list)
    grouping_labels: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)


def _read_braces(expr: str, start: int) -> tuple[list[str], int]:
    """Parses label matchers from `{` at start; returns label names and the index after `}`."""
    i = start + 1
    labels = []
    while True:
        while i < len(expr) and expr[i].isspace():
            i += 1
        if i < len(expr) and expr[i] == "}":
            return labels, i + 1
        m = _MATCHER.match(expr, i)
        if not m:
            raise ValueError(f"cannot parse label matchers at {expr[start:start + 60]!r}")
        labels.append(m.group(1))
        i = m.end()


def scan(expr: str) -> Scan:
    """Finds metric names, selector labels, grouping labels and function calls."""
    out = Scan()
    tokens: list[tuple[str, str, int]] = []
    i = 0
    while i < len(expr):
        m = _TOKEN.match(expr, i)
        assert m is not None
        kind = m.lastgroup or "op"
        if kind == "brace":
            labels, end = _read_braces(expr, i)
            tokens.append(("selector", ",".join(labels), i))
            i = end
            continue
        if kind != "ws":
            tokens.append((kind, m.group(0), i))
        i = m.end()

    k = 0
    while k < len(tokens):
        kind, text, _ = tokens[k]
        nxt = tokens[k + 1] if k + 1 < len(tokens) else ("", "", 0)
        if kind == "ident":
            if text in GROUPING:
                if nxt[1] == "(":
                    depth, k = 0, k + 1
                    while k < len(tokens):
                        if tokens[k][1] == "(":
                            depth += 1
                        elif tokens[k][1] == ")":
                            depth -= 1
                            if depth == 0:
                                break
                        elif tokens[k][0] == "ident":
                            out.grouping_labels.append(tokens[k][1])
                        k += 1
            elif text in KEYWORDS:
                pass
            elif nxt[1] == "(" or (text in AGGREGATIONS and nxt[1] in ("by", "without")):
                out.functions.append(text)
            else:
                out.metrics.append(text)
                if nxt[0] == "selector":
                    out.selectors.append((text, [l for l in nxt[1].split(",") if l]))
                    k += 1
                else:
                    out.selectors.append((text, []))
        elif kind == "selector":
            out.selectors.append((None, [l for l in text.split(",") if l]))
        k += 1
    return out


_SELECTOR = re.compile(r"(?<![A-Za-z0-9_:])(?P<metric>[A-Za-z_:][A-Za-z0-9_:]*)\s*\{(?P<body>[^{}]*)\}")


def label_matchers(expr: str) -> list[tuple[str, str, str, str]]:
    """(metric, label, operator, value) of every label matcher in `metric{…}` selectors, the
    value unquoted (escapes left as written)."""
    found = []
    for sel in _SELECTOR.finditer(expr):
        for m in _MATCHER.finditer(sel.group("body")):
            found.append((sel.group("metric"), m.group(1), m.group(2), m.group(3)[1:-1]))
    return found


def closed_value_problems(expr: str) -> list[str]:
    """Matchers on a closed label (one with a label set in the catalogue) whose value is not a
    value of that set: `=`/`!=` compare the whole value, `=~`/`!~` each `|` alternative. A
    dashboard variable (`$name`) stands for any value."""
    problems = []
    for metric, label, op, value in label_matchers(expr):
        m, _ = resolve_series(metric, load_metrics())
        if m is None or m.name in BUILTIN_SERIES:
            continue
        closed = {l.name: l for l in CAT.metric(m.name).labels if l.values is not None}
        if label not in closed or "$" in value:
            continue
        wanted = value.split("|") if op in ("=~", "!~") else [value]
        for v in wanted:
            if v not in closed[label].values:
                problems.append(
                    f"{metric}{{{label}{op}{value!r}}}: {v!r} is not a value of label set {closed[label].set} "
                    f"({', '.join(closed[label].values)})"
                )
    return problems


_LABEL_VALUES = re.compile(r"^\s*label_values\(\s*(?:(?P<sel>.*?)\s*,\s*)?(?P<label>[A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$", re.DOTALL)


def split_label_values(query: str) -> tuple[str | None, str]:
    """`label_values(selector, label)` → (selector or None, label)."""
    m = _LABEL_VALUES.match(query)
    if not m:
        raise ValueError(f"not a label_values() query: {query!r}")
    return m.group("sel"), m.group("label")


def check_expr(expr: str, metrics: dict[str, Metric]) -> list[str]:
    """Problems with the metric and label names of one PromQL expression."""
    problems = []
    try:
        s = scan(expr)
    except ValueError as e:
        return [str(e)]
    allowed_grouping = set(TARGET_LABELS) | {"le"}
    for name in s.metrics:
        m, labels = resolve_series(name, metrics)
        if m is None:
            problems.append(f"unknown metric {name!r} (not in {CATALOGUE.relative_to(REPO)})")
        allowed_grouping |= labels
    for name, labels in s.selectors:
        if name is None:
            problems.append("selector without a metric name")
            continue
        _, allowed = resolve_series(name, metrics)
        for label in labels:
            if allowed and label not in allowed:
                problems.append(f"{name} has no label {label!r} (labels: {sorted(allowed)})")
    for label in s.grouping_labels:
        if label not in allowed_grouping:
            problems.append(f"grouping label {label!r} is not a label of any metric in the expression")
    return problems


def rate_windows(expr: str) -> list[str]:
    """The argument text of every rate(/irate(/increase( call."""
    found = []
    for m in re.finditer(r"\b(rate|irate|increase)\s*\(", expr):
        depth, j = 1, m.end()
        while j < len(expr) and depth:
            depth += {"(": 1, ")": -1}.get(expr[j], 0)
            j += 1
        found.append(expr[m.end(): j - 1])
    return found


# ---------------------------------------------------------------------------
# Dashboards and rules
# ---------------------------------------------------------------------------


def load_dashboard(name: str) -> dict:
    return json.loads((DASHBOARD_DIR / name).read_text(encoding="utf-8"))


def iter_panels(dashboard: dict) -> Iterator[dict]:
    """Every panel, rows included, and the panels nested in collapsed rows."""
    for panel in dashboard.get("panels", []):
        yield panel
        for nested in panel.get("panels", []) or []:
            yield nested


def content_panels(dashboard: dict) -> list[dict]:
    return [p for p in iter_panels(dashboard) if p.get("type") != "row"]


def panel_exprs(dashboard: dict) -> list[tuple[str, str, str]]:
    """(panel title, refId, expr) of every target of every panel."""
    return [
        (p.get("title", ""), t.get("refId", ""), t["expr"])
        for p in content_panels(dashboard)
        for t in p.get("targets", [])
        if t.get("expr")
    ]


def variable_query(var: dict) -> str:
    q = var.get("query")
    return q.get("query", "") if isinstance(q, dict) else (q or "")


def load_rules() -> list[dict]:
    doc = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))
    return [rule for group in doc["groups"] for rule in group["rules"]]


def github_anchor(heading: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    slug = heading.strip().lower()
    slug = re.sub(r"[^\w\- ]", "", slug)
    return slug.replace(" ", "-")


def runbook_anchors() -> set[str]:
    text = re.sub(r"^```.*?^```", "", RUNBOOK.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    return {github_anchor(h) for h in re.findall(r"^#{1,6}\s+(.+?)\s*$", text, re.MULTILINE)}

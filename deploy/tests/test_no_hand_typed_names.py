"""No metric name and no label value is typed by hand in deploy/tests or deploy/tools.

Both come from the catalogue, deploy/metrics.json (generated from
`lro_core::metric::catalogue`, also printed by `lro metrics --json`), through
deploy/tools/catalogue.py: `M.TOOL_RESULTS_TOTAL`, `L.ToolOutcome.Inline`,
`L.ToolOutcome.eq(L.ToolOutcome.Inline)`. A typed name drifts silently when the
code renames a metric or a variant (the query just matches nothing); a
catalogue lookup fails loudly.

Every string literal of deploy/tests/*.py and deploy/tools/*.py is checked:
plain strings, bytes, and f-strings (found with `tokenize`: one STRING token
before Python 3.12, FSTRING_START … FSTRING_END since), an f-string as its
literal text with each replacement field standing as `{…}`, plus every string
literal inside its replacement fields. Docstrings are prose and are skipped;
comments are not string literals. A literal is reported when it

1. contains a catalogue metric name, or any identifier with the metric prefix
   (`lro_`) other than exactly the tool name EXTRACT_TOOL (`lro_extract`): the
   tool name followed by `_` is a metric name and is reported;
2. contains a PromQL matcher on a closed label (outcome, reason, mode: a label
   with a label set in the catalogue) whose value is literal text, such as
   outcome="ok", reason=~"ttl|quota" or mode!="recipe"; a value made only of
   `{…}` placeholders and `$variables` is fine;
3. is exactly a closed-set label value, unless ALLOWED lists that word.

This file is scanned like every other one, with no exemption: the self-tests
below build their offending snippets from the catalogue at run time, so no
metric name or label value is spelled in this source.
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest

from lrolib import CAT, EXTRACT_TOOL, REPO, L, M

SCANNED_DIRS = [REPO / "deploy" / "tests", REPO / "deploy" / "tools"]

# Closed-set label values that are also ordinary words in this code, with the
# other meaning they have there. Keep it short; prefer rewriting the code.
ALLOWED = {
    # Prometheus HTTP API: the "status" of every response (success | error).
    "success": 'Prometheus HTTP API response status ("status": "success")',
    # Prometheus rules API: a rule's "health" (ok | err | unknown).
    "ok": 'Prometheus rules API rule health ("health": "ok")',
    # Grafana dashboard JSON: the variable type "query" and the key "query" of
    # a variable; Prometheus' /api/v1/query endpoint; the "query" argument of
    # the memory server's MCP tools.
    "query": "Grafana variable type and JSON key, Prometheus /api/v1/query, MCP tool argument",
}

# The prefix every metric name shares, taken from the catalogue itself.
PREFIX = os.path.commonprefix(CAT.names)
assert len(PREFIX) > 1 and PREFIX.endswith("_"), f"metric names share no prefix: {PREFIX!r}"
assert EXTRACT_TOOL.startswith(PREFIX), (EXTRACT_TOOL, PREFIX)
PREFIXED = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(PREFIX)}[A-Za-z0-9_]*")

CLOSED_LABELS = CAT.closed_labels  # label name -> values
MATCHER = re.compile(
    r"(?<![A-Za-z0-9_])(?P<label>" + "|".join(map(re.escape, sorted(CLOSED_LABELS))) + r")"
    r"\s*(?P<op>=~|!~|!=|=)\s*(?:\"(?P<dq>(?:[^\"\\]|\\.)*)\"|'(?P<sq>(?:[^'\\]|\\.)*)')"
)
# What a matcher value may consist of: placeholders and dashboard variables.
NOT_LITERAL = re.compile(r"\{[^{}]*\}|\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*")
PLACEHOLDER = "{…}"

# Token types of f-strings (3.12+) and t-strings (3.14+); absent before.
_OPENERS = {t for t in (getattr(tokenize, "FSTRING_START", None), getattr(tokenize, "TSTRING_START", None)) if t is not None}
_CLOSERS = {t for t in (getattr(tokenize, "FSTRING_END", None), getattr(tokenize, "TSTRING_END", None)) if t is not None}
_TEMPLATED = tuple(t for t in (ast.JoinedStr, getattr(ast, "TemplateStr", None)) if t is not None)


@dataclass(frozen=True)
class Literal:
    line: int
    text: str


def _texts(node: ast.AST, line: int):
    """(line, text) of a string node, then of the string literals in its replacement fields."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            yield line, node.value
        elif isinstance(node.value, bytes):
            yield line, node.value.decode("utf-8", "replace")
        return
    if isinstance(node, _TEMPLATED):
        parts, fields = [], []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(value.value)
            else:  # FormattedValue / Interpolation; its format spec is not a literal of interest
                parts.append(PLACEHOLDER)
                fields.append(value.value)
        yield line, "".join(parts)
        for expr in fields:
            yield from _strings_in(expr, line)
        return
    yield from _strings_in(node, line)


def _strings_in(expr: ast.AST, line: int):
    """The string literals of an expression, each once (an f-string's parts are not separate literals)."""
    if isinstance(expr, (ast.Constant, *_TEMPLATED)):
        yield from _texts(expr, line + getattr(expr, "lineno", 1) - 1)
        return
    for child in ast.iter_child_nodes(expr):
        yield from _strings_in(child, line)


def string_literals(source: str) -> list[Literal]:
    """Every string literal of a module, docstrings excepted."""
    tree = ast.parse(source)
    docstrings = {
        (node.body[0].value.lineno, node.body[0].value.col_offset)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
        and isinstance(node.body[0].value.value, str)
    }
    line_start = [0]
    for text in source.splitlines(keepends=True):
        line_start.append(line_start[-1] + len(text))

    def offset(pos: tuple[int, int]) -> int:
        return line_start[pos[0] - 1] + pos[1]

    spans = []
    depth, start = 0, (0, 0)
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in _OPENERS:
            if depth == 0:
                start = tok.start
            depth += 1
        elif tok.type in _CLOSERS:
            depth -= 1
            if depth == 0:
                spans.append((start, tok.end))
        elif tok.type == tokenize.STRING and depth == 0:
            spans.append((tok.start, tok.end))

    found = []
    for begin, end in spans:
        if begin in docstrings:  # (line, column) of the token; docstrings start at an ASCII indent
            continue
        node = ast.parse("(" + source[offset(begin): offset(end)] + ")", mode="eval").body
        found += [Literal(line, text) for line, text in _texts(node, begin[0])]
    return found


def check_source(source: str) -> list[str]:
    """'line: problem' for every hand-typed metric name or label value."""
    values = CAT.label_values
    problems = []
    for lit in string_literals(source):
        text = lit.text
        names = {n for n in PREFIXED.findall(text) if n != EXTRACT_TOOL} | {n for n in CAT.names if n in text}
        for name in sorted(names):
            problems.append(f"{lit.line}: metric name {name!r} typed by hand (use M.<KEY> from deploy/metrics.json)")
        for m in MATCHER.finditer(text):
            value = m.group("dq") if m.group("dq") is not None else m.group("sq")
            if re.search(r"[A-Za-z0-9_]", NOT_LITERAL.sub("", value)):
                problems.append(f"{lit.line}: label matcher {m.group(0)!r} has a typed value (use L.<Set>.eq(...) / L.<Set>.<Variant>)")
        if text in values and text not in ALLOWED:
            problems.append(f"{lit.line}: label value {text!r} typed by hand (use L.<Set>.<Variant>)")
    return problems


def scanned_files() -> list[Path]:
    return sorted(p for d in SCANNED_DIRS for p in d.glob("*.py"))


# ---------------------------------------------------------------- the scan


@pytest.mark.parametrize("path", scanned_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_hand_typed_metric_names_or_label_values(path: Path):
    problems = check_source(path.read_text(encoding="utf-8"))
    assert problems == [], f"{path.relative_to(REPO)}:\n" + "\n".join(problems)


def test_the_scan_covers_the_generator_the_loader_and_this_file():
    names = {p.name for p in scanned_files()}
    assert {"build_dashboards.py", "catalogue.py", "lrolib.py", Path(__file__).name} <= names


def test_allow_list_is_minimal():
    """Every allowed word is a label value, and some scanned file needs it."""
    values = CAT.label_values
    used = {lit.text for p in scanned_files() for lit in string_literals(p.read_text(encoding="utf-8"))}
    for word, why in ALLOWED.items():
        assert word in values, f"{word!r} is not a label value: drop it from ALLOWED"
        assert word in used, f"{word!r} is not used as a literal any more: drop it from ALLOWED"
        assert why, word


# ---------------------------------------------------------------- the checker itself
#
# Snippets are templates filled from the catalogue, so that this file spells
# no metric name or label value and passes its own scan.

OUTCOME, REASON, MODE = L.ToolOutcome, L.ExpiryReason, L.ExtractMode
FILL = {
    "METRIC": M.TOOL_RESULTS_TOTAL,
    "EXTRACT_METRIC": M.EXTRACT_REQUESTS_TOTAL,
    "OUTCOME": OUTCOME.label,
    "INLINE": OUTCOME.Inline,
    "REASON": REASON.label,
    "TTL": REASON.Ttl,
    "QUOTA": REASON.Quota,
    "MODE": MODE.label,
    "RECIPE": MODE.Recipe,
    "TOOL": EXTRACT_TOOL,
}


def snippet(template: str) -> str:
    return template.format(**FILL)


def test_checker_reports_a_metric_name_and_a_matcher():
    bad = snippet(
        'total = "{METRIC}"\n'
        "expr = 'sum({METRIC}{{{OUTCOME}=\"{INLINE}\"}})'\n"
    )
    # What the template became, spelled from the catalogue:
    assert f'"{M.TOOL_RESULTS_TOTAL}"' in bad and OUTCOME.eq(OUTCOME.Inline) in bad
    problems = check_source(bad)
    assert any(p.startswith("1: metric name") and repr(M.TOOL_RESULTS_TOTAL) in p for p in problems), problems
    assert any(p.startswith("2: label matcher") and OUTCOME.eq(OUTCOME.Inline) in p for p in problems), problems
    assert any(p.startswith("2: metric name") for p in problems), problems


@pytest.mark.parametrize(
    "template, complaint",
    [
        ("q = '{REASON}=~\"{TTL}|{QUOTA}\"'\n", "label matcher"),
        ("q = '{MODE}!=\"{RECIPE}\"'\n", "label matcher"),
        ('q = f\'{{{{job="$job", {OUTCOME}="{INLINE}"}}}}\'\n', "label matcher"),
        ('v = "{INLINE}"\n', "label value"),
        ("v = [('{RECIPE}', 1)]\n", "label value"),
        ('n = "{EXTRACT_METRIC}"\n', "metric name"),
        ('n = "{TOOL}_"\n', "metric name"),  # the tool name followed by _ is a metric prefix
        ('n = "x{METRIC}"\n', "metric name"),  # no word boundary needed for a catalogue name
        ("q = f\"{{rate('{METRIC}', tool=True)}}\"\n", "metric name"),  # inside a replacement field
        ("q = f\"{{x}}{{'{INLINE}'}}\"\n", "label value"),
        ('b = b"{METRIC}"\n', "metric name"),
        ('class C:\n    x = 1\n    """{METRIC} after the first statement is no docstring"""\n', "metric name"),
    ],
)
def test_checker_reports(template, complaint):
    problems = check_source(snippet(template))
    assert any(complaint in p for p in problems), (snippet(template), problems)


@pytest.mark.parametrize(
    "template",
    [
        'tool = "{TOOL}"\n',  # the tool name itself
        "q = f'{{label}}=\"{{value}}\"'\n",  # label and value are placeholders
        'q = f\'{OUTCOME}="{{value}}"\'\n',
        "q = '{OUTCOME}=~\"$outcome\", {MODE}=\"${{mode}}\"'\n",  # dashboard variables
        'legend = "{{{{{OUTCOME}}}}}"\n',  # Grafana legend template, not a matcher
        'label = "{OUTCOME}"\n',  # label names are not label values
        'status = "success"\n',  # allow-listed
        '"""{METRIC} and {OUTCOME}="{INLINE}" in a docstring"""\n',
        'def f():\n    """{METRIC} in a docstring"""\n',
        "# {METRIC} in a comment\nx = 1\n",
        "x = M.TOOL_RESULTS_TOTAL + '_bucket'\n",
    ],
)
def test_checker_accepts(template):
    assert check_source(snippet(template)) == [], snippet(template)

"""The metric catalogue: every metric name and closed label value, read from
deploy/metrics.json.

deploy/metrics.json is generated from `lro_core::metric::catalogue` (the same
document `lro metrics --json` prints) and a Rust test keeps it in step with the
code. The dashboard generator (deploy/tools/build_dashboards.py) and the deploy
tests (deploy/tests, through lrolib) take every metric name and label value from
here instead of typing them; deploy/tests/test_no_hand_typed_names.py enforces it.

    cat = catalogue.load()
    cat.M.TOOL_RESULTS_TOTAL             # metric name, by its Rust constant name
    cat.L.ToolOutcome.Inline             # label value, by label set and variant
    cat.L.ToolOutcome.label              # the label the set is used under ("outcome")
    cat.L.ToolOutcome.eq(cat.L.ToolOutcome.Inline)   # a PromQL matcher, outcome="inline"
    cat.metric(cat.M.TOOL_RESULTS_TOTAL) # the whole MetricDef (type, labels, help, buckets)
    cat.metrics                          # every MetricDef, in catalogue order

An unknown metric key, label set or variant raises AttributeError naming it, so
a typo fails loudly instead of producing a query that silently matches nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parents[2]
CATALOGUE = REPO / "deploy" / "metrics.json"

# The MCP tool the extraction metrics are about. A tool name, not a metric
# name, so it is not in the catalogue; this is the one place it is spelled.
EXTRACT_TOOL = "lro_extract"

# Series a histogram is exposed as (its base name alone is never a series).
BUCKET, SUM, COUNT = "_bucket", "_sum", "_count"
HISTOGRAM_SUFFIXES = (BUCKET, SUM, COUNT)


@dataclass(frozen=True)
class LabelDef:
    name: str
    set: str | None  # label set (Rust enum) of a closed label, None for an open one
    values: tuple[str, ...] | None


@dataclass(frozen=True)
class MetricDef:
    key: str  # Rust constant name, e.g. TOOL_RESULTS_TOTAL
    name: str  # exposed name, e.g. lro_tool_results_total
    type: str  # counter | gauge | histogram
    unit: str | None
    help: str
    labels: tuple[LabelDef, ...]
    buckets: tuple[float, ...] | None

    @property
    def label_names(self) -> tuple[str, ...]:
        return tuple(l.name for l in self.labels)


class _Names:
    """Read-only attribute access to a name → value mapping; unknown names raise."""

    def __init__(self, what: str, items: dict[str, object], source: str) -> None:
        object.__setattr__(self, "_what", what)
        object.__setattr__(self, "_items", dict(items))
        object.__setattr__(self, "_source", source)

    def __getattr__(self, key: str):
        items = object.__getattribute__(self, "_items")
        if key in items:
            return items[key]
        if key.startswith("__"):  # copy, pickle and friends probe for dunders
            raise AttributeError(key)
        what, source = object.__getattribute__(self, "_what"), object.__getattribute__(self, "_source")
        raise AttributeError(f"{what} has no {key!r} (known: {', '.join(sorted(items))}; see {source})")

    def __setattr__(self, key: str, value) -> None:
        raise AttributeError(f"{self._what} is read-only")

    def __dir__(self) -> list[str]:
        return sorted(self._items)

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def items(self):
        return self._items.items()

    def __repr__(self) -> str:
        return f"<{self._what}: {', '.join(self._items)}>"


class LabelSet(_Names):
    """A closed label set: `.Variant` → value, plus the label it is used under."""

    def __init__(self, name: str, variants: dict[str, str], values: tuple[str, ...], labels: tuple[str, ...], source: str) -> None:
        super().__init__(f"label set {name}", variants, source)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "values", values)  # in declaration order
        object.__setattr__(self, "_labels", labels)

    @property
    def label(self) -> str:
        """The label name this set's values appear under (e.g. ToolOutcome → outcome)."""
        if len(self._labels) != 1:
            raise AttributeError(f"label set {self.name} is used under {len(self._labels)} label names: {list(self._labels)}")
        return self._labels[0]

    def check(self, value: str) -> str:
        if value not in self.values:
            raise ValueError(f"{value!r} is not a value of label set {self.name} ({', '.join(self.values)})")
        return value

    def eq(self, value: str) -> str:
        """The PromQL matcher label="value", for a value of this set."""
        return f'{self.label}="{self.check(value)}"'


class Catalogue:
    def __init__(self, doc: dict, path: Path) -> None:
        self.path = path
        self.metrics: tuple[MetricDef, ...] = tuple(
            MetricDef(
                key=m["key"],
                name=m["name"],
                type=m["type"],
                unit=m.get("unit"),
                help=m.get("help", ""),
                labels=tuple(
                    LabelDef(l["name"], l.get("set"), tuple(l["values"]) if l.get("values") is not None else None)
                    for l in m["labels"]
                ),
                buckets=tuple(m["buckets"]) if m.get("buckets") is not None else None,
            )
            for m in doc["metrics"]
        )
        self._by_name = {m.name: m for m in self.metrics}
        if len(self._by_name) != len(self.metrics) or len({m.key for m in self.metrics}) != len(self.metrics):
            raise ValueError(f"{path}: duplicate metric key or name")
        source = _shown(path)
        self.M = _Names("metric catalogue", {m.key: m.name for m in self.metrics}, source)

        sets = {}
        for set_name, variants in doc["label_sets"].items():
            uses = [l for m in self.metrics for l in m.labels if l.set == set_name]
            # Declaration order, as the metrics list it; the label_sets map is keyed by variant.
            values = uses[0].values if uses else tuple(variants.values())
            if set(values) != set(variants.values()) or any(l.values != values for l in uses):
                raise ValueError(f"{path}: label set {set_name} disagrees with the metrics that use it")
            labels = tuple(dict.fromkeys(l.name for l in uses))
            sets[set_name] = LabelSet(set_name, variants, values, labels, source)
        for m in self.metrics:
            for l in m.labels:
                if l.set is not None and l.set not in sets:
                    raise ValueError(f"{path}: {m.key} label {l.name} uses unknown label set {l.set}")
        self.L = _Names("label sets", sets, source)

    def metric(self, name: str) -> MetricDef:
        """The catalogue entry of a metric name (e.g. cat.metric(cat.M.TOOL_RESULTS_TOTAL))."""
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no metric named {name!r} in {self.path}") from None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.metrics)

    @property
    def closed_labels(self) -> dict[str, set[str]]:
        """Label name → every value any closed set allows under it."""
        out: dict[str, set[str]] = {}
        for m in self.metrics:
            for l in m.labels:
                if l.values is not None:
                    out.setdefault(l.name, set()).update(l.values)
        return out

    @property
    def label_values(self) -> set[str]:
        """Every value of every closed label set."""
        return {v for _, label_set in self.L.items() for v in label_set.values}


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return str(path)


@lru_cache(maxsize=None)
def _load(path: Path) -> Catalogue:
    return Catalogue(json.loads(path.read_text(encoding="utf-8")), path)


def load(path: Path = CATALOGUE) -> Catalogue:
    """The catalogue in deploy/metrics.json (read once per path)."""
    return _load(Path(path).resolve())

"""Ours against ReMe itself (run: python3 -m pytest -q crates/lro-context/tests/reme).

On the same histories and explicit parameters, `lro context offload` in
compact mode must compact exactly the messages that ReMe 0.3.1.10's own
MessageOffloadOp compacts (run_reme.py, in the pinned venv that setup.sh
builds; `.ci/run` runs it). Only the decisions are compared: which messages
change. The wording of the pointer and the file names differ on purpose (see
the README's list of differences).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from testkit.paths import LRO

HERE = Path(__file__).resolve().parent
VENV = Path(os.environ.get("LRO_REME_VENV", Path.home() / ".cache" / "lro" / "reme-venv"))
REME_PYTHON = VENV / "bin" / "python"


def text(seed: int, chars: int) -> str:
    words = ["context", "agent", "tool", "paper", "cache", "token", "summary", "file"]
    out, x = [f"doc-{seed}"], seed * 7919 + 1
    while sum(len(w) + 1 for w in out) < chars:
        x = (x * 1103515245 + 12345) % 2**31
        out.append(words[x % len(words)])
    return " ".join(out)[:chars]


def call(cid: str, name: str = "fetch") -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}


def research(n_steps: int, sizes: list[int]) -> list[dict]:
    """System, goal, then n steps of (assistant call, tool result of sizes[i % len]), a final answer."""
    msgs = [{"role": "system", "content": "You are a research assistant."}, {"role": "user", "content": "Survey it."}]
    for i in range(n_steps):
        msgs.append({"role": "assistant", "content": f"step {i}", "tool_calls": [call(f"c{i}")]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": text(i, sizes[i % len(sizes)])})
    msgs.append({"role": "assistant", "content": "done"})
    return msgs


def parallel() -> list[dict]:
    msgs = [{"role": "user", "content": "three at once"},
            {"role": "assistant", "content": "", "tool_calls": [call(f"p{i}") for i in range(3)]}]
    msgs += [{"role": "tool", "tool_call_id": f"p{i}", "content": text(i, 9000 + 4000 * i)} for i in range(3)]
    msgs.append({"role": "user", "content": "compare"})
    return msgs


def system_in_the_middle() -> list[dict]:
    msgs = research(3, [12000])
    msgs.insert(4, {"role": "system", "content": "Reminder: cite sources. " + text(99, 9000)})
    return msgs


def with_reasoning() -> list[dict]:
    msgs = research(2, [7000])
    msgs[2]["reasoning_content"] = text(50, 30000)
    return msgs


# (name, history, max_total_tokens, max_tool_message_tokens, keep_recent_count)
CASES = [
    ("research-defaults", research(12, [3000, 12000, 30000]), 20000, 2000, 1),
    ("research-keep-3", research(12, [3000, 12000, 30000]), 20000, 2000, 3),
    ("research-keep-0", research(6, [9000]), 5000, 2000, 0),
    ("research-under-limit", research(6, [9000]), 200000, 2000, 1),
    ("parallel-calls", parallel(), 1000, 2500, 1),
    ("tool-at-the-threshold", research(4, [8000, 8001, 8004, 8005]), 100, 2000, 1),
    ("system-in-the-middle", system_in_the_middle(), 4000, 2000, 2),
    ("reasoning-counts", with_reasoning(), 8000, 1000, 1),
    ("keep-more-than-all", research(2, [9000]), 10, 100, 50),
]


def changed(before: list[dict], after: list[dict]) -> list[int]:
    assert len(after) == len(before)
    return [i for i, (b, a) in enumerate(zip(before, after)) if b.get("content") != a.get("content")]


def request(case, store: Path) -> dict:
    _, history, max_total, max_tool, keep = case
    return {
        "messages": history,
        "max_total_tokens": max_total,
        "max_tool_message_tokens": max_tool,
        "keep_recent_count": keep,
        "store_dir": str(store),
    }


@pytest.fixture(scope="module")
def reme_results(tmp_path_factory) -> dict[str, dict]:
    """ReMe's answer to every case, from one run of its own op."""
    assert REME_PYTHON.is_file(), f"no ReMe venv at {VENV}: run crates/lro-context/tests/reme/setup.sh (.ci/run does)"
    store = tmp_path_factory.mktemp("reme-store")
    requests = [{**request(c, store), "working_summary_mode": "compact"} for c in CASES]
    reme = subprocess.run(
        [str(REME_PYTHON), str(HERE / "run_reme.py")],
        input=json.dumps(requests), capture_output=True, text=True, timeout=600,
    )
    assert reme.returncode == 0, reme.stderr[-3000:]
    return {c[0]: r for c, r in zip(CASES, json.loads(reme.stdout))}


@pytest.mark.usefixtures("binaries")
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_we_compact_exactly_what_reme_compacts(case, reme_results, tmp_path: Path):
    name, history = case[0], case[1]
    theirs = reme_results[name]
    assert theirs["success"] is True, theirs
    ours = subprocess.run(
        [str(LRO), "context", "offload"],
        input=json.dumps({**request(case, tmp_path / "store"), "context_manage_mode": "compact"}),
        capture_output=True, text=True, timeout=60,
    )
    assert ours.returncode == 0, ours.stderr
    ours = json.loads(ours.stdout)
    reme_changed = changed(history, theirs["messages"])
    our_changed = changed(history, ours["messages"])
    assert our_changed == reme_changed, f"{name}: ReMe compacted {reme_changed}, we compacted {our_changed}"
    assert len(theirs["write_file_dict"]) == len(ours["metadata"]["write_file_dict"]) == len(our_changed)
    # Both keep the full content, byte for byte.
    assert sorted(theirs["write_file_dict"].values()) == sorted(ours["metadata"]["write_file_dict"].values())

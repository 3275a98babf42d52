"""The paper's two task types, each answered by one `lro_extract` call.

The paper's E1 (ID lookup: "how many of these ids are in the result?") and
E4 (three-criteria filters: "how many memories in namespace X have priority
Y or above and mention Z?", where every descriptor configuration reached
12.9%), over the demo corpus at 50, 200 and 500 records: 15 tasks of each
type per size, 90 in all. The real `memory-server` is driven by the official
Python SDK over stdio in its default (`auto`) mode; each task is one
`lro_extract` call shaped like the worked example the descriptor's guidance
shows, and the ground truth is computed here, in Python, over the records of
the offloaded file. All 90 answers must be exact.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import tempfile
from pathlib import Path

import pytest

from testkit.paths import MEMORY_SERVER
from testkit.procs import environ_without

pytestmark = pytest.mark.usefixtures("binaries")

SIZES = (50, 200, 500)
TASKS_PER_TYPE = 15
EXAMPLE = re.compile(r"^- Count with conditions: where=(\[.*\]), count=true$", re.M)


def records_of(path: str) -> list[dict]:
    """The records of an offload file: every line after the header."""
    lines = Path(path).read_text().splitlines()
    records = [json.loads(line) for line in lines[1:]]
    assert json.loads(lines[0])["count"] == len(records), "line 1 is the header"
    return records


def id_tasks(records: list[dict], rng: random.Random) -> list[tuple[list[str], int]]:
    """E1: (ids, how many of them are in the result); present and absent mixed."""
    present = [r["id"] for r in records]
    tasks = []
    for _ in range(TASKS_PER_TYPE):
        hits = rng.sample(present, rng.randint(0, min(12, len(present))))
        misses = [f"mem-absent-{rng.randrange(10**6):06d}" for _ in range(rng.randint(1, 8))]
        ids = hits + misses
        rng.shuffle(ids)
        tasks.append((ids, sum(1 for i in ids if i in set(present))))
    return tasks


def filter_tasks(records: list[dict], rng: random.Random) -> list[tuple[list[dict], int]]:
    """E4: (conditions, count): a namespace prefix, a priority floor and a
    word from some record's content, counted here by their plain meaning."""
    prefixes = sorted({r["namespace"].split("/")[0] for r in records})
    tasks = []
    for _ in range(TASKS_PER_TYPE):
        prefix = rng.choice(prefixes)
        floor = rng.randint(1, 5)
        words = re.findall(r"[A-Za-z]{5,}", rng.choice(records)["content"])
        word = rng.choice(words).lower()
        conds = [
            {"field": "namespace", "op": "prefix", "value": prefix},
            {"field": "priority", "op": "gte", "value": floor},
            {"field": "content", "op": "contains", "value": word},
        ]
        truth = sum(
            1
            for r in records
            if r["namespace"].startswith(prefix) and r["priority"] >= floor and word in r["content"].lower()
        )
        tasks.append((conds, truth))
    return tasks


async def battery(size: int, tmp_path: Path) -> list[str]:
    """Runs the 30 tasks at SIZE; the wrong answers, as text."""
    from mcp import Client, StdioServerParameters

    env = environ_without("ATLATL_", "RUST_LOG")
    env["ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR"] = str(tmp_path / f"out-{size}")
    params = StdioServerParameters(command=str(MEMORY_SERVER), args=["--corpus-size", str(size)], env=env)
    wrong = []
    async with Client(params, cache=None) as client:
        listed = await client.call_tool("list_memories", {"detail": "full"})
        # The descriptor is the text block: list_memories declares no output schema.
        descriptor = json.loads(listed.content[0].text)
        assert descriptor and "file_path" in descriptor, listed
        records = records_of(descriptor["file_path"])
        assert len(records) == size
        # The guidance's worked example has exactly the shape the tasks use.
        example = EXAMPLE.search(descriptor["guidance"])
        assert example, descriptor["guidance"]
        assert [c["op"] for c in json.loads(example.group(1))] == ["prefix", "gte", "contains"]

        rng = random.Random(size)
        tasks = [([{"field": "id", "op": "in", "value": ids}], n) for ids, n in id_tasks(records, rng)]
        tasks += filter_tasks(records, rng)
        for conds, truth in tasks:
            args = {"file_path": descriptor["file_path"], "where": conds, "count": True}
            got = await client.call_tool("lro_extract", args)
            assert not got.is_error, got
            count = json.loads(got.content[0].text)["count"]
            if count != truth:
                wrong.append(f"{size}: {conds} gave {count}, truth {truth}")
    return wrong


def test_ninety_paper_tasks_each_in_one_call_are_exact():
    # A short output directory, as the default's ({temp}/lro-{uid}): past
    # about 60 characters the descriptor turns its guidance brief to stay
    # within 800 tokens, and the brief guidance has no worked example.
    wrong = []
    with tempfile.TemporaryDirectory(prefix="lro-") as short:
        for size in SIZES:
            wrong += asyncio.run(battery(size, Path(short)))
    assert not wrong, "\n".join(wrong)

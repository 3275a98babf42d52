"""C. Offload through the proxy: with a low threshold, large results of a
third-party server come back as descriptors whose file, recipes (run by the
real jq) and `lro_extract` all work.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import anyio
import fixture_spec as fixture
import pytest

from support import (
    connect, descriptor, dump, field_refs, fixture_cmd, full_env, jq_filter, offload_env, proxy_argv, read_offload_file,
    run_recipe, texts,
)
from testkit.waiting import PROMPT_S

THRESHOLD = 500
BIG_N = 500
LOG_LINES = 2000


async def _session(tmp: Path, out: Path) -> dict:
    env = full_env({"FIXTURE_PID_FILE": str(tmp / "pids"), **offload_env(out, threshold=THRESHOLD)})
    async with connect(proxy_argv(upstream=fixture_cmd()), env, tmp / "proxy.err") as (proc, session):
        with anyio.fail_after(PROMPT_S * 3):
            big = await session.call_tool("big_json", {"n": BIG_N})
            log = await session.call_tool("long_log", {"lines": LOG_LINES})
            ordered = await session.call_tool("ordered", {"n": BIG_N})
            big_desc = descriptor(big)
            path = big_desc["file_path"]
            extract = {
                "recipe1": await session.call_tool("lro_extract", {"file_path": path, "recipe": 1}),
                "query": await session.call_tool("lro_extract", {"file_path": path, "query": "select(.id == 7) | {id, name}"}),
                "slurp": await session.call_tool("lro_extract", {"file_path": path, "query": "length", "slurp": True}),
                "log_query": await session.call_tool(
                    "lro_extract", {"file_path": descriptor(log)["file_path"], "query": "select(.line == 3) | .text"}
                ),
            }
            notice = texts(extract["recipe1"])[-1]
            nxt = json.loads(notice[notice.index("{") :]) if "next part" in notice else None
            extract["recipe1_next"] = await session.call_tool("lro_extract", nxt) if nxt else None
        return {"big": big, "log": log, "ordered": ordered, "extract": extract, "next_args": nxt, "stderr": proc.stderr()}


@pytest.fixture(scope="module")
def offloaded(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("offload")
    out = tmp / "offload"
    out.mkdir()
    got = anyio.run(_session, tmp, out)
    got["out"] = out
    return got


def records_of(desc: dict) -> tuple[dict, list]:
    return read_offload_file(Path(desc["file_path"]))


@pytest.mark.parametrize("which", ["big", "log"])
def test_large_results_are_descriptors_with_their_file(offloaded, which):
    desc = descriptor(offloaded[which])
    path = Path(desc["file_path"])
    assert path.is_absolute() and path.parent == offloaded["out"], path
    op = {"big": "big_json", "log": "long_log"}[which]
    assert path.name.startswith(f"atlatl-{op}-") and path.suffix == ".jsonl"
    assert path.is_file()
    for key in ("summary", "line_schema", "jq_recipes", "guidance"):
        assert key in desc, key
    assert len(desc["jq_recipes"]) == 10
    header, records = records_of(desc)
    assert header["type"] == "lro_header"
    assert header["count"] == len(records) == desc["summary"]["count"]
    assert len(records) == (BIG_N if which == "big" else LOG_LINES)


def test_offloaded_records_are_the_upstream_records(offloaded):
    _, records = records_of(descriptor(offloaded["big"]))
    assert records == [fixture.record(i) for i in range(BIG_N)]
    _, lines = records_of(descriptor(offloaded["log"]))
    assert [r["text"] for r in lines] == fixture.log_text(LOG_LINES).split("\n")


@pytest.mark.parametrize("which", ["big", "log"])
@pytest.mark.parametrize("n", range(1, 11))
def test_recipe_runs_through_real_jq(offloaded, which, n):
    desc = descriptor(offloaded[which])
    recipe = desc["jq_recipes"][n - 1]
    assert desc["file_path"] in recipe["command"]
    proc = run_recipe(recipe["command"])
    assert proc.returncode == 0, f"recipe {n} ({recipe['description']}) failed: {proc.stderr}\n{recipe['command']}"
    lines = proc.stdout.splitlines()
    assert lines, f"recipe {n} ({recipe['description']}) printed nothing: {recipe['command']}"
    # `jq [-s] -r|-c …`: a raw recipe prints text (TSV), the others JSON.
    raw = "-r" in shlex.split(recipe["command"].split("| jq", 1)[1])[:2]
    for line in [] if raw else lines:
        json.loads(line)


@pytest.mark.parametrize("which", ["big", "log"])
def test_recipes_name_only_fields_the_records_have(offloaded, which):
    desc = descriptor(offloaded[which])
    _, records = records_of(desc)
    keys = set().union(*(r.keys() for r in records))
    # The schema names only fields the records have; past the descriptor's
    # budget (this test's long directory) it names fewer, or none.
    assert set(desc["line_schema"].get("properties", {})) <= keys, desc["line_schema"]
    for n, recipe in enumerate(desc["jq_recipes"], 1):
        refs = field_refs(jq_filter(recipe["command"]))
        assert refs <= keys, f"recipe {n} names {sorted(refs - keys)} not in {sorted(keys)}: {recipe['command']}"


def test_lro_extract_recipe_matches_jq(offloaded):
    desc = descriptor(offloaded["big"])
    jq_out = [json.loads(line) for line in run_recipe(desc["jq_recipes"][0]["command"]).stdout.splitlines()]
    first = offloaded["extract"]["recipe1"]
    assert not first.is_error, dump(first)
    body = [json.loads(line) for line in texts(first)[0].splitlines() if line.strip()]
    assert body and body == jq_out[: len(body)]
    # The result was cut: the notice names the next part, which continues it.
    nxt = offloaded["next_args"]
    assert nxt is not None and nxt["file_path"] == desc["file_path"] and nxt["offset"] == len(body)
    more = [json.loads(line) for line in texts(offloaded["extract"]["recipe1_next"])[0].splitlines() if line.strip()]
    assert more and more == jq_out[len(body) : len(body) + len(more)]


def test_lro_extract_query(offloaded):
    query = offloaded["extract"]["query"]
    assert not query.is_error, dump(query)
    assert [json.loads(line) for line in texts(query)[0].splitlines() if line.strip()] == [{"id": 7, "name": "item-7"}]
    slurp = offloaded["extract"]["slurp"]
    assert texts(slurp)[0].strip() == str(BIG_N)
    log_query = offloaded["extract"]["log_query"]
    assert [json.loads(line) for line in texts(log_query)[0].splitlines() if line.strip()] == [
        fixture.log_text(LOG_LINES).split("\n")[2]  # line numbers start at 1
    ]


def test_structured_content_is_the_descriptor(offloaded):
    # long_log has an outputSchema (str -> {"result": ...}); the offloaded
    # structuredContent must be the descriptor, not the original text.
    log = offloaded["log"]
    assert log.structured_content is not None
    assert log.structured_content.get("offloaded") is True
    assert log.structured_content["file_path"] == descriptor(log)["file_path"]


def test_estimated_tokens_count_the_text_once(offloaded):
    """The SDK sends a `str` return twice (a text block and structuredContent
    {"result": text}); the estimate is of the result, ~chars/4 of the text once."""
    text = fixture.log_text(LOG_LINES)
    once = len(text) / 4
    est = descriptor(offloaded["log"])["summary"]["estimated_tokens"]
    assert 0.8 * once <= est <= 1.25 * once, (
        f"long_log({LOG_LINES}): estimated_tokens={est}, but the text is {len(text)} chars "
        f"(~{once:.0f} tokens once, ~{2 * once:.0f} twice)"
    )
    # Control: big_json has no structuredContent, and its estimate is chars/4.
    big_text = json.dumps([fixture.record(i) for i in range(BIG_N)])
    big_est = descriptor(offloaded["big"])["summary"]["estimated_tokens"]
    assert 0.8 * len(big_text) / 4 <= big_est <= 1.25 * len(big_text) / 4, big_est


def test_field_ref_checker_is_not_vacuous():
    # The checker above must see every way a jq filter names a field.
    cmd = "tail -n +2 /f.jsonl | jq -c --arg k v '{id, name} | select(.tags[]? == $k) | .[\"a b\"] | .\"c\"'"
    assert jq_filter(cmd) == '{id, name} | select(.tags[]? == $k) | .["a b"] | ."c"'
    assert field_refs(jq_filter(cmd)) == {"id", "name", "tags", "a b", "c"}
    assert field_refs("group_by(type) | map({type: .[0] | type, count: length})") == set()


@pytest.mark.anyio
async def test_a_result_over_64_mib_passes_the_stdio_child_transport(tmp_path):
    """rmcp's stdio transport caps a line at 16 MiB; the proxy reads its child's
    lines up to 256 MiB, so a result of more than 64 MiB is offloaded whole."""
    n = 500_000
    out = tmp_path / "out"
    env = full_env(offload_env(out, threshold=THRESHOLD))
    async with connect(proxy_argv(upstream=fixture_cmd()), env, tmp_path / "proxy.err") as (proc, session):
        with anyio.fail_after(PROMPT_S * 6):
            big = await session.call_tool("big_json", {"n": n})
    desc = descriptor(big)
    assert desc["summary"]["count"] == n
    path = Path(desc["file_path"])
    assert path.parent == out
    assert path.stat().st_size > 64 << 20, path.stat().st_size


def test_structured_records_keep_the_upstream_key_order(offloaded):
    _, records = records_of(descriptor(offloaded["ordered"]))
    assert len(records) == BIG_N
    assert all(list(r) == ["t", "id", "a"] and list(r["a"]) == ["z", "b"] for r in records), records[0]

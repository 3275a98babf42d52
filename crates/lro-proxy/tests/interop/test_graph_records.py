"""A knowledge graph through `lro proxy`: the reference memory server's `read_graph`
answers {"entities": [...], "relations": [...]}, which the layer offloads as the
records of both arrays, each tagged with its array's name in `array`. Before,
it was thousands of lines of pretty-printed JSON on which `where entityType eq
person` found nothing.

One proxy with its default settings, as a new user would run it; the graph is
created through it (2,000 entities, 1,000 relations), then read. The records are
checked against what was created; the structured filter, the tag, and every
recipe (the real jq, exactly as given, and lro_extract) are run on them.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import anyio
import pytest

from support import connect, full_env, offload_env, proxy_argv, read_offload_file, run_recipe, texts
from testkit.npm import npm_ci

TS = Path(__file__).resolve().parent / "ts"
MEMORY_JS = TS / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"

ENTITIES, RELATIONS = 2000, 1000
KINDS = ("person", "project", "team")
# The session's calls and the extractions: generous for a loaded machine.
SESSION_S = 120


def graph() -> tuple[list[dict], list[dict]]:
    entities = [{"name": f"node-{i}", "entityType": KINDS[i % 3], "observations": [f"note {i % 11}"]}
                for i in range(ENTITIES)]
    relations = [{"from": f"node-{i}", "to": f"node-{(i * 7) % ENTITIES}", "relationType": ("knows", "leads")[i % 2]}
                 for i in range(RELATIONS)]
    return entities, relations


def answer(result) -> dict:
    assert not result.is_error, texts(result)
    return json.loads(texts(result)[0])


@pytest.fixture(scope="module")
def offloaded(tmp_path_factory) -> dict:
    """read_graph through the proxy, and what lro_extract says about its file."""
    npm_ci(TS)
    tmp = tmp_path_factory.mktemp("graph")
    env = full_env({**offload_env(tmp / "offload"), "MEMORY_FILE_PATH": str(tmp / "memory.jsonl")})
    entities, relations = graph()

    async def run() -> dict:
        node = shutil.which("node") or "node"
        async with connect(proxy_argv(upstream=[node, str(MEMORY_JS)]), env, tmp / "memory.err") as (_, session):
            with anyio.fail_after(SESSION_S):
                await session.call_tool("create_entities", {"entities": entities})
                await session.call_tool("create_relations", {"relations": relations})
                result = await session.call_tool("read_graph", {})
                desc = answer(result)
                path = desc["file_path"]

                async def extract(**args) -> dict:
                    return answer(await session.call_tool("lro_extract", {"file_path": path, **args}))

                def count(field: str, value: str) -> dict:
                    return {"where": [{"field": field, "op": "eq", "value": value}], "count": True}

                return {
                    "result": result,
                    "descriptor": desc,
                    "people": await extract(**count("entityType", "person")),
                    "relations": await extract(**count("array", "relations")),
                    "recipes": [await session.call_tool("lro_extract", {"file_path": path, "recipe": n})
                                for n in range(1, 11)],
                }

    got = anyio.run(run)
    got["created"] = (entities, relations)
    return got


def test_each_entity_and_relation_is_a_record_tagged_with_its_array(offloaded):
    desc = offloaded["descriptor"]
    assert desc["offloaded"] is True
    assert desc["summary"]["records"] == "entities and relations"
    header, records = read_offload_file(Path(desc["file_path"]))
    assert header["count"] == desc["summary"]["count"] == ENTITIES + RELATIONS == len(records)
    entities, relations = offloaded["created"]
    assert records == [{"array": "entities", **e} for e in entities] + [{"array": "relations", **r} for r in relations]
    # The descriptor names the field and the arrays, and describes both
    # arrays' fields, or, past its budget, counts those it leaves out.
    schema = desc["line_schema"]
    assert {"array", "entityType"} <= set(schema["properties"]), schema
    assert "relationType" in schema["properties"] or "fields, the most frequent" in schema.get("$comment", ""), schema
    assert f'entities ({ENTITIES}), relations ({RELATIONS})' in desc["guidance"], desc["guidance"]


def test_a_where_filter_finds_the_entities_and_the_tag_selects_an_array(offloaded):
    people = sum(1 for i in range(ENTITIES) if KINDS[i % 3] == "person")
    assert offloaded["people"] == {"count": people}
    assert offloaded["relations"] == {"count": RELATIONS}


def test_every_recipe_runs_and_prints_something(offloaded):
    recipes = offloaded["descriptor"]["jq_recipes"]
    assert len(recipes) == 10
    outputs = []
    for n, recipe in enumerate(recipes, 1):
        proc = run_recipe(recipe["command"])
        assert proc.returncode == 0 and proc.stdout.strip(), f"recipe {n} ({recipe['description']}): {proc.stderr}"
        outputs.append(proc.stdout)
    assert len(set(outputs)) == 10, "two recipes print the same"
    per_array = next(i for i, r in enumerate(recipes) if r["description"] == "Count records in each array")
    assert json.loads(outputs[per_array]) == [{"array": "entities", "count": ENTITIES},
                                              {"array": "relations", "count": RELATIONS}]
    for n, result in enumerate(offloaded["recipes"], 1):
        assert not result.is_error and texts(result)[0].strip(), f"lro_extract recipe={n}: {texts(result)}"


def test_the_descriptor_stays_small(offloaded):
    """The paper's ~800-token descriptor bound (characters / 4), at the memory
    case's 63-character path as docs/descriptor-sizing.md quotes it."""
    desc = offloaded["descriptor"]
    text = texts(offloaded["result"])[0].replace(desc["file_path"], "/tmp/" + "x" * 58)
    tokens = math.ceil(len(text) / 4)
    print(f"\nread_graph descriptor: {tokens} tokens")
    assert tokens <= 800

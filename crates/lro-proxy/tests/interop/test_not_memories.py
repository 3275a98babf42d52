"""F. Results that are not memories: real third-party servers through `lro proxy`
with its default settings, as a new user would run them, and what the model gets
for each large result.

  - @modelcontextprotocol/server-filesystem: read_text_file, directory_tree, search_files;
  - mcp-server-git (PyPI): git_log with a large count, git_diff;
  - @modelcontextprotocol/server-memory: create_entities (2,000), create_relations, read_graph.

For each large result: every recipe runs with the real jq exactly as given and
prints something, and runs through lro_extract too; no two recipes run the same
command or print the same; the summary and the guidance name what the records are;
no resource link the client could not follow. The records are checked against the
source: the tree's entries, the repository's commits.

The npm servers are pinned in ts/package.json + ts/package-lock.json (installed by
testkit/npm-ci.sh), mcp-server-git by .ci/run's pip line. One proxy per server,
its results shared by the tests (a module fixture), so the whole module takes a
few seconds.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from support import connect, full_env, offload_env, proxy_argv, read_offload_file, run_recipe, texts
from testkit.npm import npm_ci
from testkit.paths import REPO

HERE = Path(__file__).resolve().parent
TS = HERE / "ts"
SERVERS = TS / "node_modules" / "@modelcontextprotocol"
FILESYSTEM_JS = SERVERS / "server-filesystem" / "dist" / "index.js"
MEMORY_JS = SERVERS / "server-memory" / "dist" / "index.js"
GIT_PIN = "mcp-server-git==2026.10.19"

# One session's calls, and each lro_extract call: generous for a loaded machine.
SESSION_S = 120
# A real source file for read_text_file (~560 lines).
SOURCE = REPO / "crates" / "lro-core" / "src" / "offload" / "mod.rs"
CRATES, MODULES, NESTED = 10, 10, 5
COMMITS = 300
ENTITIES, RELATIONS = 2000, 1000
# The output directory is as long as the descriptor's ceilings are promised for:
# 63 characters (docs/descriptor-sizing.md).
DIR_CHARS = 63
# The spec guidance's ceiling (characters / 4, rounded up).
DESCRIPTOR_TOKENS = 800

# What the summary says each result's records are.
WHAT = {
    "read_text_file": "lines of text",
    "directory_tree": "tree entries",
    "search_files": "paths",
    "git_log": "commits",
    "git_diff": "lines of text",
    "create_entities": "entities",
    "create_relations": "relations",
    "read_graph": "entities and relations",
}


# --------------------------------------------------------------------------
# the data: a project tree, a repository, a knowledge graph


def make_project(root: Path) -> None:
    """CRATES crates of Cargo.toml, src/ (lib.rs, MODULES modules, a nested folder)
    and tests/; the first crate's lib.rs is a real source file."""
    for c in range(CRATES):
        crate = root / f"crate-{c}"
        (crate / "src" / "nested").mkdir(parents=True)
        (crate / "tests").mkdir()
        (crate / "Cargo.toml").write_text(f'[package]\nname = "crate-{c}"\n')
        (crate / "src" / "lib.rs").write_text(SOURCE.read_text() if c == 0 else f"//! crate {c}\n")
        for m in range(MODULES):
            (crate / "src" / f"module_{m}.rs").write_text(f"pub fn f{m}() {{}}\n")
        for n in range(NESTED):
            (crate / "src" / "nested" / f"part_{n}.rs").write_text("\n")
        (crate / "tests" / "it.rs").write_text("#[test]\nfn t() {}\n")


def tree_paths(root: Path) -> list[str]:
    """Every entry under `root`, relative, as the flattened tree names them."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def make_repository(repo: Path) -> None:
    """COMMITS commits in one `git fast-import`: subjects, bodies with blank lines and
    trailers on every other one, each commit rewriting one of ten 40-line files."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    stream = []
    for i in range(COMMITS):
        if i % 2:
            message = (f"Rework module {i % 7}: split the parser\n\nThe parser of step {i} "
                       f"moved out.\nIt keeps its tests.\n\nSigned-off-by: Dev {i % 3} <dev{i % 3}@example.org>\n")
        else:
            message = f"fix: bump version to 0.{i}\n"
        data = "".join(f"line {j} of revision {i}\n" for j in range(40))
        stamp = 1_700_000_000 + i * 3600
        stream.append(
            f"commit refs/heads/main\nauthor Dev {i % 3} <dev{i % 3}@example.org> {stamp} +0000\n"
            f"committer Dev {i % 3} <dev{i % 3}@example.org> {stamp} +0000\n"
            f"data {len(message.encode())}\n{message}\nM 644 inline src/file_{i % 10}.txt\n"
            f"data {len(data.encode())}\n{data}\n"
        )
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet"], input="".join(stream), text=True, check=True)
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "main"], check=True)


def entities() -> list[dict]:
    kinds = ["person", "project", "team"]
    return [
        {"name": f"person-{i}", "entityType": kinds[i % 3],
         "observations": [f"works on area {i % 17}", f"joined in {2000 + i % 25}"]}
        for i in range(ENTITIES)
    ]


def relations() -> list[dict]:
    return [
        {"from": f"person-{i}", "to": f"person-{i * 7 % ENTITIES}", "relationType": ["knows", "manages"][i % 2]}
        for i in range(RELATIONS)
    ]


# --------------------------------------------------------------------------
# one proxy per server


async def through_proxy(upstream: list[str], env: dict[str, str], err: Path, calls: list[tuple[str, dict]]) -> dict:
    """Each call through one `lro proxy` session, and for each offloaded answer every
    recipe through lro_extract: {tool: {"result", "extract": [10 results]}}."""
    got: dict = {}
    async with connect(proxy_argv(upstream=upstream), env, err) as (_, session):
        with anyio.fail_after(SESSION_S):
            for tool, args in calls:
                result = await session.call_tool(tool, args)
                assert not result.is_error, f"{tool}: {texts(result)}"
                try:
                    desc = json.loads(texts(result)[0])
                except json.JSONDecodeError:  # answered inline: `offloaded` says so
                    desc = {"inline": texts(result)[0][:300]}
                extract = []
                if desc.get("offloaded"):
                    for n in range(1, 11):
                        extract.append(await session.call_tool("lro_extract", {"file_path": desc["file_path"], "recipe": n}))
                got[tool] = {"result": result, "descriptor": desc, "extract": extract}
    return got


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict:
    """Every large result of the three servers."""
    npm_ci(TS)
    assert FILESYSTEM_JS.is_file() and MEMORY_JS.is_file(), "ts/package.json pins the filesystem and memory servers"
    assert shutil.which("git"), "mcp-server-git needs git"
    has_git_server = subprocess.run([sys.executable, "-c", "import mcp_server_git"], capture_output=True).returncode == 0
    assert has_git_server, f"mcp-server-git is not installed: pip install '{GIT_PIN}' (.ci/run does)"

    tmp = tmp_path_factory.mktemp("third-party")
    out = tmp / ("o" * (DIR_CHARS - len(str(tmp)) - 1))
    assert len(str(out)) == DIR_CHARS, out
    project, repo = tmp / "project", tmp / "repo"
    make_project(project)
    make_repository(repo)
    env = full_env({**offload_env(out), "MEMORY_FILE_PATH": str(tmp / "memory.jsonl")})
    node = shutil.which("node") or "node"

    async def run_all() -> dict:
        got = await through_proxy([node, str(FILESYSTEM_JS), str(project)], env, tmp / "fs.err", [
            ("read_text_file", {"path": str(project / "crate-0" / "src" / "lib.rs")}),
            ("directory_tree", {"path": str(project)}),
            ("search_files", {"path": str(project), "pattern": "**/*.rs"}),
        ])
        got |= await through_proxy([sys.executable, "-m", "mcp_server_git"], env, tmp / "git.err", [
            ("git_log", {"repo_path": str(repo), "max_count": COMMITS}),
            ("git_diff", {"repo_path": str(repo), "target": "main~100"}),
        ])
        got |= await through_proxy([node, str(MEMORY_JS)], env, tmp / "memory.err", [
            ("create_entities", {"entities": entities()}),
            ("create_relations", {"relations": relations()}),
            ("read_graph", {}),
        ])
        return got

    got = anyio.run(run_all)
    got["_paths"] = {"project": project, "repo": repo}
    return got


def offloaded(results: dict, tool: str) -> dict:
    desc = results[tool]["descriptor"]
    assert desc.get("offloaded") is True, f"{tool} was not offloaded: {json.dumps(desc)[:300]}"
    return desc


def recipe_outputs(desc: dict) -> list[str]:
    """Each recipe run by bash and the real jq exactly as given: its output (asserting exit 0)."""
    outputs = []
    for n, recipe in enumerate(desc["jq_recipes"], 1):
        proc = run_recipe(recipe["command"])
        assert proc.returncode == 0, f"recipe {n} ({recipe['description']}) failed: {proc.stderr}\n{recipe['command']}"
        outputs.append(proc.stdout)
    return outputs


# --------------------------------------------------------------------------
# every large result


@pytest.mark.parametrize("tool", list(WHAT))
def test_every_recipe_prints_something_and_no_two_are_the_same(results, tool):
    desc = offloaded(results, tool)
    recipes = desc["jq_recipes"]
    assert len(recipes) == 10
    outputs = recipe_outputs(desc)
    for n, (recipe, out) in enumerate(zip(recipes, outputs), 1):
        assert out.strip(), f"recipe {n} ({recipe['description']}) printed nothing: {recipe['command']}"
    commands = [r["command"] for r in recipes]
    assert len(set(commands)) == 10, f"recipes repeat a command: {commands}"
    same = [(i + 1, j + 1) for i in range(10) for j in range(i) if outputs[i] == outputs[j]]
    assert not same, f"recipes print the same: {same} ({[recipes[i - 1]['description'] for i, _ in same]})"


@pytest.mark.parametrize("tool", list(WHAT))
def test_every_recipe_runs_through_lro_extract(results, tool):
    offloaded(results, tool)
    for n, answer in enumerate(results[tool]["extract"], 1):
        assert not answer.is_error, f"lro_extract recipe={n}: {texts(answer)}"
        assert texts(answer) and texts(answer)[0].strip(), f"lro_extract recipe={n} printed nothing"


@pytest.mark.parametrize("tool", list(WHAT))
def test_the_summary_and_the_guidance_name_the_records(results, tool):
    desc = offloaded(results, tool)
    summary = desc["summary"]
    header, records = read_offload_file(Path(desc["file_path"]))
    assert summary["records"] == WHAT[tool]
    assert summary["count"] == header["count"] == len(records)
    assert f"{summary['count']} {WHAT[tool]}" in desc["guidance"], desc["guidance"]
    # The spec's fields stay; the memory template's words do not.
    assert {"top_namespaces", "score_range", "detail"} <= set(summary)
    assert "memor" not in desc["guidance"] and "Detail level" not in desc["guidance"], desc["guidance"]


@pytest.mark.parametrize("tool", list(WHAT))
def test_no_resource_link_the_client_could_not_follow(results, tool):
    offloaded(results, tool)
    assert [c.type for c in results[tool]["result"].content] == ["text"]


# --------------------------------------------------------------------------
# what the records are


def test_the_tree_is_one_record_per_entry_with_its_path(results):
    desc = offloaded(results, "directory_tree")
    _, records = read_offload_file(Path(desc["file_path"]))
    project = results["_paths"]["project"]
    assert sorted(r["path"] for r in records) == tree_paths(project)
    assert all(set(r) == {"path", "name", "type"} for r in records), records[:3]
    nested = [r for r in records if r["path"].count("/") >= 2]
    # lib.rs, the modules, nested/ and its parts, tests/it.rs
    assert len(nested) == CRATES * (1 + MODULES + 1 + NESTED + 1), "every nested entry is a record"


def test_the_log_is_one_record_per_commit_with_its_whole_message(results):
    desc = offloaded(results, "git_log")
    _, records = read_offload_file(Path(desc["file_path"]))
    repo = results["_paths"]["repo"]
    shas = subprocess.run(["git", "-C", str(repo), "rev-list", "main"], capture_output=True, text=True, check=True)
    assert [r["commit"] for r in records] == shas.stdout.split()
    assert set(records[0]) == {"commit", "author", "date", "message"}
    body = subprocess.run(["git", "-C", str(repo), "log", "-1", "--format=%B", records[0]["commit"]],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert records[0]["message"] == body and "Signed-off-by:" in body
    assert '"Commit history:"' in desc["guidance"], "the heading the file leaves out is named"


def test_descriptor_sizes(results):
    """Every descriptor, offloaded into a 63-character directory, within the spec
    guidance's 800 tokens (characters / 4, rounded up): the figures
    docs/descriptor-sizing.md quotes."""
    sizes = {}
    for tool in WHAT:
        offloaded(results, tool)
        text = texts(results[tool]["result"])[0]
        sizes[tool] = math.ceil(len(text) / 4)
    print("\n" + "\n".join(f"{tool}: {tokens} tokens" for tool, tokens in sizes.items()))
    assert max(sizes.values()) <= DESCRIPTOR_TOKENS, sizes

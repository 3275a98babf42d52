"""The `lro` binary ships as a Python wheel (crates/lro-cli/pyproject.toml,
maturin `bindings = "bin"`), the way ruff and uv do, so that
`uvx --from lro-mcp lro proxy …` and `pipx run` work.

Builds the wheel with the dev profile (fixture `lro_wheel`, conftest.py; or
takes $LRO_WHEEL), checks its contents and metadata, installs it offline into
a fresh venv (fixture `installed_lro`) and runs the installed `lro`.

Needs: cargo, maturin (pip package; ./.ci/run installs it).
"""

from __future__ import annotations

import os
import subprocess
import tomllib
import zipfile
from email.parser import Parser

from lrolib import REPO
from testkit.paths import MEMORY_SERVER

PYPROJECT = REPO / "crates" / "lro-cli" / "pyproject.toml"
PROJECT = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
WORKSPACE_VERSION = tomllib.loads((REPO / "Cargo.toml").read_text(encoding="utf-8"))["workspace"]["package"]["version"]
# The subcommands crates/lro-cli/src/cli.rs declares.
SUBCOMMANDS = {"proxy", "extract", "inspect", "gc", "metrics"}


def dist_name() -> str:
    """The project name as it appears in wheel file and directory names."""
    return PROJECT["name"].replace("-", "_")


def run(lro, *args: str) -> subprocess.CompletedProcess:
    """Runs the installed lro from outside the repository, with only the venv's bin dir on PATH
    (nothing from the workspace or cargo can stand in for it)."""
    env = {"PATH": str(lro.parent), "HOME": os.environ.get("HOME", "/"), "LANG": "C.UTF-8"}
    return subprocess.run([str(lro), *args], cwd=lro.parent.parent, env=env, capture_output=True, text=True, timeout=60)


def test_pyproject_version_is_the_workspace_version():
    assert PROJECT["version"] == WORKSPACE_VERSION, "crates/lro-cli/pyproject.toml [project] version != [workspace.package] version"


def test_wheel_is_binary_only_with_lro_as_script(lro_wheel):
    name = dist_name()
    assert lro_wheel.name.startswith(f"{name}-{PROJECT['version']}-py3-none-"), lro_wheel.name
    with zipfile.ZipFile(lro_wheel) as zf:
        names = zf.namelist()
        script = f"{name}-{PROJECT['version']}.data/scripts/lro"
        assert script in names, names
        info = zf.getinfo(script)
        assert (info.external_attr >> 16) & 0o111, f"{script} is not executable in the wheel"
        with zf.open(script) as f:
            magic = f.read(4)
        assert magic in (b"\x7fELF", b"\xcf\xfa\xed\xfe"), f"lro is not a native executable: {magic!r}"
        # No Python code: just the binary and the metadata.
        assert [n for n in names if n.endswith(".py")] == []
        meta = Parser().parsestr(zf.read(f"{name}-{PROJECT['version']}.dist-info/METADATA").decode())
    assert meta["Name"] == PROJECT["name"]
    assert meta["Version"] == PROJECT["version"]
    assert meta["Requires-Python"] == PROJECT["requires-python"]
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta.get_all("Requires-Dist") is None


def test_installed_lro_version(installed_lro):
    proc = run(installed_lro, "--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"lro {WORKSPACE_VERSION}"


def test_installed_lro_help_lists_every_subcommand(installed_lro):
    proc = run(installed_lro, "--help")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Usage: lro <COMMAND>" in out, out
    listed = {line.split()[0] for line in out.split("Commands:", 1)[1].split("Options:", 1)[0].splitlines() if line.strip()}
    assert SUBCOMMANDS <= listed, out
    # The exit-status table (after_help) is part of the shipped help.
    assert "Exit status (every subcommand):" in out, out


def test_installed_lro_usage_error_exits_2(installed_lro):
    proc = run(installed_lro, "no-such-command")
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "no-such-command" in proc.stderr


def test_installed_lro_proxies_a_real_server(installed_lro, tmp_path):
    """`lro proxy` from the venv in front of the demo server without its own LRO: the
    official Python SDK client sees the server's tools plus `lro_extract`, and a large
    result comes back as a descriptor whose file the proxy wrote and real `jq` reads."""
    import asyncio
    import json
    import shutil

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    server = MEMORY_SERVER
    assert server.is_file(), f"{server} missing: run `cargo build --workspace --bins`"
    out = tmp_path / "offload"
    env = {
        "PATH": str(installed_lro.parent),
        "HOME": os.environ.get("HOME", "/"),
        "ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR": str(out),
        "RUST_LOG": "warn",
    }
    params = StdioServerParameters(command=str(installed_lro), args=["proxy", "--", str(server), "--no-lro"], env=env)

    async def session() -> tuple[list[str], dict]:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as client:
                await asyncio.wait_for(client.initialize(), 60)
                tools = [t.name for t in (await client.list_tools()).tools]
                result = await asyncio.wait_for(client.call_tool("list_memories", {"limit": 500, "detail": "full"}), 60)
                return tools, json.loads(result.content[0].text)

    tools, descriptor = asyncio.run(session())
    assert set(tools) == {"inject_context", "list_memories", "recall_memories", "search_memories", "lro_extract"}, tools
    assert descriptor["summary"]["count"] == 500
    path = descriptor["file_path"]
    assert path.startswith(str(out)), path
    records = subprocess.run(
        [shutil.which("jq") or "jq", "-c", "."],
        input="".join(open(path, encoding="utf-8").readlines()[1:]),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert records.returncode == 0, records.stderr
    assert len(records.stdout.splitlines()) == 500

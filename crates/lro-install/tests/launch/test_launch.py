"""`lro install`, then each wrapped server launched exactly as its client
launches it (command, args, env and cwd from the file the client reads) and
driven by the official Python SDK through a call that gets a descriptor.

The configuration files are written in a temporary home from each client's
documented format: Claude Code's project `.mcp.json` (strict JSON), Cursor's
`~/.cursor/mcp.json` (with comments and a trailing comma), Codex's
`~/.codex/config.toml` (TOML, with Codex's environment allow-list), and VS
Code's `.vscode/mcp.json`. Upstreams: the interop suite's Python SDK fixture
server over stdio, and the memory-server over streamable HTTP behind a
bearer token whose literal value the HTTP entry carries.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from testkit.procs import serving

# The interop suite's fixture server (crates/lro-proxy/tests/interop/fixtures).
PY_SERVER = Path(__file__).resolve().parents[3] / "lro-proxy" / "tests" / "interop" / "fixtures" / "py_server.py"
TOKEN = "tok-launch-7f3a9c"
# What Codex passes a stdio server from its own environment besides `env`
# and `env_vars` (codex-rs rmcp-client's default allow-list).
CODEX_ALLOWED = ("HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ")
CALL_S = 60


def strip_jsonc(text: str) -> str:
    """JSON with // and /* */ comments and trailing commas, as editors read it."""
    out, i, in_str = [], 0, False
    while i < len(text):
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif text.startswith("//", i):
            i = text.find("\n", i) - 1 if "\n" in text[i:] else len(text)
        elif text.startswith("/*", i):
            i = text.index("*/", i) + 1
        else:
            out.append(c)
        i += 1
    return re.sub(r",(\s*[}\]])", r"\1", "".join(out))


def install(lro: Path, home: Path, cwd: Path, client: str, *extra: str) -> str:
    env = {**os.environ, "HOME": str(home), "XDG_STATE_HOME": str(home / ".state")}
    env.pop("XDG_CONFIG_HOME", None)
    env.pop("CODEX_HOME", None)
    out = subprocess.run([str(lro), "install", client, *extra], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


async def call(params: StdioServerParameters, tool: str, arguments: dict) -> dict:
    """The descriptor a real call through the launched entry gets."""
    with anyio.fail_after(CALL_S):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool(tool, arguments)
    texts = [c.text for c in result.content if c.type == "text"]
    assert texts, result
    descriptor = json.loads(texts[0])
    assert descriptor.get("offloaded") is True, texts[0][:400]
    return descriptor


def launch(entry: dict, base_env: dict[str, str], cwd: Path) -> StdioServerParameters:
    """An entry as a client launches it: its command and args, the client's
    environment with the entry's on top, in its cwd (relative to the
    project)."""
    assert entry["args"][0] == "proxy", entry
    workdir = cwd / entry["cwd"] if "cwd" in entry else cwd
    return StdioServerParameters(command=entry["command"], args=entry["args"], env={**base_env, **entry.get("env", {})}, cwd=workdir)


def check(descriptor: dict, out_dir: Path, records: int) -> None:
    assert descriptor["summary"]["count"] == records, descriptor["summary"]
    path = Path(descriptor["file_path"])
    assert path.is_relative_to(out_dir), path
    assert len(path.read_text().splitlines()) == records + 1


@pytest.fixture
def world(tmp_path: Path, binaries):
    home = tmp_path / "home"
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    home.mkdir()
    return home, project, binaries


def offload(out_dir: Path) -> dict[str, str]:
    return {"ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR": str(out_dir), "ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS": "500"}


def test_claude_code_project_servers_run_through_the_proxy(world, tmp_path: Path) -> None:
    home, project, binaries = world
    out_dir = tmp_path / "offloads"
    with serving("memory-server", [str(binaries.memory_server), "--http", "127.0.0.1:0", "--bearer", f"{TOKEN}=alice"], tmp_path / "ms.log") as url:
        config = {
            "mcpServers": {
                "fixture": {"type": "stdio", "command": sys.executable, "args": [str(PY_SERVER)], "env": offload(out_dir)},
                "memories": {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {TOKEN}"}},
            }
        }
        (project / ".mcp.json").write_text(json.dumps(config, indent=2) + "\n")
        said = install(binaries.lro, home, project / "src", "claude-code", "--scope", "project")
        assert "wrapped: fixture, memories" in said, said

        wrapped = json.loads((project / ".mcp.json").read_text())["mcpServers"]
        assert wrapped["fixture"]["command"] == str(binaries.lro)
        # The token is in the entry's environment, never in its arguments.
        assert TOKEN not in " ".join(wrapped["memories"]["args"])
        # The HTTP entry has no offload settings of its own: the proxy takes
        # them from the client's environment, which the client passes on.
        client_env = {**os.environ, "RUST_LOG": "warn", **offload(out_dir)}
        check(anyio.run(call, launch(wrapped["fixture"], client_env, project), "big_json", {"n": 300}), out_dir, 300)
        desc = anyio.run(call, launch(wrapped["memories"], client_env, project), "list_memories", {})
        check(desc, out_dir, 500)


def test_cursor_user_servers_with_comments_run_through_the_proxy(world, tmp_path: Path) -> None:
    home, project, binaries = world
    out_dir = tmp_path / "offloads"
    cursor = home / ".cursor" / "mcp.json"
    cursor.parent.mkdir()
    env = json.dumps(offload(out_dir))
    original = (
        "{\n  // servers for every project\n  \"mcpServers\": {\n"
        f"    \"fixture\": {{ \"command\": {json.dumps(sys.executable)}, \"args\": [{json.dumps(str(PY_SERVER))}], \"env\": {env} }},\n"
        "  },\n}\n"
    )
    cursor.write_text(original)
    install(binaries.lro, home, project, "cursor")
    text = cursor.read_text()
    assert "// servers for every project" in text
    entry = json.loads(strip_jsonc(text))["mcpServers"]["fixture"]
    check(anyio.run(call, launch(entry, {**os.environ, "RUST_LOG": "warn"}, project), "big_json", {"n": 120}), out_dir, 120)

    install(binaries.lro, home, project, "cursor")
    assert cursor.read_text() == text
    out = subprocess.run(
        [str(binaries.lro), "uninstall", "cursor"],
        env={**os.environ, "HOME": str(home), "XDG_STATE_HOME": str(home / ".state")},
        cwd=project, capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert cursor.read_text() == original


def test_codex_servers_run_with_codex_environment(world, tmp_path: Path) -> None:
    home, project, binaries = world
    out_dir = tmp_path / "offloads"
    codex = home / ".codex" / "config.toml"
    codex.parent.mkdir()
    env = ", ".join(f"{k} = {json.dumps(v)}" for k, v in offload(out_dir).items())
    codex.write_text(
        "# Codex configuration\nmodel = \"gpt-5-codex\"\n\n"
        "[mcp_servers.fixture]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(PY_SERVER))}]\n"
        f"cwd = {json.dumps(str(project))}\n"
        "startup_timeout_sec = 30\n"
        f"env = {{ {env} }}\n"
    )
    install(binaries.lro, home, project, "codex")
    entry = tomllib.loads(codex.read_text())["mcp_servers"]["fixture"]
    assert entry["cwd"] == str(project) and entry["startup_timeout_sec"] == 30
    # Codex gives a stdio server only its allow-list, `env` and `env_vars`.
    base = {k: os.environ[k] for k in CODEX_ALLOWED if k in os.environ}
    check(anyio.run(call, launch(entry, base, project), "big_json", {"n": 200}), out_dir, 200)


def test_vscode_workspace_http_server_runs_through_the_proxy(world, tmp_path: Path) -> None:
    home, project, binaries = world
    out_dir = tmp_path / "offloads"
    with serving("memory-server", [str(binaries.memory_server), "--http", "127.0.0.1:0", "--bearer", f"{TOKEN}=bob"], tmp_path / "ms.log") as url:
        vscode = project / ".vscode" / "mcp.json"
        vscode.parent.mkdir()
        vscode.write_text(
            "{\n\t// workspace servers\n\t\"servers\": {\n"
            f"\t\t\"memories\": {{\n\t\t\t\"type\": \"http\",\n\t\t\t\"url\": \"{url}\",\n"
            f"\t\t\t\"headers\": {{ \"Authorization\": \"Bearer {TOKEN}\" }}\n\t\t}}\n\t}}\n}}\n"
        )
        install(binaries.lro, home, project / "src", "vscode", "--scope", "project")
        entry = json.loads(strip_jsonc(vscode.read_text()))["servers"]["memories"]
        assert entry["type"] == "stdio" and TOKEN not in " ".join(entry["args"])
        client_env = {**os.environ, "RUST_LOG": "warn", **offload(out_dir)}
        desc = anyio.run(call, launch(entry, client_env, project), "list_memories", {})
        check(desc, out_dir, 500)

"""`lro` ships on npm as Codex and Biome ship theirs: a launcher package
(deploy/npm/lro-mcp) and one package per platform holding the binary, an
optional dependency npm installs where its `os` and `cpu` match.

`deploy/npm/pack.sh` packs both (the debug binary, `LRO_BIN`), they are
published to Verdaccio on loopback (deploy/npm/registry, pinned; .ci/run
installs it), and `npx --registry … -y lro-mcp proxy -- UPSTREAM` is driven by
the official Python SDK through one offloaded call, with a fresh npm cache and
home: nothing comes from the workspace or the public registry.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
import urllib.request
from pathlib import Path
from typing import Iterator

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from lrolib import REPO
from testkit.procs import Background, free_port
from testkit.waiting import wait_until

NPM = REPO / "deploy" / "npm"
LAUNCHER = json.loads((NPM / "lro-mcp" / "package.json").read_text())
WORKSPACE_VERSION = tomllib.loads((REPO / "Cargo.toml").read_text())["workspace"]["package"]["version"]
VERDACCIO = NPM / "registry" / "node_modules" / "verdaccio" / "bin" / "verdaccio"
# Publishing and installing a ~60 MB package.
NPM_S = 300
CONFIG = """\
storage: ./storage
auth:
  htpasswd:
    file: ./htpasswd
uplinks: {}
packages:
  '**':
    access: $all
    publish: $authenticated
max_body_size: 1gb
log: { type: stdout, format: pretty, level: warn }
"""


def test_the_launcher_is_the_workspace_version_and_names_every_platform() -> None:
    assert LAUNCHER["version"] == WORKSPACE_VERSION
    platforms = {f"lro-mcp-{os_}-{cpu}" for os_ in ("linux", "darwin") for cpu in ("x64", "arm64")}
    assert LAUNCHER["optionalDependencies"] == {name: WORKSPACE_VERSION for name in platforms}
    assert LAUNCHER["bin"] == {"lro": "bin/lro.js"}


@pytest.fixture(scope="module")
def registry(tmp_path_factory, binaries) -> Iterator[tuple[str, Path, dict[str, str]]]:
    """The packages packed from the debug binary and published to Verdaccio on
    loopback; yields the registry URL, and an npm home that reads from it with
    the environment that uses it (one npm cache for the module's tests)."""
    assert VERDACCIO.is_file(), "Verdaccio is not installed: ./testkit/npm-ci.sh deploy/npm/registry (./.ci/run does it)"
    work = tmp_path_factory.mktemp("npm")
    # A copy without symbols: a third less to compress, publish and unpack.
    binary = work / "lro"
    shutil.copy(binaries.lro, binary)
    subprocess.run(["strip", str(binary)], check=True, timeout=60)
    packed = work / "packed"
    out = subprocess.run(
        [str(NPM / "pack.sh"), str(packed)], env={**os.environ, "LRO_BIN": str(binary)},
        capture_output=True, text=True, timeout=NPM_S,
    )
    assert out.returncode == 0, out.stderr
    tarballs = sorted(packed.glob("*.tgz"))
    assert [t.name for t in tarballs] == [f"lro-mcp-{WORKSPACE_VERSION}.tgz", f"lro-mcp-linux-x64-{WORKSPACE_VERSION}.tgz"]

    (work / "config.yaml").write_text(CONFIG)
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    server = Background(
        [shutil.which("node") or "node", str(VERDACCIO), "--config", str(work / "config.yaml"), "--listen", f"127.0.0.1:{port}"],
        None, work / "verdaccio.log", new_session=True, name="verdaccio",
    )
    try:
        wait_until(lambda: _ping(url), timeout=60, what="verdaccio answering /-/ping")
        request = urllib.request.Request(
            f"{url}-/user/org.couchdb.user:lro", method="PUT",
            data=json.dumps({"name": "lro", "password": "loopback-only"}).encode(),
            headers={"content-type": "application/json"},
        )
        token = json.loads(urllib.request.urlopen(request, timeout=30).read())["token"]
        home = work / "home"
        home.mkdir()
        (home / ".npmrc").write_text(f"registry={url}\n//127.0.0.1:{port}/:_authToken={token}\n")
        # The platform package first: the launcher's optional dependency.
        for tarball in reversed(tarballs):
            out = subprocess.run(
                ["npm", "publish", str(tarball)], env=npm_env(home, work), cwd=home,
                capture_output=True, text=True, timeout=NPM_S,
            )
            assert out.returncode == 0, out.stderr
        yield url, home, npm_env(home, work)
    finally:
        server.stop()


def _ping(url: str) -> bool:
    try:
        return urllib.request.urlopen(f"{url}-/ping", timeout=2).status == 200
    except OSError:
        return False


def npm_env(home: Path, work: Path) -> dict[str, str]:
    """npm with this home's .npmrc and a cache of its own, and no lro on PATH."""
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "lro").exists())
    return {
        "PATH": path, "HOME": str(home), "npm_config_cache": str(work / "cache"),
        "npm_config_update_notifier": "false", "LANG": "C.UTF-8",
    }


def test_npx_runs_lro_from_the_registry(registry) -> None:
    url, home, env = registry
    out = subprocess.run(["npx", "--registry", url, "-y", "lro-mcp", "--version"], env=env, cwd=home, capture_output=True, text=True, timeout=NPM_S)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"lro {WORKSPACE_VERSION}"
    # The launcher passes the exit status through.
    out = subprocess.run(["npx", "--registry", url, "-y", "lro-mcp", "no-such-command"], env=env, cwd=home, capture_output=True, text=True, timeout=NPM_S)
    assert out.returncode == 2 and "no-such-command" in out.stderr, out


def test_npx_lro_proxy_offloads_a_real_call(registry, tmp_path: Path, binaries) -> None:
    url, home, npm = registry
    out_dir = tmp_path / "offload"
    env = {**npm, "ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR": str(out_dir), "RUST_LOG": "warn"}
    params = StdioServerParameters(
        command="npx", args=["--registry", url, "-y", "lro-mcp", "proxy", "--", str(binaries.memory_server), "--no-lro"],
        env=env, cwd=home,
    )

    async def call() -> dict:
        with anyio.fail_after(NPM_S):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool("list_memories", {"limit": 500, "detail": "full"})
                return json.loads(result.content[0].text)

    descriptor = anyio.run(call)
    assert descriptor["summary"]["count"] == 500, descriptor
    path = Path(descriptor["file_path"])
    assert path.is_relative_to(out_dir)
    assert len(path.read_text().splitlines()) == 501
    assert shutil.which("lro", path=env["PATH"]) is None, "an lro on PATH could have stood in for the package's"

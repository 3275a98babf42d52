"""`lro` and `memory-server`, built once per session.

`ensure_built()` runs `cargo build -p lro-cli -p memory-server` once per
session, for the binaries no $LRO_BIN / $LRO_MEMORY_SERVER_BIN names: a no-op
when they are up to date (.ci/test builds them first), a build when a Rust
change is newer. Without cargo on PATH the binaries already there are used.

Another build sharing the target directory may relink a binary at any moment
(the file is gone for a while): `wait_for_binary` waits, bounded, for it to be
back; the process helpers of `testkit.procs` call it before each start.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from testkit.paths import LRO, LRO_VAR, MEMORY_SERVER, MEMORY_SERVER_VAR, REPO
from testkit.waiting import wait_until

# A cold build compiles the whole dependency tree.
BUILD_TIMEOUT_S = 1800
# A relinking build removes the binary for a short while.
RELINK_WAIT_S = 120.0

# The cargo package of each binary, and the variable that names a prebuilt one.
PACKAGES = {LRO: ("lro-cli", LRO_VAR), MEMORY_SERVER: ("memory-server", MEMORY_SERVER_VAR)}


@dataclass(frozen=True)
class Binaries:
    """The binaries the suites run, built and present."""

    lro: Path
    memory_server: Path


_lock = threading.Lock()
_built: Binaries | None = None


def ensure_built() -> Binaries:
    """Builds the binaries (once per session) and waits for them to be present."""
    global _built
    with _lock:
        if _built is None:
            _build()
            _built = Binaries(wait_for_binary(LRO), wait_for_binary(MEMORY_SERVER))
        return _built


def _build() -> None:
    packages = [package for package, var in PACKAGES.values() if not os.environ.get(var)]
    if not packages or shutil.which("cargo") is None:
        return
    cmd = ["cargo", "build", *(arg for package in packages for arg in ("-p", package))]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-6000:]}"


def present(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 0


def wait_for_binary(program: str | Path, timeout: float = RELINK_WAIT_S) -> Path:
    """`program` as a path; when it is one of the binaries and missing, after a
    bounded wait for another build to finish relinking it."""
    path = Path(program)
    if path in PACKAGES and not present(path):
        package, var = PACKAGES[path]
        hint = f"set {var}, or put cargo on PATH" if shutil.which("cargo") is None else f"cargo build -p {package}"
        wait_until(lambda: present(path), timeout=timeout, interval=0.5, what=f"{path} ({hint})")
    return path

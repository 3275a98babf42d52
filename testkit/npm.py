"""The pinned npm test packages, installed once per session by testkit/npm-ci.sh.

A package directory holds package.json (exact versions, and a `check-install`
script proving the install works) and package-lock.json; `npm_ci(dir)` runs
the one pinning script for it, a no-op when node_modules is already that
install (.ci/run runs it ahead of the tests, so the tests stay offline).
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path

from testkit.paths import REPO

NPM_CI = REPO / "testkit" / "npm-ci.sh"
# A cold `npm ci` takes ~15 s; generous for a slow registry.
NPM_CI_TIMEOUT_S = 600

_lock = threading.Lock()
_installed: set[Path] = set()


def npm_ci(package_dir: Path) -> None:
    """Installs the npm package at `package_dir` (once per session); AssertionError when it cannot."""
    package_dir = package_dir.resolve()
    with _lock:
        if package_dir in _installed:
            return
        missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
        assert not missing, f"{' and '.join(missing)} not found: these tests need Node.js >= 20 with npm"
        proc = subprocess.run(
            ["bash", str(NPM_CI), str(package_dir)], capture_output=True, text=True, timeout=NPM_CI_TIMEOUT_S
        )
        where = package_dir.relative_to(REPO)
        assert proc.returncode == 0, f"testkit/npm-ci.sh {where} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        _installed.add(package_dir)

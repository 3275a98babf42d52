"""The fixtures every suite may use (registered by the root conftest.py).

- `binaries` (session): `lro` and `memory-server` built and present
  (`testkit.binaries.ensure_built`); a suite that runs them requests it, most
  through an autouse fixture of its own.
- `jq` (session): the path of the real `jq`, for the suites that run recipes.
"""

from __future__ import annotations

import shutil

import pytest

from testkit.binaries import Binaries, ensure_built


@pytest.fixture(scope="session")
def binaries() -> Binaries:
    return ensure_built()


@pytest.fixture(scope="session")
def jq() -> str:
    path = shutil.which("jq")
    if path is None:
        pytest.fail("jq not found on PATH (the recipes run through the real jq binary)")
    return path

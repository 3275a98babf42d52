"""pytest configuration for deploy/tests (run: python3 -m pytest deploy/tests).

Session fixtures shared by the tests:

- `lro_wheel`: the `lro` Python wheel (crates/lro-cli/pyproject.toml, maturin
  `bindings = "bin"`), built once per session with the dev profile into the
  workspace target directory, or the wheel named by $LRO_WHEEL.
- `installed_lro`: that wheel pip-installed (offline) into a fresh virtual
  environment; the path of the venv's `lro` executable.
- `side_by_side`: the conformance suite's runs against the fixture server,
  directly and through `lro proxy` (conformance.side_by_side); its table is
  printed in the terminal summary, whatever the tests that read it conclude.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path
from typing import Iterator

import pytest

import conformance
from testkit.paths import REPO

CLI_CRATE = REPO / "crates" / "lro-cli"  # Cargo.toml and pyproject.toml of the wheel
# A cold build compiles the whole dependency tree of lro-cli.
WHEEL_BUILD_TIMEOUT_S = 1800
PIP_TIMEOUT_S = 300
# Where side_by_side leaves its table for the terminal summary.
CONFORMANCE_TABLE = pytest.StashKey[str]()


def maturin_command() -> list[str]:
    """maturin, from the Python that runs pytest (.ci/run installs it there) or PATH."""
    try:
        import maturin  # noqa: F401  (the package only launches its bundled binary)

        return [sys.executable, "-m", "maturin"]
    except ImportError:
        exe = shutil.which("maturin")
        if exe is None:
            pytest.fail("maturin not found: python3 -m pip install 'maturin>=1.9.2,<2' (./.ci/run does it)")
        return [exe]


def build_wheel(out_dir: Path) -> Path:
    """`maturin build --profile dev` of crates/lro-cli; the path of the one wheel in out_dir.

    Cargo's own target directory is used ($CARGO_TARGET_DIR, else
    <repo>/target), so the debug artifacts of `cargo build` are reused; the
    dev profile keeps the build an incremental one, not a release build."""
    if shutil.which("cargo") is None:
        pytest.fail("cargo not found (or set LRO_WHEEL to the path of a built wheel)")
    cmd = [
        *maturin_command(), "build",
        "--profile", "dev",
        "--manifest-path", str(CLI_CRATE / "Cargo.toml"),
        "--out", str(out_dir),
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=WHEEL_BUILD_TIMEOUT_S)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}"
    wheels = sorted(out_dir.glob("*.whl"))
    assert len(wheels) == 1, f"expected one wheel in {out_dir}, found {[w.name for w in wheels]}\n{proc.stderr[-4000:]}"
    return wheels[0]


def venv_bin(venv_dir: Path) -> Path:
    return venv_dir / ("Scripts" if os.name == "nt" else "bin")


@pytest.fixture(scope="session")
def lro_wheel(tmp_path_factory) -> Iterator[Path]:
    """Path of the lro wheel: $LRO_WHEEL (e.g. a dist build) if set, else a fresh dev-profile build
    (deleted at the end of the session: a dev wheel is ~100 MB)."""
    given = os.environ.get("LRO_WHEEL")
    if given:
        wheel = Path(given).resolve()
        assert wheel.is_file() and wheel.suffix == ".whl", f"LRO_WHEEL={given} is not a wheel file"
        yield wheel
        return
    out_dir = tmp_path_factory.mktemp("wheel")
    yield build_wheel(out_dir)
    shutil.rmtree(out_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def installed_lro(lro_wheel, tmp_path_factory) -> Iterator[Path]:
    """The `lro` executable of the wheel, installed in a fresh venv.

    The wheel is installed with pip --no-index --no-deps (it has no
    dependencies; nothing is downloaded) into a new virtual environment under
    the session's temp dir. Yields the absolute path of <venv>/bin/lro, an
    executable file; the venv's bin dir is its parent (the directory a user
    has on PATH after `pip install`/`uv tool install`). The venv lasts for the
    whole session and is deleted after it (a dev-profile lro is ~370 MB); do
    not install other things into it."""
    venv_dir = tmp_path_factory.mktemp("lro-venv")
    venv.EnvBuilder(with_pip=True, clear=True).create(venv_dir)
    python = venv_bin(venv_dir) / ("python.exe" if os.name == "nt" else "python")
    cmd = [
        str(python), "-m", "pip", "install",
        "--no-index", "--no-deps", "--no-cache-dir", "--disable-pip-version-check",
        str(lro_wheel),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, env=env)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    lro = venv_bin(venv_dir) / ("lro.exe" if os.name == "nt" else "lro")
    assert lro.is_file() and os.access(lro, os.X_OK), f"pip installed no {lro}:\n{proc.stdout}"
    yield lro
    shutil.rmtree(venv_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def side_by_side(binaries, tmp_path_factory, pytestconfig) -> conformance.SideBySide:
    """Every conformance run against the fixture, directly and through the proxy, once per session."""
    side = conformance.side_by_side(tmp_path_factory.mktemp("conformance"))
    pytestconfig.stash[CONFORMANCE_TABLE] = conformance.table(side)
    return side


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """The side-by-side table, when a test asked for it (printed even when its assertions fail or xfail)."""
    text = config.stash.get(CONFORMANCE_TABLE, None)
    if text:
        terminalreporter.write_sep("=", "MCP conformance: the fixture directly and through lro proxy")
        terminalreporter.write_line(text)

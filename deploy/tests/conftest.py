"""pytest configuration for deploy/tests (run: python3 -m pytest deploy/tests)."""

import sys
from pathlib import Path

# Make the shared helpers importable whatever the rootdir/import mode.
sys.path.insert(0, str(Path(__file__).resolve().parent))

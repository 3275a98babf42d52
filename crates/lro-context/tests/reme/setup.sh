#!/usr/bin/env bash
# The ReMe venv for the differential test (test_reme_differential.py): reme-ai
# 0.3.1.10 (the last release with MessageOffloadOp) and flowllm 0.2.0.10,
# pinned by constraints.txt to versions that import (the release's lower
# bounds resolve to an MCP SDK that lacks modules flowllm imports). About
# 900 MB: it lives outside the repository, in $LRO_REME_VENV (default
# ~/.cache/lro/reme-venv), and is reused when it already imports.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${LRO_REME_VENV:-$HOME/.cache/lro/reme-venv}"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import reme_ai.summary.working.message_offload_op' 2>/dev/null; then
  exit 0
fi
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --no-cache-dir -c "$here/constraints.txt" "reme-ai==0.3.1.10" "flowllm[reme]==0.2.0.10"
"$venv/bin/python" -c 'import reme_ai.summary.working.message_offload_op'

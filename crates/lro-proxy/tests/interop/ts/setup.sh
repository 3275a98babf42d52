#!/usr/bin/env bash
# Installs the pinned third-party MCP parts that ../test_everything.py drives
# (@modelcontextprotocol/server-everything and the official TypeScript SDK, for
# client.mjs) into node_modules/ here, exactly as package-lock.json says (`npm ci`).
# Idempotent: when node_modules already matches package-lock.json and this Node
# major version, it only checks the entry points and exits (well under a second).
#
# Needs node >= 20 and npm; network only for the npm registry, and only when
# node_modules is missing or stale. Safe to run concurrently (flock).
#
#   crates/lro-proxy/tests/interop/ts/setup.sh            install if needed
#   crates/lro-proxy/tests/interop/ts/setup.sh --force    reinstall from scratch
set -euo pipefail
cd "$(dirname "$0")"
HERE=$(pwd)

force=0
case "${1:-}" in
  "") ;;
  --force) force=1 ;;
  *) echo "usage: $0 [--force]" >&2; exit 2 ;;
esac

for tool in node npm; do
  command -v "$tool" >/dev/null 2>&1 || { echo "setup.sh: $tool not found (need Node.js >= 20 with npm)" >&2; exit 1; }
done
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  echo "setup.sh: Node.js $(node --version) is too old (need >= 20)" >&2
  exit 1
fi

EVERYTHING_JS=node_modules/@modelcontextprotocol/server-everything/dist/index.js
SDK_CLIENT_JS=node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js
STAMP=node_modules/.lro-setup-stamp

# Serialize concurrent runs (e.g. pytest -n): the second waits, then takes the fast path.
if command -v flock >/dev/null 2>&1; then
  exec 9<"$HERE/setup.sh"  # lock this script itself: no lock file to clean up or ignore
  flock 9
fi

# What an install is valid for: the lockfile's content and the Node major version.
want="$(sha256sum package-lock.json | cut -d' ' -f1) node$node_major"

if [ "$force" = 0 ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] \
  && [ -f "$EVERYTHING_JS" ] && [ -f "$SDK_CLIENT_JS" ]; then
  exit 0
fi

echo "setup.sh: npm ci in $HERE" >&2
rm -f "$STAMP"
# --ignore-scripts: nothing here needs an install script.
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2

# Smoke test: the client's imports resolve and the server's entry point is there.
node --input-type=module -e '
  await import("@modelcontextprotocol/sdk/client/index.js");
  await import("@modelcontextprotocol/sdk/client/stdio.js");
  await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
' >/dev/null
[ -f "$EVERYTHING_JS" ] || { echo "setup.sh: $EVERYTHING_JS is missing after npm ci" >&2; exit 1; }
printf '%s\n' "$want" >"$STAMP"

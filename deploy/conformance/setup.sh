#!/usr/bin/env bash
# Installs the pinned MCP conformance suite and the reference server's dependencies
# into deploy/conformance/node_modules (from package-lock.json, `npm ci`), then
# applies the Node 20 globSync shim to the suite (patch-globsync.mjs; a no-op on
# Node >= 22). Idempotent: when node_modules already matches package-lock.json and
# this Node major version, it only re-checks the shim and exits (well under a second).
#
# Needs node >= 20 and npm; network only for the npm registry, and only when
# node_modules is missing or stale. Safe to run concurrently (flock).
#
#   deploy/conformance/setup.sh            install if needed
#   deploy/conformance/setup.sh --force    reinstall from scratch
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

[ -f reference/everything-server.ts ] || { echo "setup.sh: $HERE/reference/everything-server.ts is missing" >&2; exit 1; }

SUITE_JS=node_modules/@modelcontextprotocol/conformance/dist/index.js
STAMP=node_modules/.lro-setup-stamp

# Serialize concurrent runs (e.g. pytest -n): the second waits, then takes the fast path.
if command -v flock >/dev/null 2>&1; then
  exec 9<"$HERE/setup.sh"  # lock this script itself: no lock file to clean up or ignore
  flock 9
fi

# What an install is valid for: the lockfile's content and the Node major version.
want="$(sha256sum package-lock.json | cut -d' ' -f1) node$node_major"

if [ "$force" = 0 ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] \
  && [ -f "$SUITE_JS" ] && [ -x node_modules/.bin/tsx ]; then
  node patch-globsync.mjs "$SUITE_JS" >/dev/null
  exit 0
fi

echo "setup.sh: npm ci in $HERE" >&2
rm -f "$STAMP"
# --ignore-scripts: nothing here needs an install script (esbuild, under tsx, finds its
# platform binary through its optional @esbuild/* package).
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2
node patch-globsync.mjs "$SUITE_JS" >&2

# Smoke test: the suite loads (this is what fails on Node 20 without the shim).
node "$SUITE_JS" --version >/dev/null
printf '%s\n' "$want" >"$STAMP"

#!/usr/bin/env bash
# Installs a pinned npm test package: DIR/node_modules exactly as DIR/package-lock.json
# says (`npm ci`), then runs the package's own `check-install` script (package.json),
# which proves the install works (and applies any shim it needs). Idempotent: when
# node_modules already matches package-lock.json and this Node major version, it
# only runs `check-install` and exits (about a second).
#
# The packages: deploy/conformance (the MCP conformance suites 0.2.0-alpha.12 and
# 0.1.16, which then run on node >= 22: testkit/node.py) and
# crates/lro-proxy/tests/interop/ts (server-everything, -filesystem,
# -memory and the TypeScript SDK). Needs node >= 20 and npm; network only for the npm registry,
# and only when node_modules is missing or stale. Safe to run concurrently (flock).
#
#   testkit/npm-ci.sh DIR            install if needed
#   testkit/npm-ci.sh DIR --force    reinstall from scratch
set -euo pipefail
me="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"

usage() { echo "usage: $0 DIR [--force]" >&2; exit 2; }
[ $# -ge 1 ] || usage
dir=$1
force=0
case "${2:-}" in
  "") ;;
  --force) force=1 ;;
  *) usage ;;
esac
[ $# -le 2 ] || usage
[ -f "$dir/package-lock.json" ] || { echo "npm-ci.sh: $dir has no package-lock.json" >&2; exit 2; }
cd "$dir"
here=$(pwd)

for tool in node npm; do
  command -v "$tool" >/dev/null 2>&1 || { echo "npm-ci.sh: $tool not found (need Node.js >= 20 with npm)" >&2; exit 1; }
done
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  echo "npm-ci.sh: Node.js $(node --version) is too old (need >= 20)" >&2
  exit 1
fi

STAMP=node_modules/.lro-setup-stamp

# Serialize concurrent runs (e.g. pytest -n): the second waits, then takes the fast path.
if command -v flock >/dev/null 2>&1; then
  exec 9<"$me"  # lock this script itself: no lock file to clean up or ignore
  flock 9
fi

# What an install is valid for: the lockfile's content and the Node major version.
want="$(sha256sum package-lock.json | cut -d' ' -f1) node$node_major"

if [ "$force" = 0 ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] \
  && npm run --silent check-install >/dev/null 2>&1; then
  exit 0
fi

echo "npm-ci.sh: npm ci in $here" >&2
rm -f "$STAMP"
# --ignore-scripts: nothing here needs an install script (esbuild, under tsx, finds its
# platform binary through its optional @esbuild/* package).
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2
npm run --silent check-install >&2
printf '%s\n' "$want" >"$STAMP"

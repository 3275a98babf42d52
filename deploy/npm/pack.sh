#!/usr/bin/env bash
# Packs the npm packages of `lro` into OUTDIR: the launcher (lro-mcp) and
# this platform's binary package (lro-mcp-<os>-<cpu>), as `npm pack` .tgz
# files, ready for `npm publish`.
#
#   deploy/npm/pack.sh OUTDIR            packs target/release/lro (built with
#                                        `cargo build --release -p lro-cli` when missing)
#   LRO_BIN=PATH deploy/npm/pack.sh OUT  packs another binary (the tests pack the debug one)
#
# The version is the launcher's (deploy/npm/lro-mcp/package.json), which is
# the workspace's; every platform package carries the same one.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)

bin=${LRO_BIN:-}
if [ -z "$bin" ]; then
  bin="${CARGO_TARGET_DIR:-$repo/target}/release/lro"
  [ -x "$bin" ] || (cd "$repo" && cargo build --release -p lro-cli)
fi
[ -x "$bin" ] || { echo "pack.sh: $bin is not an executable" >&2; exit 1; }

case "$(uname -s)" in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  *) echo "pack.sh: no npm package for $(uname -s)" >&2; exit 1 ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) cpu=x64 ;;
  aarch64 | arm64) cpu=arm64 ;;
  *) echo "pack.sh: no npm package for $(uname -m)" >&2; exit 1 ;;
esac
version=$(node -p 'require(process.argv[1]).version' "$here/lro-mcp/package.json")

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
platform="$stage/lro-mcp-$os-$cpu"
mkdir -p "$platform/bin"
cp "$bin" "$platform/bin/lro"
chmod 0755 "$platform/bin/lro"
cat >"$platform/package.json" <<JSON
{
  "name": "lro-mcp-$os-$cpu",
  "version": "$version",
  "description": "The lro binary for $os $cpu (used by the lro-mcp package).",
  "license": "Apache-2.0",
  "os": ["$os"],
  "cpu": ["$cpu"],
  "files": ["bin/lro"],
  "preferUnplugged": true
}
JSON
(cd "$stage" && npm pack --silent "$here/lro-mcp" "$platform" --pack-destination "$out" >/dev/null)
ls "$out"/lro-mcp-"$version".tgz "$out"/lro-mcp-"$os"-"$cpu"-"$version".tgz

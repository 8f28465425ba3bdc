#!/usr/bin/env bash
# Tenants from their own network namespaces (issue 16, as MTDA's VFs):
# each tenant's packet generator runs in a network namespace of its own,
# joined to the host by a veth pair (host 10.77.I.1, tenant 10.77.I.2),
# and isolad, on the host, listens on every host-side address and matches
# each tenant's flow on its source address. Tenant 1 floods (as fast as
# its window allows) while the others send at RATE; the run prints each
# tenant's packets/s, loss and reply latency. Where network namespaces
# cannot be made (not root, or a sandbox without CAP_SYS_ADMIN and
# CAP_NET_ADMIN), it says so and exits 0 without running.
#
# Usage: scripts/netns_tenants.sh
# Settings (environment): TENANTS=2, RATE=5k/s (each tenant but the
# first), SIZE=64B, KERNEL=crc32c, POLICY=wlbvt (the engine's),
# DURATION=5s, WARMUP=1s, QUEUE_DEPTH=8, KEEP=1 keeps the reports' folder.
# Builds the binaries (perf profile: docs/perf.md's) into ${CARGO_TARGET_DIR:-target}.
set -euo pipefail
cd "$(dirname "$0")/.."
TENANTS=${TENANTS:-2}
RATE=${RATE:-5k/s}
SIZE=${SIZE:-64B}
KERNEL=${KERNEL:-crc32c}
POLICY=${POLICY:-wlbvt}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-1s}
QUEUE_DEPTH=${QUEUE_DEPTH:-8}
PORT=9000
command -v jq >/dev/null || { echo "error: jq is needed to read the reports" >&2; exit 1; }
if ! command -v ip >/dev/null; then
  echo "skipping: no \`ip\` command (iproute2) to make network namespaces"
  exit 0
fi
if ! probe=$(ip netns add isola-probe-$$ 2>&1); then
  echo "skipping: network namespaces cannot be made here (needs root with CAP_SYS_ADMIN and CAP_NET_ADMIN): $probe"
  exit 0
fi
ip netns del "isola-probe-$$"

. scripts/isolad_scratch.sh

made=()
teardown() {
  for i in "${made[@]}"; do
    ip netns del "isola-t$i" 2>/dev/null || true
    ip link del "isola-h$i" 2>/dev/null || true
  done
  cleanup
}
trap teardown EXIT

for i in $(seq 1 "$TENANTS"); do
  ip netns add "isola-t$i"
  made+=("$i")
  ip link add "isola-h$i" type veth peer name "isola-n$i"
  ip link set "isola-n$i" netns "isola-t$i"
  ip addr add "10.77.$i.1/24" dev "isola-h$i"
  ip link set "isola-h$i" up
  ip netns exec "isola-t$i" ip addr add "10.77.$i.2/24" dev "isola-n$i"
  ip netns exec "isola-t$i" ip link set "isola-n$i" up
  ip netns exec "isola-t$i" ip link set lo up
done

{
  udp=$(for i in $(seq 1 "$TENANTS"); do printf '"10.77.%s.1:%s", ' "$i" "$PORT"; done)
  printf '[daemon]\nsocket = "isolad.sock"\nudp = [%s]\nspin = "0s"\n\n' "${udp%, }"
  printf '[[engine]]\nname = "pu"\nkind = "pu"\nqueue_depth = %s\npolicy = "%s"\n' "$QUEUE_DEPTH" "$POLICY"
  for i in $(seq 1 "$TENANTS"); do
    printf '\n[[tenant]]\nname = "t%s"\nmemory_quota = "16MiB"\nusers = [%s]\nqueue_cap = 256\n' "$i" "$(id -u)"
    printf '\n[[tenant.flow]]\nmatch = { src_ip = "10.77.%s.2", proto = 17 }\nkernel = "%s"\n' "$i" "$KERNEL"
  done
} > "$dir/isolad.toml"
start_isolad
sleep 0.2

echo "$TENANTS tenants, each in network namespace isola-tI over a veth pair; $KERNEL on $SIZE, engine policy $POLICY, queue depth $QUEUE_DEPTH; tenant 1 floods, the others send at $RATE; $DURATION after $WARMUP warm-up"
pids=()
for i in $(seq 1 "$TENANTS"); do
  rate=$RATE
  [ "$i" = 1 ] && rate=max
  ip netns exec "isola-t$i" "$bin/isola" load udp --bind "10.77.$i.2" --to "10.77.$i.1:$PORT" \
    --rate "$rate" --size "$SIZE" --duration "$DURATION" --warmup "$WARMUP" --json "$dir/t$i.json" > /dev/null &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
printf '%-7s %-10s %-12s %-8s %-22s\n' tenant sent "replies/s" loss "p50 / p99 (us)"
for i in $(seq 1 "$TENANTS"); do
  jq -r --arg t "t$i" \
    '"\($t)\t\(.total.sent)\t\(.total.throughput.received_pps | floor)\t\(.total.loss_pct * 100 | floor / 100)%\t\(.total.latency.p50_ns / 1000 | floor) / \(.total.latency.p99_ns / 1000 | floor)"' "$dir/t$i.json" |
    awk -F'\t' '{ printf "%-7s %-10s %-12s %-8s %-22s\n", $1, $2, $3, $4, $5 }'
done

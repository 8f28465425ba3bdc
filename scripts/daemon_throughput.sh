#!/usr/bin/env bash
# Throughput of small tasks through one isolad from several tenant
# processes at once (docs/perf.md, issue 15): for each process count, that
# many `isola load` processes (closed loop), each its own tenant, run
# against one daemon together; prints each process's answered tasks/s, the
# total, and each process's client p50/p99.
#
# Usage: scripts/daemon_throughput.sh
# Settings (environment): PROCS="1 2 8", OP=crc32c, SIZE=64B,
# CONCURRENCY=32 (per process), DURATION=5s, WARMUP=1s, WORKERS=1 (the
# engine's worker threads), SPIN (the clients' --spin, e.g. 0s: they sleep
# at once instead of polling 50 us), KEEP=1 keeps the reports' folder.
# Builds release binaries into ${CARGO_TARGET_DIR:-target}.
set -euo pipefail
cd "$(dirname "$0")/.."
PROCS=${PROCS:-"1 2 8"}
OP=${OP:-crc32c}
SIZE=${SIZE:-64B}
CONCURRENCY=${CONCURRENCY:-32}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-1s}
WORKERS=${WORKERS:-1}
SPIN=${SPIN:-}
command -v jq >/dev/null || { echo "error: jq is needed to sum the reports" >&2; exit 1; }

. scripts/isolad_scratch.sh

max=0
for n in $PROCS; do [ "$n" -gt "$max" ] && max=$n; done
uid=$(id -u)
{
  printf '[daemon]\nsocket = "isolad.sock"\n\n[[engine]]\nname = "acc"\nworkers = %s\n' "$WORKERS"
  printf 'cost = { base = "1us", per_byte_ns = 0.5 }\n'
  for i in $(seq 1 "$max"); do
    printf '\n[[tenant]]\nname = "t%s"\nmemory_quota = "1MiB"\nusers = [%s]\n' "$i" "$uid"
  done
} > "$dir/isolad.toml"
start_isolad

echo "$OP $SIZE, closed loop $CONCURRENCY per process, $DURATION after $WARMUP warm-up, engine workers $WORKERS${SPIN:+, client spin $SPIN}"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
printf '%-9s %-14s %-44s %-24s\n' processes "total tasks/s" "per process tasks/s" "client p50 / p99 (us)"
for n in $PROCS; do
  pids=()
  for i in $(seq 1 "$n"); do
    "$bin/isola" load --socket "$dir/isolad.sock" --tenant "t$i" --op "$OP" --sizes "$SIZE" \
      --concurrency "$CONCURRENCY" --duration "$DURATION" --warmup "$WARMUP" \
      ${SPIN:+--spin "$SPIN"} --json "$dir/p$n-$i.json" > /dev/null &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  reports=()
  for i in $(seq 1 "$n"); do reports+=("$dir/p$n-$i.json"); done
  total=$(jq -s 'map(.throughput.tasks_per_s) | add | floor' "${reports[@]}")
  each=$(jq -s -r 'map(.throughput.tasks_per_s | floor | tostring) | join(" ")' "${reports[@]}")
  lat=$(jq -s -r 'map("\(.latency.client.p50_ns / 1000 | floor)/\(.latency.client.p99_ns / 1000 | floor)") | join(" ")' "${reports[@]}")
  bad=$(jq -s 'map(.counts.submitted - .counts.ok) | add' "${reports[@]}")
  printf '%-9s %-14s %-44s %-24s\n' "$n" "$total" "$each" "$lat"
  [ "$bad" -eq 0 ] || echo "  ($bad tasks not answered ok; see the reports)"
done

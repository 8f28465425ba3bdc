#!/usr/bin/env bash
# Throughput of small tasks through one isolad from several tenant
# processes at once (docs/perf.md, issue 15): for each process count, that
# many `isola load` processes (closed loop), each its own tenant, run
# against one daemon together; prints each process's answered tasks/s, the
# total, each process's client p50/p99 (the median process's and the
# worst's where there are more than 8), the daemon's CPU time per answered
# task over the round (all its threads: rings, scheduling, the operator)
# and its resident memory once the round's tenants are attached, less its
# memory before any tenant attached, per tenant (issue 17's scale figures).
#
# Usage: scripts/daemon_throughput.sh
# Settings (environment): PROCS="1 2 8", OP=crc32c, SIZE=64B,
# CONCURRENCY=32 (per process), DURATION=5s, WARMUP=1s, WORKERS=1 (the
# engine's worker threads), SPIN (the clients' --spin, e.g. 0s: they sleep
# at once instead of polling 50 us), INLINE_BELOW (the engine's
# inline_below, e.g. 0s: every task to the worker; default: isolad's),
# KEEP=1 keeps the reports' folder.
# Builds the binaries (perf profile: docs/perf.md's) into ${CARGO_TARGET_DIR:-target}.
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
INLINE_BELOW=${INLINE_BELOW:-}
command -v jq >/dev/null || { echo "error: jq is needed to sum the reports" >&2; exit 1; }

. scripts/isolad_scratch.sh

max=0
for n in $PROCS; do [ "$n" -gt "$max" ] && max=$n; done
uid=$(id -u)
{
  printf '[daemon]\nsocket = "isolad.sock"\n\n[[engine]]\nname = "acc"\nworkers = %s\n' "$WORKERS"
  printf 'cost = { base = "1us", per_byte_ns = 0.5 }\n'
  [ -n "$INLINE_BELOW" ] && printf 'inline_below = "%s"\n' "$INLINE_BELOW"
  for i in $(seq 1 "$max"); do
    printf '\n[[tenant]]\nname = "t%s"\nmemory_quota = "1MiB"\nusers = [%s]\n' "$i" "$uid"
  done
} > "$dir/isolad.toml"
start_isolad
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$daemon/status"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$daemon/stat"; }
hz=$(getconf CLK_TCK)
idle_rss=$(rss_kib)

echo "$OP $SIZE, closed loop $CONCURRENCY per process, $DURATION after $WARMUP warm-up, engine workers $WORKERS${INLINE_BELOW:+, inline_below $INLINE_BELOW}${SPIN:+, client spin $SPIN}"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "isolad resident before any tenant attached: $idle_rss KiB"
printf '%-9s %-14s %-44s %-24s %-14s %-14s\n' processes "total tasks/s" "per process tasks/s" "client p50 / p99 (us)" "daemon cpu/task" "rss/tenant"
for n in $PROCS; do
  pids=()
  ticks=$(cpu_ticks)
  for i in $(seq 1 "$n"); do
    "$bin/isola" load --socket "$dir/isolad.sock" --tenant "t$i" --op "$OP" --sizes "$SIZE" \
      --concurrency "$CONCURRENCY" --duration "$DURATION" --warmup "$WARMUP" \
      ${SPIN:+--spin "$SPIN"} --json "$dir/p$n-$i.json" > /dev/null &
    pids+=($!)
  done
  # Resident memory with every tenant of the round still attached (they
  # detach as their runs end).
  sleep 1
  rss=$(rss_kib)
  for p in "${pids[@]}"; do wait "$p"; done
  ticks=$(($(cpu_ticks) - ticks))
  reports=()
  for i in $(seq 1 "$n"); do reports+=("$dir/p$n-$i.json"); done
  total=$(jq -s 'map(.throughput.tasks_per_s) | add | floor' "${reports[@]}")
  answered=$(jq -s 'map(.counts.ok) | add' "${reports[@]}")
  if [ "$n" -le 8 ]; then
    each=$(jq -s -r 'map(.throughput.tasks_per_s | floor | tostring) | join(" ")' "${reports[@]}")
    lat=$(jq -s -r 'map("\(.latency.client.p50_ns / 1000 | floor)/\(.latency.client.p99_ns / 1000 | floor)") | join(" ")' "${reports[@]}")
  else
    each=$(jq -s -r 'map(.throughput.tasks_per_s) | sort | "min \(.[0] | floor), median \(.[length / 2 | floor] | floor), max \(.[-1] | floor)"' "${reports[@]}")
    lat=$(jq -s -r '(map(.latency.client.p50_ns) | sort | .[length / 2 | floor] / 1000 | floor) as $m | (map(.latency.client.p99_ns) | max / 1000 | floor) as $w | "median \($m)/worst \($w)"' "${reports[@]}")
  fi
  bad=$(jq -s 'map(.counts.submitted - .counts.ok) | add' "${reports[@]}")
  cpu=$(echo "scale=2; $ticks * 1000000 / $hz / ($answered + 1)" | bc -l)
  per_tenant=$(( (rss - idle_rss) / n ))
  printf '%-9s %-14s %-44s %-24s %-14s %-14s\n' "$n" "$total" "$each" "$lat" "${cpu} us" "${per_tenant} KiB"
  [ "$bad" -eq 0 ] || echo "  ($bad tasks not answered ok; see the reports)"
done

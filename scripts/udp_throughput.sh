#!/usr/bin/env bash
# Packets per second through isolad's packet path against a plain batched
# UDP echo server on the same machine, in the same sitting (docs/perf.md,
# issue 16): one isolad with one tenant whose flows (one per source port)
# run a trivial kernel, and `isola load udp` sending to it as fast as its
# window allows; then the same generator with --echo-baseline (an echo
# server on a thread of the generator's own process: one recvfrom a
# datagram, one sendmmsg a batch). The two take turns for ROUNDS rounds; prints
# each run's replies/s, loss and reply latency, and each round's ratio.
#
# Usage: scripts/udp_throughput.sh
# Settings (environment): ROUNDS=3, FLOWS=4, WINDOW=64 (per flow),
# SIZE=64B, KERNEL=crc32c, DURATION=5s, WARMUP=1s, WORKERS=0 (the engine's
# worker threads; 0: the dispatcher runs the kernels itself, to completion,
# as the core picks each), QUEUE_DEPTH=32 (with WORKERS of 1 or more:
# dispatches the core may hand the engine beyond its workers, each task
# still one policy decision, made up to that many tasks ahead; 0 makes the
# worker wait on the dispatcher after every packet), SPIN=0s (how long
# the daemon's threads poll before they sleep; on 2 cores a polling
# thread takes the generator's core),
# PIN=true pins the daemon's dispatcher and workers (pin_threads),
# PORT=19000 (the daemon's), SRC_PORT=41000 (the first flow's), EGRESS=1
# sends every reply as a task of an egress engine scheduled by the core
# (default: a poll's replies leave with one sendmmsg), TENANTS=1 (flow i
# belongs to tenant i mod TENANTS: FLOWS=64 TENANTS=64 gives 64 tenants
# of one flow each), KEEP=1 keeps the reports' folder.
# Builds the binaries (perf profile: docs/perf.md's) into ${CARGO_TARGET_DIR:-target}.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
FLOWS=${FLOWS:-4}
WINDOW=${WINDOW:-64}
SIZE=${SIZE:-64B}
KERNEL=${KERNEL:-crc32c}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-1s}
WORKERS=${WORKERS:-0}
QUEUE_DEPTH=${QUEUE_DEPTH:-32}
SPIN=${SPIN:-0s}
PORT=${PORT:-19000}
SRC_PORT=${SRC_PORT:-41000}
EGRESS=${EGRESS:-0}
TENANTS=${TENANTS:-1}
PIN=${PIN:-false}
command -v jq >/dev/null || { echo "error: jq is needed to read the reports" >&2; exit 1; }

. scripts/isolad_scratch.sh

{
  printf '[daemon]\nsocket = "isolad.sock"\nudp = ["127.0.0.1:%s"]\nspin = "%s"\npin_threads = %s\n\n' "$PORT" "$SPIN" "$PIN"
  printf '[[engine]]\nname = "pu"\nworkers = %s\npolicy = "wlbvt"\n' "$WORKERS"
  # An engine on the dispatcher has no queue.
  if [ "$WORKERS" != 0 ]; then printf 'queue_depth = %s\n' "$QUEUE_DEPTH"; fi
  printf '\n'
  if [ "$EGRESS" = 1 ]; then
    printf '[[engine]]\nname = "out"\nkind = "egress"\nqueue_depth = %s\n\n' "$QUEUE_DEPTH"
  fi
  for t in $(seq 0 $((TENANTS - 1))); do
    printf '[[tenant]]\nname = "t%s"\nmemory_quota = "16MiB"\nusers = [%s]\n' "$t" "$(id -u)"
    for i in $(seq "$t" "$TENANTS" $((FLOWS - 1))); do
      printf '\n[[tenant.flow]]\nmatch = { src_port = %s, proto = 17 }\nkernel = "%s"\n' $((SRC_PORT + i)) "$KERNEL"
    done
    printf '\n'
  done
} > "$dir/isolad.toml"
start_isolad
sleep 0.2

common=(--flows "$FLOWS" --window "$WINDOW" --size "$SIZE" --duration "$DURATION" --warmup "$WARMUP")
if [ "$WORKERS" = 0 ]; then engine="kernels run on the dispatcher"; else engine="engine workers $WORKERS, queue depth $QUEUE_DEPTH"; fi
echo "$KERNEL on $SIZE, $FLOWS flows of $TENANTS tenants, window $WINDOW per flow, $DURATION after $WARMUP warm-up, $engine, spin $SPIN, egress engine $EGRESS"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
printf '%-6s %-14s %-12s %-8s %-22s\n' round path "replies/s" loss "p50 / p99 (us)"
row() { # round, path, report
  jq -r --arg r "$1" --arg p "$2" \
    '"\($r)\t\($p)\t\(.total.throughput.received_pps | floor)\t\(.total.loss_pct * 100 | floor / 100)%\t\(.total.latency.p50_ns / 1000 | floor) / \(.total.latency.p99_ns / 1000 | floor)"' "$3" |
    awk -F'\t' '{ printf "%-6s %-14s %-12s %-8s %-22s\n", $1, $2, $3, $4, $5 }'
}
for r in $(seq 1 "$ROUNDS"); do
  "$bin/isola" load udp --to "127.0.0.1:$PORT" --src-port "$SRC_PORT" "${common[@]}" --json "$dir/daemon-$r.json" > /dev/null
  "$bin/isola" load udp --echo-baseline "${common[@]}" --json "$dir/echo-$r.json" > /dev/null
  row "$r" isolad "$dir/daemon-$r.json"
  if [ "$FLOWS" -gt 4 ]; then
    jq -r '.flows | map(.throughput.received_pps) | sort | "       isolad replies/s per flow: min \(.[0] | floor), median \(.[length / 2 | floor] | floor), max \(.[-1] | floor)"' "$dir/daemon-$r.json"
  fi
  row "$r" "echo baseline" "$dir/echo-$r.json"
  jq -rn --slurpfile d "$dir/daemon-$r.json" --slurpfile e "$dir/echo-$r.json" \
    '"       isolad / echo: \($d[0].total.throughput.received_pps / $e[0].total.throughput.received_pps * 1000 | floor / 1000)"'
done

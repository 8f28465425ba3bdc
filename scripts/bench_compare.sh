#!/usr/bin/env bash
# Runs the scheduler, simulator and runtime benchmarks for two trees back to
# back and prints a before/after table of criterion medians (docs/perf.md).
# Usage: scripts/bench_compare.sh BEFORE_TREE BEFORE_TARGET AFTER_TREE AFTER_TARGET
# Each TARGET is a cargo target directory of its own, so the two builds do
# not overwrite each other.
set -euo pipefail
run() {
  (cd "$1" && export CARGO_TARGET_DIR="$2" &&
    cargo bench -q -p isola-core --bench scheduler_next -- --warm-up-time 0.5 --measurement-time 1.5 \
      '(next|cycle)/(fcfs|drr|sfq|wlbvt|mclock)/(8|128)$' &&
    cargo bench -q -p isola-sim --bench events -- 'events/(mm1/1|osmosis/(fcfs|sfq|wlbvt)/(8|128))$' &&
    cargo bench -q -p isola-runtime --bench dispatch) > "$3" 2>&1
}
before=$(mktemp); after=$(mktemp)
run "$1" "$2" "$before"
run "$3" "$4" "$after"
python3 "$(dirname "$0")/bench_table.py" "$before" "$after"

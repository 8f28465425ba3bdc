#!/usr/bin/env bash
# Isola driven from Python against the `isola` binary (docs/perf.md, issue
# 35: goal at most 1.1x), on the M/M/1 of scripts/simpy_mm1.sh and
# scenarios/mm1.toml (2 M customers at rho 0.8): `isola sim
# scenarios/mm1.toml --json` as one process, and one Python process that
# imports isola, builds the same scenario as a dict, runs it and reads the
# mean sojourn back (scripts/python_mm1.py), taking turns for ROUNDS rounds
# in one sitting; then SimPy on the same queue (scripts/simpy_mm1.py) for
# SIMPY_ROUNDS rounds, for the ratio beside it. Prints each run's wall
# time and mean sojourn, each round's ratio python / binary, and the
# range of the ratios.
#
# Usage: scripts/python_mm1.sh
# Settings (environment): ROUNDS=5, SIMPY_ROUNDS=1; PYTHON (default:
# python3) must have the isola package and simpy installed (pip install
# ./python simpy); ISOLA_BIN (default: ${CARGO_TARGET_DIR:-target}/release/isola,
# built here if missing) runs another build of `isola`.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
SIMPY_ROUNDS=${SIMPY_ROUNDS:-1}
PYTHON=${PYTHON:-python3}
"$PYTHON" -c 'import isola, simpy' || { echo "error: $PYTHON needs isola and simpy (pip install ./python simpy)" >&2; exit 1; }
isola=${ISOLA_BIN:-${CARGO_TARGET_DIR:-target}/release/isola}
[ -x "$isola" ] || cargo build -q --release -p isola-cli
customers=$(sed -n 's/^count = \([0-9]*\)$/\1/p' scenarios/mm1.toml)
out=$(mktemp)
trap 'rm -f "$out"' EXIT

now() { date +%s.%N; }
echo "load: $(uptime)"
ratios=()
for round in $(seq "$ROUNDS"); do
  start=$(now)
  "$isola" sim scenarios/mm1.toml --json > "$out"
  binary=$(echo "$(now) - $start" | bc -l)
  binary_mean=$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["policies"][0]["tenants"][0]["latency_ns"]["mean"])' "$out")
  start=$(now)
  python_mean=$("$PYTHON" scripts/python_mm1.py "$customers")
  python=$(echo "$(now) - $start" | bc -l)
  ratio=$(echo "$python / $binary" | bc -l)
  ratios+=("$ratio")
  printf 'round %d: isola sim %.3f s (mean %.1f ns)  python %.3f s (mean %.1f ns)  python/binary %.3f\n' \
    "$round" "$binary" "$binary_mean" "$python" "$python_mean" "$ratio"
done
printf 'python / binary over %d rounds: %s\n' "$ROUNDS" "$(printf '%s\n' "${ratios[@]}" | sort -n | awk 'NR==1{lo=$1} {hi=$1} END{printf "%.3f-%.3f", lo, hi}')"
for round in $(seq "$SIMPY_ROUNDS"); do
  start=$(now)
  simpy=$("$PYTHON" scripts/simpy_mm1.py "$customers")
  took=$(echo "$(now) - $start" | bc -l)
  printf 'simpy round %d: %.3f s %s  simpy/binary %.1f  simpy/python %.1f\n' "$round" "$took" "$simpy" \
    "$(echo "$took / $binary" | bc -l)" "$(echo "$took / $python" | bc -l)"
done

#!/usr/bin/env bash
# The simulator's speed against SimPy on the same M/M/1 queue (docs/perf.md,
# issue 17: goal >= 100x), whole process against whole process, the same
# customers, in one sitting: `isola sim scenarios/mm1.toml` (2 M customers
# at rho 0.8, with its windows and histograms) and scripts/simpy_mm1.py (the
# same queue written as SimPy's documentation writes one), taking turns for
# ROUNDS rounds, with the floor under both: the same queue written as the
# least a simulator does with Isola's event queue, random streams and
# histogram (crates/isola-sim/examples/mm1_floor.rs: no scheduler, no
# device model, no per-window statistics), and the core floor: the same
# loop with the core scheduler as its waiting line, driven as `isola sim`
# drives it (`mm1_floor --core`). Prints each run's wall time, customers
# per second and mean sojourn (theory: 1/(mu - lambda) = 5 us), and each
# round's ratios: SimPy / isola; SimPy / floor, the most any simulator
# built on those pieces could reach here; and SimPy / core floor, the most
# any simulator that drives the core scheduler could reach.
#
# Usage: scripts/simpy_mm1.sh
# Settings (environment): ROUNDS=3; VENV (default: a scratch folder, removed
# at the end) holds SimPy, installed there with pip from PyPI
# (SIMPY_VERSION, default 4.1.2) unless it already has it.
# Builds `isola` in the perf profile (docs/perf.md's) into ${CARGO_TARGET_DIR:-target}/perf.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SIMPY_VERSION=${SIMPY_VERSION:-4.1.2}
command -v python3 >/dev/null || { echo "error: python3 is needed for SimPy" >&2; exit 1; }
command -v jq >/dev/null || { echo "error: jq is needed to read the results" >&2; exit 1; }
command -v bc >/dev/null || { echo "error: bc is needed for the arithmetic" >&2; exit 1; }

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
venv=${VENV:-$scratch/venv}
if ! "$venv/bin/python" -c 'import simpy' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "simpy==$SIMPY_VERSION"
fi
cargo build -q --profile perf -p isola-cli
cargo build -q --profile perf -p isola-sim --example mm1_floor
isola=${CARGO_TARGET_DIR:-target}/perf/isola
floor=${CARGO_TARGET_DIR:-target}/perf/examples/mm1_floor
customers=$(sed -n 's/^count = \([0-9]*\)$/\1/p' scenarios/mm1.toml)

wall() { # wall OUT COMMAND...: runs it (stdout to OUT), prints its wall time in seconds
  local out=$1 start end
  shift
  start=$(date +%s.%N)
  "$@" > "$out"
  end=$(date +%s.%N)
  echo "$end - $start" | bc -l
}

echo "M/M/1, rho 0.8, $customers customers; SimPy $("$venv/bin/python" -c 'import simpy; print(simpy.__version__)'), $(python3 --version)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
printf '%-6s %-10s %-10s %-14s %-18s\n' round tool "wall (s)" "customers/s" "mean sojourn (us)"
for r in $(seq 1 "$ROUNDS"); do
  t_isola=$(wall "$scratch/isola.json" "$isola" sim scenarios/mm1.toml --json)
  t_simpy=$(wall "$scratch/simpy.json" "$venv/bin/python" scripts/simpy_mm1.py "$customers")
  t_floor=$(wall "$scratch/floor.json" "$floor" "$customers")
  t_core=$(wall "$scratch/core.json" "$floor" --core "$customers")
  sojourn_isola=$(jq -r '.policies[0].tenants[0].latency_ns.mean / 1000' "$scratch/isola.json")
  sojourn_simpy=$(jq -r '.mean_sojourn_us' "$scratch/simpy.json")
  printf '%-6s %-10s %-10.2f %-14.0f %-18.3f\n' "$r" isola "$t_isola" "$(echo "$customers / $t_isola" | bc -l)" "$sojourn_isola"
  printf '%-6s %-10s %-10.2f %-14.0f %-18.3f\n' "$r" simpy "$t_simpy" "$(echo "$customers / $t_simpy" | bc -l)" "$sojourn_simpy"
  printf '%-6s %-10s %-10.2f %-14.0f %-18.3f\n' "$r" floor "$t_floor" "$(echo "$customers / $t_floor" | bc -l)" "$(jq -r '.mean_sojourn_us' "$scratch/floor.json")"
  printf '%-6s %-10s %-10.2f %-14.0f %-18.3f\n' "$r" "core floor" "$t_core" "$(echo "$customers / $t_core" | bc -l)" "$(jq -r '.mean_sojourn_us' "$scratch/core.json")"
  printf '       simpy / isola: %.1fx   simpy / floor: %.1fx   simpy / core floor: %.1fx\n' \
    "$(echo "$t_simpy / $t_isola" | bc -l)" "$(echo "$t_simpy / $t_floor" | bc -l)" "$(echo "$t_simpy / $t_core" | bc -l)"
done

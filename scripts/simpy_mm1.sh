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
# drives it (`mm1_floor --core fcfs`, and `--core sfq` for the cost of a
# virtual-time policy's cycle). Prints each run's wall time, customers per
# second and mean sojourn (theory: 1/(mu - lambda) = 5 us), and each
# round's ratios: SimPy / isola; SimPy / floor, the most any simulator
# built on those pieces could reach here; and SimPy / core floor, the most
# any simulator that drives the core scheduler could reach. Then, per
# customer, from the least CPU time of each over the rounds:
# the floor, the core's cycle under fcfs and under sfq (core floor - floor)
# and the simulator's own work (isola - fcfs core floor), in ns.
#
# Usage: scripts/simpy_mm1.sh
# Settings (environment): ROUNDS=3; VENV (default: a scratch folder, removed
# at the end) holds SimPy, installed there with pip from PyPI
# (SIMPY_VERSION, default 4.1.2) unless it already has it; ISOLA_BIN and
# FLOOR_BIN run other builds of `isola` and `mm1_floor` (a before and after).
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
[ -n "${ISOLA_BIN:-}" ] || cargo build -q --profile perf -p isola-cli
[ -n "${FLOOR_BIN:-}" ] || cargo build -q --profile perf -p isola-sim --example mm1_floor
isola=${ISOLA_BIN:-${CARGO_TARGET_DIR:-target}/perf/isola}
floor=${FLOOR_BIN:-${CARGO_TARGET_DIR:-target}/perf/examples/mm1_floor}
perf=$(command -v perf || true)
if [ -n "$perf" ] && ! "$perf" stat -e task-clock true >/dev/null 2>&1; then perf=; fi
[ -n "$perf" ] || [ -x /usr/bin/time ] || { echo "error: perf or /usr/bin/time (GNU time) is needed for CPU times" >&2; exit 1; }
customers=$(sed -n 's/^count = \([0-9]*\)$/\1/p' scenarios/mm1.toml)

wall() { # wall OUT COMMAND...: runs it (stdout to OUT), prints its wall time in seconds
  # and appends its CPU time (s: perf's task-clock where perf runs, else
  # GNU time's user + sys, to 10 ms) to OUT.cpu
  local out=$1 start end
  shift
  start=$(date +%s.%N)
  if [ -n "$perf" ]; then
    "$perf" stat -x, -e task-clock -o "$out.time" "$@" > "$out"
    end=$(date +%s.%N)
    awk -F, '$3 == "task-clock" { print $1 / 1000 }' "$out.time" >> "$out.cpu"
  else
    /usr/bin/time -f '%U %S' -o "$out.time" "$@" > "$out"
    end=$(date +%s.%N)
    awk '{ print $1 + $2 }' "$out.time" >> "$out.cpu"
  fi
  echo "$end - $start" | bc -l
}
least() { sort -g "$1" | head -1; } # the least of a file's numbers

echo "M/M/1, rho 0.8, $customers customers; SimPy $("$venv/bin/python" -c 'import simpy; print(simpy.__version__)'), $(python3 --version)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-10s %-10s %-14s %-18s\n' round tool "wall (s)" "customers/s" "mean sojourn (us)"
for r in $(seq 1 "$ROUNDS"); do
  t_isola=$(wall "$scratch/isola.json" "$isola" sim scenarios/mm1.toml --json)
  t_simpy=$(wall "$scratch/simpy.json" "$venv/bin/python" scripts/simpy_mm1.py "$customers")
  t_floor=$(wall "$scratch/floor.json" "$floor" "$customers")
  t_core=$(wall "$scratch/core.json" "$floor" --core fcfs "$customers")
  t_sfq=$(wall "$scratch/sfq.json" "$floor" --core sfq "$customers")
  sojourn_isola=$(jq -r '.policies[0].tenants[0].latency_ns.mean / 1000' "$scratch/isola.json")
  sojourn_simpy=$(jq -r '.mean_sojourn_us' "$scratch/simpy.json")
  printf '%-6s %-10s %-10.2f %-14.0f %-18.3f\n' "$r" isola "$t_isola" "$(echo "$customers / $t_isola" | bc -l)" "$sojourn_isola"
  printf '%-6s %-10s %-10.2f %-14.0f %-18.3f\n' "$r" simpy "$t_simpy" "$(echo "$customers / $t_simpy" | bc -l)" "$sojourn_simpy"
  printf '%-6s %-10s %-10.2f %-14.0f %-18.3f\n' "$r" floor "$t_floor" "$(echo "$customers / $t_floor" | bc -l)" "$(jq -r '.mean_sojourn_us' "$scratch/floor.json")"
  printf '%-6s %-10s %-10.2f %-14.0f %-18.3f\n' "$r" "core fcfs" "$t_core" "$(echo "$customers / $t_core" | bc -l)" "$(jq -r '.mean_sojourn_us' "$scratch/core.json")"
  printf '%-6s %-10s %-10.2f %-14.0f %-18.3f\n' "$r" "core sfq" "$t_sfq" "$(echo "$customers / $t_sfq" | bc -l)" "$(jq -r '.mean_sojourn_us' "$scratch/sfq.json")"
  printf '       simpy / isola: %.1fx   simpy / floor: %.1fx   simpy / core floor (fcfs): %.1fx   load: %s\n' \
    "$(echo "$t_simpy / $t_isola" | bc -l)" "$(echo "$t_simpy / $t_floor" | bc -l)" "$(echo "$t_simpy / $t_core" | bc -l)" \
    "$(cut -d' ' -f1 /proc/loadavg)"
done
per() { echo "($1) * 1000000000 / $customers" | bc -l; } # seconds of CPU -> ns a customer
c_floor=$(least "$scratch/floor.json.cpu") c_core=$(least "$scratch/core.json.cpu")
c_sfq=$(least "$scratch/sfq.json.cpu") c_isola=$(least "$scratch/isola.json.cpu")
clock="user + sys"; [ -z "$perf" ] || clock="perf stat task-clock"
echo "per customer, least CPU time of $ROUNDS rounds ($clock):"
printf '  floor %.0f ns; core cycle fcfs %.0f ns, sfq %.0f ns (core floor - floor); simulator own work %.0f ns (isola - fcfs core floor); isola %.0f ns\n' \
  "$(per "$c_floor")" "$(per "$c_core - $c_floor")" "$(per "$c_sfq - $c_floor")" "$(per "$c_isola - $c_core")" "$(per "$c_isola")"
printf '  SimPy / isola by least CPU time: %.1fx\n' "$(echo "$(least "$scratch/simpy.json.cpu") / $c_isola" | bc -l)"

#!/usr/bin/env bash
# Isola driven from Python against the `isola` binary (docs/perf.md, issue
# 35: goal at most 1.1x), on the M/M/1 of scripts/simpy_mm1.sh and
# scenarios/mm1.toml (2 M customers at rho 0.8): `isola sim
# scenarios/mm1.toml --json` as one process, and one Python process that
# imports isola, builds the same scenario as a dict, runs it and reads the
# mean sojourn back (scripts/python_mm1.py), taking turns for ROUNDS rounds
# in one sitting, each timed in wall-clock and CPU time; then SimPy on the
# same queue (scripts/simpy_mm1.py) for SIMPY_ROUNDS rounds, for the ratio
# beside it (scripts/python_mm1_bench.py is the harness). Prints each
# run's times and mean sojourn, each round's ratios python / binary, and
# their ranges and medians.
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
echo "load: $(uptime)"
"$PYTHON" scripts/python_mm1_bench.py "$isola" "$customers" "$ROUNDS" "$SIMPY_ROUNDS"
echo "load: $(uptime)"

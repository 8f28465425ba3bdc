#!/usr/bin/env bash
# Isolation with unmodified programs (issue 31; README, docs/perf.md):
# two programs that know nothing of Isola, two tenants of one isolad engine.
#
#   latency tenant `ls`:  Python's hashlib.sha256 of 4 KiB requests at a
#                         fixed rate (scripts/hashlib_latency.py), through
#                         the isola OpenSSL provider (OPENSSL_CONF)
#   bulk tenant `bulk`:   two `openssl speed -elapsed -evp sha256 -bytes 1048576`
#                         processes, through the same provider (two, not
#                         `-multi 2`, whose children forget `-bytes`)
#
# For each policy it measures the latency tenant alone, then beside the
# bulk one, and prints p50/p99 and the ratio shared/alone. `fcfs` without
# splitting is the engine's native FIFO (what an accelerator does without
# Isola); the others are isolad's policies with the bulk tenant's tasks
# split into 64 KiB pieces while the engine is contended (ASTRAEA).
#
#   scripts/unmodified_isolation.sh [--seconds S] [--rate R] [--policies "fcfs sfq wlbvt"] [--out FILE]
#
# Needs cc, make, OpenSSL's headers and the openssl CLI, python3. Builds
# the release libisola, isolad and the adapters first.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=8
rate=400
policies="fcfs sfq wlbvt"
out=target/unmodified-isolation.json
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --policies) policies="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "unmodified_isolation.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
  esac
done

cargo build --release --locked --quiet -p isola-capi -p isola-daemon
make --quiet -C adapters ISOLA_LIB="$PWD/target/release" OUT="$PWD/target/adapters" all
modules="$PWD/target/adapters"

work="$(mktemp -d)"
isolad_pid=""
cleanup() {
  [ -n "$isolad_pid" ] && kill "$isolad_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

cat > "$work/openssl.cnf" <<CNF
openssl_conf = openssl_init
[openssl_init]
providers = provider_sect
alg_section = algorithm_sect
[provider_sect]
default = default_sect
isola = isola_sect
[default_sect]
activate = 1
[isola_sect]
module = $modules/isola.so
activate = 1
socket = $work/isolad.sock
min_bytes = 0
[algorithm_sect]
default_properties = ?provider=isola
CNF

metric() { # metric NAME TENANT: the sum of its series for the tenant
  curl -s "http://$1/metrics" | awk -v m="$2" -v t="tenant=\"$3\"" 'index($0, m"{") == 1 && index($0, t) { s += $NF } END { print s + 0 }'
}

results="[]"
printf '%-8s %12s %12s %12s %12s %10s %14s\n' policy "alone p50" "alone p99" "shared p50" "shared p99" "p99 ratio" "bulk tasks"
for policy in $policies; do
  split=""
  if [ "$policy" != fcfs ]; then
    split=$'split = "64KiB"\nsplit_when = "contended"'
  fi
  cat > "$work/isolad.toml" <<TOML
[daemon]
socket = "isolad.sock"
metrics = "127.0.0.1:0"

[[engine]]
name = "acc"
ops = ["sha256"]
workers = 1
policy = "$policy"
$split

[[tenant]]
name = "ls"
memory_quota = "1MiB"
users = [$(id -u)]

[[tenant]]
name = "bulk"
memory_quota = "64MiB"
users = [$(id -u)]
TOML
  rm -f "$work/isolad.sock"
  target/release/isolad --config "$work/isolad.toml" > "$work/isolad.log" 2>&1 &
  isolad_pid=$!
  for _ in $(seq 200); do
    [ -S "$work/isolad.sock" ] && grep -q "metrics on" "$work/isolad.log" && break
    sleep 0.05
  done
  addr="$(sed -n 's|.*metrics on http://\([^/]*\)/metrics.*|\1|p' "$work/isolad.log")"

  alone="$(OPENSSL_CONF="$work/openssl.cnf" ISOLA_TENANT=ls python3 scripts/hashlib_latency.py --seconds "$seconds" --rate "$rate")"
  bulk_pids=""
  for i in 1 2; do
    OPENSSL_CONF="$work/openssl.cnf" ISOLA_TENANT=bulk \
      openssl speed -elapsed -evp sha256 -bytes 1048576 -seconds $((seconds + 2)) > "$work/speed$i.log" 2>&1 &
    bulk_pids="$bulk_pids $!"
  done
  sleep 1
  shared="$(OPENSSL_CONF="$work/openssl.cnf" ISOLA_TENANT=ls python3 scripts/hashlib_latency.py --seconds "$seconds" --rate "$rate")"
  # shellcheck disable=SC2086
  wait $bulk_pids
  ls_tasks="$(metric "$addr" isola_tasks_completed_total ls)"
  bulk_tasks="$(metric "$addr" isola_tasks_completed_total bulk)"
  kill "$isolad_pid"; wait "$isolad_pid" 2>/dev/null || true; isolad_pid=""
  expected=$(python3 -c "print(2 * int($seconds * $rate))")
  if [ "${ls_tasks%.*}" -lt "$expected" ] || [ "${bulk_tasks%.*}" -lt 2 ]; then
    echo "unmodified_isolation.sh: $policy: isolad completed $ls_tasks latency and $bulk_tasks bulk tasks (expected $expected and some): the provider fell back to software" >&2
    cat "$work/speed1.log" >&2
    exit 1
  fi
  row="$(python3 - "$policy" "$alone" "$shared" "$bulk_tasks" <<'PY'
import json, sys
policy, alone, shared, bulk = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), float(sys.argv[4])
ratio = shared["p99_us"] / alone["p99_us"]
print(f"{policy:<8} {alone['p50_us']:>10.1f}us {alone['p99_us']:>10.1f}us {shared['p50_us']:>10.1f}us {shared['p99_us']:>10.1f}us {ratio:>10.2f} {int(bulk):>14}")
print(json.dumps({"policy": policy, "alone": alone, "shared": shared, "p99_ratio": round(ratio, 2), "bulk_tasks": int(bulk)}))
PY
)"
  echo "$row" | head -1
  results="$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r.append(json.loads(sys.argv[2])); print(json.dumps(r))' "$results" "$(echo "$row" | tail -1)")"
done
mkdir -p "$(dirname "$out")"
echo "$results" > "$out"
echo "results: $out"

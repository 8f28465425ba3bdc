#!/usr/bin/env bash
# Issue 15: a real Prometheus server scrapes isolad's /metrics.
#
# Starts target/debug/isolad with a configuration in a temporary folder
# (tenant `a` granted to this user) and --metrics on a free loopback port,
# runs a tenant process that submits COUNT tasks (the `submit` example),
# then starts Prometheus (Debian's `prometheus` package) with a job that
# scrapes isolad every second, and polls Prometheus' query API until
#   isola_tasks_completed_total{tenant="a",engine="acc"} == COUNT
# (and submitted == COUNT, and the target is up), for at most 60 s.
# Every process it started is stopped on exit.
#
# Usage: scripts/prometheus_check.sh [COUNT]   (default 25)
# Needs: prometheus, curl, python3 (to pick a free port), cargo.
set -euo pipefail
cd "$(dirname "$0")/.."

count=${1:-25}
deadline_s=${PROMETHEUS_CHECK_DEADLINE_S:-60}

fail() {
  echo "prometheus_check: FAILED: $*" >&2
  exit 1
}

need() {
  command -v "$1" >/dev/null 2>&1 || fail "\`$1\` is not installed ($2)"
}
need prometheus "Debian: apt-get install prometheus; .ci/run installs it"
need curl "apt-get install curl"
need python3 "apt-get install python3"
need cargo "the Rust toolchain"

target_dir=${CARGO_TARGET_DIR:-target}
echo "prometheus_check: building isolad and the submit example"
cargo build --locked --quiet -p isola-daemon --bin isolad --example submit
isolad="$target_dir/debug/isolad"
submit="$target_dir/debug/examples/submit"
[ -x "$isolad" ] || fail "$isolad was not built"
[ -x "$submit" ] || fail "$submit was not built"

tmp=$(mktemp -d)
pids=()
cleanup() {
  local status=$?
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  if [ "$status" -ne 0 ]; then
    for log in "$tmp"/*.log; do
      [ -f "$log" ] || continue
      echo "---- last lines of $(basename "$log")" >&2
      tail -n 30 "$log" >&2
    done
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# A port free now on 127.0.0.1 (the kernel's choice).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

metrics_port=$(free_port)
prom_port=$(free_port)
[ "$metrics_port" != "$prom_port" ] || prom_port=$(free_port)

cat >"$tmp/isolad.toml" <<EOF
[daemon]
socket = "isolad.sock"

[[engine]]
name = "acc"
ops = ["crc32c"]

[[tenant]]
name = "a"
memory_quota = "64KiB"
users = [$(id -u)]
EOF

echo "prometheus_check: isolad --metrics 127.0.0.1:$metrics_port"
"$isolad" --config "$tmp/isolad.toml" --metrics "127.0.0.1:$metrics_port" >"$tmp/isolad.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  grep -q "metrics on" "$tmp/isolad.log" 2>/dev/null && break
  kill -0 "${pids[0]}" 2>/dev/null || fail "isolad exited at start (its log is below)"
  sleep 0.1
done
grep -q "metrics on" "$tmp/isolad.log" || fail "isolad did not start serving metrics within 10 s"
curl -fsS "http://127.0.0.1:$metrics_port/metrics" >/dev/null ||
  fail "isolad's /metrics does not answer on 127.0.0.1:$metrics_port"

echo "prometheus_check: a tenant submits $count tasks"
"$submit" "$tmp/isolad.sock" a "$count" >"$tmp/submit.log" 2>&1 ||
  fail "the tenant process could not submit its tasks (its log is below)"

cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: isolad
    static_configs:
      - targets: ["127.0.0.1:$metrics_port"]
EOF

echo "prometheus_check: $(prometheus --version 2>&1 | head -n 1)"
echo "prometheus_check: prometheus on 127.0.0.1:$prom_port scrapes 127.0.0.1:$metrics_port every 1s"
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" >"$tmp/prometheus.log" 2>&1 &
pids+=($!)

api="http://127.0.0.1:$prom_port/api/v1"
# The value of the instant query $1 (empty if it has no result yet).
query() {
  curl -fsS --max-time 5 --get "$api/query" --data-urlencode "query=$1" 2>/dev/null |
    grep -o '"value":\[[^]]*\]' | head -n 1 | sed 's/.*,"\([^"]*\)"\]$/\1/' || true
}

completed='isola_tasks_completed_total{job="isolad",tenant="a",engine="acc"}'
submitted='isola_tasks_submitted_total{job="isolad",tenant="a",engine="acc"}'
up='up{job="isolad"}'
start=$SECONDS
got_completed="" got_submitted="" got_up=""
while [ $((SECONDS - start)) -lt "$deadline_s" ]; do
  kill -0 "${pids[1]}" 2>/dev/null || fail "prometheus exited (its log is below)"
  got_up=$(query "$up")
  got_completed=$(query "$completed")
  got_submitted=$(query "$submitted")
  if [ "$got_up" = "1" ] && [ "$got_completed" = "$count" ] && [ "$got_submitted" = "$count" ]; then
    echo "prometheus_check: Prometheus reads $completed = $got_completed, $submitted = $got_submitted"
    echo "prometheus_check: passed"
    exit 0
  fi
  sleep 1
done

targets=$(curl -fsS --max-time 5 "$api/targets" 2>/dev/null || echo "(the targets API did not answer)")
fail "after ${deadline_s}s Prometheus reads $up = '${got_up:-no result}', \
$completed = '${got_completed:-no result}', $submitted = '${got_submitted:-no result}'; \
expected 1, $count and $count. Prometheus' targets (lastError says why a scrape failed): $targets"

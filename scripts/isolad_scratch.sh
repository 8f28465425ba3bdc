# Sourced by the isolad benchmark scripts (daemon_throughput.sh,
# udp_throughput.sh): builds the binaries in the perf profile into
# ${CARGO_TARGET_DIR:-target} ($bin), makes a scratch folder ($dir) that is
# removed at exit (KEEP=1 keeps it), and defines start_isolad, which runs
# isolad on "$dir/isolad.toml" until the script exits.
cargo build -q --profile perf -p isola-cli -p isola-daemon
bin=${CARGO_TARGET_DIR:-target}/perf
dir=$(mktemp -d)
daemon=
cleanup() {
  if [ -n "$daemon" ]; then kill -TERM "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; fi
  if [ -z "${KEEP:-}" ]; then rm -rf "$dir"; else echo "reports kept in $dir" >&2; fi
}
trap cleanup EXIT

# Starts isolad on "$dir/isolad.toml" and waits for its socket (its log
# is printed, and the script ends, if it never comes).
start_isolad() {
  "$bin/isolad" --config "$dir/isolad.toml" 2> "$dir/isolad.log" &
  daemon=$!
  for _ in $(seq 100); do [ -S "$dir/isolad.sock" ] && break; sleep 0.05; done
  [ -S "$dir/isolad.sock" ] || { cat "$dir/isolad.log" >&2; exit 1; }
}

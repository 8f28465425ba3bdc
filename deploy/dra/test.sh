#!/usr/bin/env bash
# Builds and tests the isola.dev DRA kubelet plugin (deploy/dra): gofmt,
# go vet and go test, the end-to-end tests against isolad and isola built
# from this repository. Usable from .ci/run:  deploy/dra/test.sh
#
# Environment: GO (default: go on PATH, else /usr/local/go/bin/go),
# CARGO_TARGET_DIR (where the Rust build goes, as cargo reads it),
# ISOLAD_BIN / ISOLA_BIN (use these binaries, build nothing).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
[ -x "$GO" ] || { echo "deploy/dra/test.sh: no Go toolchain (set GO)" >&2; exit 1; }
echo "== go: $("$GO" version)"

if [ -z "${ISOLAD_BIN:-}" ] || [ -z "${ISOLA_BIN:-}" ]; then
  echo "== cargo build -p isola-daemon -p isola-cli"
  (cd "$root" && cargo build --locked -p isola-daemon -p isola-cli)
  target="${CARGO_TARGET_DIR:-$root/target}"
  case "$target" in /*) ;; *) target="$root/$target" ;; esac
  export ISOLAD_BIN="${ISOLAD_BIN:-$target/debug/isolad}"
  export ISOLA_BIN="${ISOLA_BIN:-$target/debug/isola}"
fi
# The end-to-end tests fail, not skip, without the binaries.
export ISOLA_E2E_REQUIRE=1

cd "$here"
echo "== gofmt"
unformatted="$("$(dirname "$GO")/gofmt" -l . 2>/dev/null || gofmt -l .)"
if [ -n "$unformatted" ]; then
  echo "not gofmt-clean:" >&2
  echo "$unformatted" >&2
  exit 1
fi
echo "== go vet"
"$GO" vet ./...
echo "== go test"
"$GO" test -count=1 ./...

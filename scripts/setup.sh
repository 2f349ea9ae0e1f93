#!/usr/bin/env bash
# setup.sh installs the system packages optd needs on a Debian machine, idempotently.
# Fast when everything is present: it only calls apt-get for what is missing.
#
#   scripts/setup.sh          build and run: COIN-OR Clp (cgo), pkg-config, g++
#   scripts/setup.sh --test   also the test peers: cbc (exact MIP oracle), glpsol, protoc,
#                             python3-grpcio (the Python client example),
#                             default-jdk-headless (the Java client example), and what the
#                             documented commands call (jq, curl, grpcurl: docs/commands_test.go)
#   scripts/setup.sh --bench  also what the benchmark report compares against: the test
#                             peers, Debian's nodejs and npm, and the pinned highs npm
#                             package (HiGHS compiled to WebAssembly) in benchmarks/highs
#                             (never needed by scripts/test.sh or at run time)
set -euo pipefail

want_test=0
want_bench=0
case "${1:-}" in
  --test) want_test=1 ;;
  --bench) want_test=1; want_bench=1 ;;
esac

missing=()
dpkg_has() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
need() { dpkg_has "$1" || missing+=("$1"); }

need coinor-libclp-dev
need pkg-config
need g++
if [ "$want_test" = 1 ]; then
  need coinor-cbc
  need glpk-utils
  need protobuf-compiler
  need python3-grpcio      # the README's Python client (server/python_client_test.go)
  need default-jdk-headless # the Java client of the HTTP/JSON gateway (server/gateway_test.go)
  need python3-protobuf
  need jq                  # the documented gRPC calls build requests with jq
  need curl                # the documented gateway calls
fi
if [ "$want_bench" = 1 ]; then
  # a node from elsewhere (e.g. NodeSource's nodejs, which bundles npm) will do
  command -v node >/dev/null 2>&1 || need nodejs
  command -v npm >/dev/null 2>&1 || need npm
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v go >/dev/null 2>&1; then
  if [ -x /usr/local/go/bin/go ]; then
    echo "setup: go is at /usr/local/go/bin; add it to PATH" >&2
  else
    echo "setup: Go is not installed (https://go.dev/doc/install)" >&2
    exit 1
  fi
fi

if [ "$want_test" = 1 ] && ! command -v grpcurl >/dev/null 2>&1 && [ ! -x "$(go env GOPATH)/bin/grpcurl" ]; then
  # the documented gRPC calls (docs/commands_test.go); the same pin as scripts/loadtest.sh
  echo "setup: installing grpcurl (go install, pinned)" >&2
  go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3
fi

if [ "$want_bench" = 1 ]; then
  bench_dir="$(cd "$(dirname "$0")/.." && pwd)/benchmarks/highs"
  if [ ! -f "$bench_dir/node_modules/highs/package.json" ]; then
    echo "setup: installing the highs npm package (benchmarks/highs/package-lock.json)" >&2
    (cd "$bench_dir" && npm ci --no-audit --no-fund --silent)
  fi
fi

#!/usr/bin/env bash
# serve.sh: set up, build and run `optd serve` with its embedded defaults
# (127.0.0.1:7443, state under ./optd-data). Extra arguments go to `optd serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
scripts/setup.sh
mkdir -p bin
go build -o bin/optd ./cmd/optd
exec bin/optd serve "$@"

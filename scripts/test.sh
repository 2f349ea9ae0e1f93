#!/usr/bin/env bash
# test.sh: the whole test suite, as CI runs it. Installs what is missing first.
#   gofmt clean, generated code up to date, go vet, go test -race, and the
#   statistical tests at full size without -race.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin:$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin"
scripts/setup.sh --test

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== generated code"
scripts/generate.sh --check

echo "== go vet"
go vet ./...

echo "== go test -race"
# Every command block of README.md and docs/ runs too (docs/commands_test.go,
# about three minutes), so the documentation cannot rot.
export OPTD_DOC_COMMANDS=1
go test -race -count=1 -timeout 20m ./... "$@"

echo "== statistical tests and the quick report at full size, without the race detector"
# Under -race they run a light form (some six to fifteen times slower
# there); here the penalty's statistical test runs with all its
# replications (about 30 s) and the quick report with every section
# (about 50 s).
go test -count=1 -timeout 10m -run '^(TestPenaltyMeanZeroUnderPolicies|TestQuickReport)$' ./mdp ./benchmarks

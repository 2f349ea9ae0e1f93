#!/usr/bin/env bash
# generate.sh regenerates every generated file (`go generate ./...`).
# With --check it fails if regeneration changed, added or removed any file that
# carries the standard "Code generated ... DO NOT EDIT." header, or any OpenAPI
# document (*.swagger.json), i.e. if the checked-in generated code is stale.
set -euo pipefail
cd "$(dirname "$0")/.."

generated() {
  # grep exits 1 when nothing matches; no generated files is not an error.
  # The OpenAPI documents protoc-gen-openapiv2 writes (JSON, no header) too.
  { grep -rlE --include='*.go' '^// Code generated .* DO NOT EDIT\.$' . 2>/dev/null || true
    find . -name '*.swagger.json' -not -path './.git/*'; } | sort | xargs -r sha256sum
}

if [ "${1:-}" = "--check" ]; then
  before=$(generated)
  go generate ./...
  after=$(generated)
  if [ "$before" != "$after" ]; then
    echo "generated code is stale; run scripts/generate.sh and commit:" >&2
    diff <(echo "$before") <(echo "$after") >&2 || true
    exit 1
  fi
  echo "generated code up to date"
else
  go generate ./...
fi

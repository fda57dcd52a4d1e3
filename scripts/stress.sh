#!/usr/bin/env bash
# Runs every test three times with the race detector while stress-ng keeps all CPUs busy,
# and stops stress-ng however the tests end.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v stress-ng >/dev/null || { echo "stress: stress-ng is not installed (make stress installs it as root)" >&2; exit 1; }
stress-ng --cpu "$(nproc)" --timeout 4h --quiet &
load=$!
trap 'kill "$load" 2>/dev/null; wait "$load" 2>/dev/null || true' EXIT
CGO_ENABLED=1 go test -race -count=3 -timeout 120m ./...

#!/usr/bin/env bash
# gofmt, go vet and golangci-lint over both modules, and the docs check
# (internal/repotools/docscheck): what `make verify` runs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec make verify

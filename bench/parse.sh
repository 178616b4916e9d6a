#!/usr/bin/env bash
# Parser throughput on a generated ~50,000-line program and its double.
# Usage: bench/parse.sh [LINES]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
build/bin/parse_bench "${1:-50000}"

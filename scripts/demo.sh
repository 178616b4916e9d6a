#!/usr/bin/env bash
# Installs what is missing, builds, and runs the demo on examples/mlp.lpu.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
echo "== lpuc --emit=ast examples/mlp.lpu"
build/bin/lpuc --emit=ast examples/mlp.lpu

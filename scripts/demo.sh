#!/usr/bin/env bash
# Installs what is missing, builds, and runs the demo on examples/mlp.lpu:
# its AST, then the type checker's view (every bucket's signature, parameter
# count and FLOPs). Compiling to a program and running it on the simulator
# join the demo when the scheduler exists.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
echo "== lpuc --emit=ast examples/mlp.lpu"
build/bin/lpuc --emit=ast examples/mlp.lpu
echo
echo "== lpuc --stats examples/mlp.lpu"
build/bin/lpuc --stats examples/mlp.lpu

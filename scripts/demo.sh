#!/usr/bin/env bash
# Installs what is missing, builds, and runs the demo: examples/mlp.lpu is
# type-checked, lowered to the IR, compiled for one groqchip1 (lpuc
# predicts its cycles before anything runs), run on the simulator, and run
# again in the reference interpreter with the same weights and input.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
bin=build/bin
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "== lpuc --stats examples/mlp.lpu"
$bin/lpuc --stats examples/mlp.lpu
echo
echo "== lpuc --emit=ir examples/mlp.lpu (the B = 8 bucket)"
$bin/lpuc --emit=ir examples/mlp.lpu | sed -n '/^func @mlp<B = 8>/,/^}/p'
echo
echo "== lpuc examples/mlp.lpu --report, then -o mlp.lpx"
$bin/lpuc examples/mlp.lpu --report
$bin/lpuc examples/mlp.lpu -o "$out/mlp.lpx"
echo
echo "== lpurun mlp.lpx --random-weights 1 --input x=3x784xf16=0.5 --report=text"
echo "   (3 rows run in the B = 8 bucket, padded; the output is cropped back)"
$bin/lpurun "$out/mlp.lpx" --random-weights 1 --input x=3x784xf16=0.5 --report=text
echo
echo "== lpurun --reference examples/mlp.lpu: the same weights and input in the golden model"
$bin/lpurun --reference examples/mlp.lpu --random-weights 1 --input x=3x784xf16=0.5

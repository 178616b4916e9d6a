#!/usr/bin/env bash
# Int8 against f16 on groqchip1: a matmul and a convolution in both, and
# GPT-2 small with int8 weights on one chip next to the f16 model on two,
# and ResNet-50 at N=1 in int8 and f16 against the published 20,400 images/s.
# Prints figures, never passes or fails: bench/int8_bench.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
exec /usr/bin/python3 "$root/bench/int8_bench.py" "$root/build/bin/lpuc" "$@"

#!/usr/bin/env bash
# lpu-import on models exported from PyTorch at run time (random weights,
# nothing downloaded): import time and memory, parameters and the imported
# programs' predicted cycles next to the hand-written examples':
# bench/import_bench.sh [--models resnet50,resnet50_bn,bert].
# Builds lpu-import and lpuc first if needed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$root/build/bin/lpu-import" ] || [ ! -x "$root/build/bin/lpuc" ]; then
  cmake -S "$root" -B "$root/build" -G Ninja >/dev/null
  cmake --build "$root/build" --target lpu-import lpuc -j2
fi
exec /usr/bin/python3 "$root/bench/import_bench.py" "$root/build/bin" "$@"

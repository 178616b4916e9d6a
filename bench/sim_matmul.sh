#!/usr/bin/env bash
# Simulation speed on a 4096^3 fp16 matmul next to numpy/OpenBLAS, in one
# run: bench/sim_matmul.sh [M K N]. Builds lpurun first if needed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$root/build/bin/lpurun" ]; then
  cmake -S "$root" -B "$root/build" -G Ninja >/dev/null
  cmake --build "$root/build" --target lpurun -j2
fi
exec /usr/bin/python3 "$root/bench/sim_matmul.py" "$root/build/bin/lpurun" "$@"

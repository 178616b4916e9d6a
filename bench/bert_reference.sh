#!/usr/bin/env bash
# BERT-base (sequence 128, batch 1) in the reference interpreter next to
# PyTorch CPU fp32 of the same architecture, in one run:
# bench/bert_reference.sh [RUNS]. Builds lpurun first if needed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$root/build/bin/lpurun" ]; then
  cmake -S "$root" -B "$root/build" -G Ninja >/dev/null
  cmake --build "$root/build" --target lpurun -j2
fi
exec /usr/bin/python3 "$root/bench/bert_reference.py" "$root/build/bin/lpurun" "$@"

#!/usr/bin/env bash
# Compile time and schedule quality of every example, with BERT-base and
# ResNet-50 next to Groq's published figures:
# bench/compile_bench.sh [--examples a,b,...] [--timeout SECONDS] [--chip NAME].
# Builds lpuc first if needed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$root/build/bin/lpuc" ]; then
  cmake -S "$root" -B "$root/build" -G Ninja >/dev/null
  cmake --build "$root/build" --target lpuc -j2
fi
exec /usr/bin/python3 "$root/bench/compile_bench.py" "$root/build/bin/lpuc" "$@"

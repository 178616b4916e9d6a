#!/usr/bin/env bash
# Decode steps over a KV cache kept as state: GPT-2 small and Llama-2-7B's
# shape, predicted cycles and tokens/s for one sequence, the physical bound,
# next to Groq's published figure. Prints figures, never passes or fails:
# bench/decode_bench.sh [--only NAME,...] [--chips N]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
exec /usr/bin/python3 "$root/bench/decode_bench.py" "$root/build/bin/lpuc" "$@"

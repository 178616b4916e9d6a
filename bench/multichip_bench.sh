#!/usr/bin/env bash
# Programs across chips: BERT-base, GPT-2 and BERT-Large on the chips they
# need and on more, as pipelines: predicted latency, inferences per second
# when requests stream through the stages, link traffic, compile time.
# bench/multichip_bench.sh [--only NAME,...] [--timeout SECONDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$root/build/bin/lpuc" ]; then
  cmake -S "$root" -B "$root/build" -G Ninja >/dev/null
  cmake --build "$root/build" --target lpuc -j2
fi
exec /usr/bin/python3 "$root/bench/multichip_bench.py" "$root/build/bin/lpuc" "$@"

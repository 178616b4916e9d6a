#!/usr/bin/env bash
# lpurun over MPI ranks on this host: an 8-chip and a 64-chip program with
# data at 1, 2 and 4 ranks: cycles per host second, peak memory per rank,
# bytes exchanged per window. bench/mpi_bench.sh [--ranks 1,2,4]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$root/build/bin/lpurun" ]; then
  cmake -S "$root" -B "$root/build" -G Ninja >/dev/null
  cmake --build "$root/build" --target lpuc lpurun -j2
fi
exec /usr/bin/python3 "$root/bench/mpi_bench.py" "$root/build/bin/lpuc" "$root/build/bin/lpurun" "$@"

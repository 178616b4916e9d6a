#!/usr/bin/env bash
# A campaign of lpu-smith's generated programs through the differential
# harness (tests/fuzz/README.md): scripts/fuzz-models.sh [N|SECONDS]
#   N          that many programs (default 200)
#   SECONDSs   for that long: 600s, 30m and 2h work too
# Prints programs/hour, counts by outcome, E08xx refusals by code and
# message kind, known bugs matched, and every distinct failure; failing
# programs and their reductions are saved under build/fuzz-models/RUN/.
# LPU_SMITH_FEATURES picks the feature mix (default `all`: held-back
# features on, their known bugs tagged); LPU_SMITH_FIRST the first seed
# (default from the clock); LPU_BIN the tools (default build/bin).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
arg=${1:-200}
case "$arg" in
  *s) budget=(--seconds "${arg%s}") ;;
  *m) budget=(--seconds $(( ${arg%m} * 60 ))) ;;
  *h) budget=(--seconds $(( ${arg%h} * 3600 ))) ;;
  *[!0-9]*|"") echo "usage: scripts/fuzz-models.sh [N|SECONDSs|MINUTESm|HOURSh]" >&2; exit 2 ;;
  *) budget=(--count "$arg") ;;
esac
bin=${LPU_BIN:-$root/build/bin}
[ -x "$bin/lpuc" ] && [ -x "$bin/lpurun" ] || { echo "fuzz-models: no lpuc/lpurun in $bin (scripts/build.sh)" >&2; exit 2; }
out=$root/build/fuzz-models/$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
first=()
[ -n "${LPU_SMITH_FIRST:-}" ] && first=(--first "$LPU_SMITH_FIRST")
echo "fuzz-models: failures and reductions in $out"
status=0
# nice: a campaign shares the machine with builds.
nice -n 10 /usr/bin/python3 "$root/tests/fuzz/smith_campaign.py" "${budget[@]}" "${first[@]}" \
  --features "${LPU_SMITH_FEATURES:-all}" --bin "$bin" --out "$out" --reduce --vary-flags \
  --json "$out/summary.json" | tee "$out/summary.txt" || status=$?
ls "$out"/*.reduced.lpu >/dev/null 2>&1 && echo "reduced: $(ls "$out"/*.reduced.lpu | tr '\n' ' ')"
exit $status

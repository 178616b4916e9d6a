#!/usr/bin/env bash
# Type-checking throughput: a generated program of about 50,000 lines with
# deep generic instantiation (bench/gen_typecheck.py), then its double.
# Prints, best of 3 runs, the CPU time lpuc spends checking (every
# definition with symbolic sizes, then every entry bucket with numbers), the
# parse CPU time beside it, and the growth of the check time when the input
# doubles. CPU time, because these machines are shared: wall time is shown
# too.
set -euo pipefail
cd "$(dirname "$0")/.."
LPUC=${LPUC:-build/bin/lpuc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); lpuc: $LPUC"
prev=""
for n in 50000 100000; do
  python3 bench/gen_typecheck.py "$n" > "$tmp/p$n.lpu"
  lines=$(wc -l < "$tmp/p$n.lpu")
  best_check="" best_parse="" best_wall=""
  for _ in 1 2 3; do
    "$LPUC" --time-phases "$tmp/p$n.lpu" 2> "$tmp/times" >/dev/null
    # The table's rows "  WALL  CPU  PERCENT%  check" and "... parse"
    # (top level: the name right after the percentage).
    c=$(awk '$4 == "check" && NF == 4 {print $2}' "$tmp/times")
    w=$(awk '$4 == "check" && NF == 4 {print $1}' "$tmp/times")
    p=$(awk '$4 == "parse" && NF == 4 {print $2}' "$tmp/times")
    if [[ -z "$best_check" ]] || (( $(echo "$c < $best_check" | bc -l) )); then best_check=$c; best_wall=$w; fi
    if [[ -z "$best_parse" ]] || (( $(echo "$p < $best_parse" | bc -l) )); then best_parse=$p; fi
  done
  printf "%7d lines: check %.3f s cpu (%.3f s wall, %.0f lines/s), parse %.3f s cpu" "$lines" \
    "$best_check" "$best_wall" "$(echo "$lines / $best_check" | bc -l)" "$best_parse"
  if [[ -n "$prev" ]]; then printf "; check growth when doubled: %.2fx" "$(echo "$best_check / $prev" | bc -l)"; fi
  printf "\n"
  prev=$best_check
done

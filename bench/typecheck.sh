#!/usr/bin/env bash
# Type-checking throughput: a generated program of about 50,000 lines with
# deep generic instantiation (bench/gen_typecheck.py), then its double.
# Prints, best of 3 runs, the time lpuc spends checking (every definition
# with symbolic sizes, then every entry bucket with numbers), the parse
# time beside it, and the growth of the check time when the input doubles.
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
  best_check="" best_parse=""
  for _ in 1 2 3; do
    "$LPUC" --time-phases "$tmp/p$n.lpu" 2> "$tmp/times" >/dev/null
    c=$(awk '/^check:/ {print $2}' "$tmp/times")
    p=$(awk '/^parse:/ {print $2}' "$tmp/times")
    if [[ -z "$best_check" ]] || (( $(echo "$c < $best_check" | bc -l) )); then best_check=$c; fi
    if [[ -z "$best_parse" ]] || (( $(echo "$p < $best_parse" | bc -l) )); then best_parse=$p; fi
  done
  printf "%7d lines: check %.3f s (%.0f lines/s), parse %.3f s" "$lines" "$best_check" \
    "$(echo "$lines / $best_check" | bc -l)" "$best_parse"
  if [[ -n "$prev" ]]; then printf "; check growth when doubled: %.2fx" "$(echo "$best_check / $prev" | bc -l)"; fi
  printf "\n"
  prev=$best_check
done

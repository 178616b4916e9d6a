#!/usr/bin/env bash
# Fuzzes the program loader and the assembly parser with AFL++ for a bounded
# time: scripts/fuzz.sh [SECONDS] (default 60). Prints executions and
# crashes; the findings stay in build-fuzz/out/ for afl-tmin and a test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
out=$root/build-fuzz
mkdir -p "$out/seeds"
command -v afl-fuzz >/dev/null || { echo "fuzz: afl-fuzz not found (apt-get install afl++)" >&2; exit 2; }

# The harness and the backend sources it reaches, instrumented by AFL++:
# with its gcc plugin (afl-g++-fast) when that loads, else with its LLVM
# plugin (afl-clang-fast++). Debian 12's afl++ 4.04c plugin refuses the
# archive's current g++ 12.2 build ("GCC and plugin have incompatible
# versions"), so the fallback is what runs there today. LPU_AFL_CXX picks one.
llvm_defs=$(llvm-config-14 --cppflags | tr ' ' '\n' | grep '^-D' | tr '\n' ' ')
build() {
  AFL_QUIET=1 "$1" -std=c++20 -O1 -g -I"$root" -isystem /usr/lib/llvm-14/include $llvm_defs \
  -DLPU_CHIP_DIR="\"$root/backend/chips\"" \
  "$root"/tests/fuzz/program_fuzz.cpp "$root"/backend/{Isa,ChipDescription,Topology,Program,ProgramBinary,ProgramText}.cpp \
  "$root"/support/DType.cpp \
  -L/usr/lib/llvm-14/lib -lLLVMSupport -lLLVMDemangle -ltinfo -lz -lpthread -o "$out/program_fuzz"
}
built=""
for cxx in ${LPU_AFL_CXX:-afl-g++-fast afl-clang-fast++}; do
  if build "$cxx" > "$out/build.log" 2>&1; then
    built=$cxx
    break
  fi
  echo "fuzz: $cxx cannot build the harness (see $out/build.log)" >&2
done
[ -n "$built" ] || exit 2
echo "fuzz: harness built with $built"

# Seeds: every test program in text form and, through lpurun when it is
# built, in binary form.
i=0
for f in "$root"/tests/lit/sim/*.lpuasm "$root"/tests/lit/sim/violations/*.lpuasm "$root"/tests/lit/lpurun/Inputs/*.lpuasm; do
  cp "$f" "$out/seeds/t$i.lpuasm"
  if [ -x "$root/build/bin/lpurun" ]; then
    "$root/build/bin/lpurun" "$f" --emit=binary -o "$out/seeds/b$i.lpx" 2>/dev/null || true
  fi
  i=$((i + 1))
done

rm -rf "$out/out"
AFL_SKIP_CPUFREQ=1 AFL_NO_UI=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
  timeout --signal=INT $((seconds + 30)) \
  afl-fuzz -V "$seconds" -i "$out/seeds" -o "$out/out" -- "$out/program_fuzz" > "$out/afl.log" 2>&1 || true

stats=$out/out/default/fuzzer_stats
if [ ! -f "$stats" ]; then
  echo "fuzz: afl-fuzz did not start; see $out/afl.log" >&2
  tail -20 "$out/afl.log" >&2
  exit 1
fi
grep -E '^(run_time|execs_done|execs_per_sec|corpus_count|saved_crashes|saved_hangs) ' "$stats"
crashes=$(find "$out/out/default/crashes" -type f -name 'id:*' | wc -l)
echo "crashes: $crashes (in $out/out/default/crashes)"

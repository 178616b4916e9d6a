#!/bin/sh
# lpufmt throughput: formats a generated .lpu file of about 10,000 lines and
# one twice that size and prints, for each, the in-process CPU time of the
# phases (bench/fmt_phases: parse, render+print, the whole formatSource with
# its safety checks) and the CPU time of the whole lpufmt process (best of 5;
# CPU time, not wall time, because the bench machines are shared), with the
# growth factor when the input doubles. A figure, not a test.
# Usage: bench/fmt_bench.sh [BUILD_DIR]  (default: build; needs the targets
# lpufmt and fmt_phases built)
set -eu
BUILD=${1:-build}
LPUFMT=$BUILD/bin/lpufmt
PHASES=$BUILD/bin/fmt_phases
for tool in "$LPUFMT" "$PHASES"; do
  [ -x "$tool" ] || { echo "fmt_bench: build $(basename "$tool") first ($tool)" >&2; exit 2; }
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

python3 - "$WORK" <<'PY'
import sys
# One unit is about 50 lines of badly laid out .lpu covering most syntax.
UNIT = """/// Block {i}: a doc comment.
model Block{i}<D, F = 4 * D> {{
  param up: nn.Linear<D, F>   // projection up
  param down: nn.Linear<F, D>
  param layers: [4] nn.LayerNorm<D>
  fn forward<B, S>(x: f16[B, S, D], mask: bool[B, S, S]) -> f16[B, S, D] where D % 8 == 0, S <= 2048 {{
    var h = x
    for i in 0..4 {{ h = layers[i](h) }}
    let scores = softmax(select(mask, reshape(h, [B, S, 8, D / 8]) @ transpose(reshape(h, [B, S, 8, D / 8]), [0, 1, 3, 2]), -10000.0), axis = -1)
    let s = h[:, 0:S / 2, :]
    /* a block comment */ let y: f32[B, S, D] = f32(h) * 2.0 - 1.0
    if D > 64 {{ h = h + down(gelu(up(h))) }} else {{ h = -h }}
    assert D % 2 == 0, "D must be even"
    return h
  }}
}}

fn helper{i}<..B, I, T: dtype>(x: T[..B, I], w: T[I, I]) -> T[..B, I] {{
  let a = x @ w + x * x / 2.0
  let b = concat([a, x, a, x], axis = -1)
  let c = sum(b, axis = [1, 2], keep = true)
  return a
}}

entry run{i} = Block{i}<D = 768>.forward<B = 1, S in {{128, 256, 512}}>

"""
for name, units in (("10k", 400), ("20k", 800)):
    with open(f"{sys.argv[1]}/{name}.lpu", "w") as f:
        for i in range(units):
            f.write(UNIT.format(i=i))
PY

best() { # best CPU time (user + system) in ms of 5 runs of: lpufmt ARGS
  python3 - "$@" <<'PY'
import resource, subprocess, sys
times = []
for _ in range(5):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    times.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
print(f"{min(times):.1f}")
PY
}

echo "lpufmt bench on $(nproc) cores, $(uname -m); build: $BUILD"
for f in 10k 20k; do
  in=$WORK/$f.lpu
  out=$WORK/$f.out.lpu
  "$LPUFMT" "$in" > "$out"
  echo "$f: input $(wc -l < "$in") lines, output $(wc -l < "$out") lines"
done
echo "in-process CPU time, best of 5 after a warm-up:"
"$PHASES" "$WORK/10k.lpu" 5
"$PHASES" "$WORK/20k.lpu" 5
echo "lpufmt process CPU time (user + system, whole process), best of 5:"
t10=$(best "$LPUFMT" "$WORK/10k.lpu"); t20=$(best "$LPUFMT" "$WORK/20k.lpu")
u10=$(best "$LPUFMT" --no-verify "$WORK/10k.lpu"); u20=$(best "$LPUFMT" --no-verify "$WORK/20k.lpu")
f10=$(best "$LPUFMT" "$WORK/10k.out.lpu")
echo "  with safety checks:    10k lines ${t10} ms, 20k lines ${t20} ms, growth x$(python3 -c "print(f'{$t20/$t10:.2f}')")"
echo "  without (--no-verify): 10k lines ${u10} ms, 20k lines ${u20} ms, growth x$(python3 -c "print(f'{$u20/$u10:.2f}')")"
echo "  already formatted 10k-line file, with checks: ${f10} ms"

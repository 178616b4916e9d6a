"""Checks a program whose params hold shards of a weight against numpy.

usage: shards_check.py IR LPX TMPDIR WEIGHT f16,DIM,... XDIM,... EXPR

Draws an input x (the IR's only input, f16 of dims XDIM,...) and writes a
weights file with the whole weight WEIGHT (f16 of the given dims), both
from numpy's generator, then requires, for weights from that file and from
`--random-weights 5` (the whole weight of the reference's
`--dump-weights`):
  - the simulator (lpurun LPX) and the reference interpreter
    (lpurun --reference IR) to agree within the matmul tolerance of
    tests/lit/scheduler/Inputs/run_and_compare.py (atol 2e-3 and 2 f16
    ulps: the MXM and sgemm add the products in other orders);
  - both to be within that tolerance of numpy's EXPR, a Python expression
    of x, w (the whole weight) and mm(a, b) (a @ b in f32, rounded to
    f16, as the IR's matmul), e.g. "mm(x, w)".
Prints one line per weight source."""
import subprocess
import sys

import numpy as np

from safetensors_f16 import read_safetensors, write_safetensors

ir, lpx, tmp, name, spec, xspec, expr = sys.argv[1:8]
dims = [int(d) for d in spec.split(",")[1:]]
xdims = [int(d) for d in xspec.split(",")]
assert spec.split(",")[0] == "f16"


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def mm(a, b):
    return (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)


def close(got, want):
    """|got - want| <= 2e-3 + 2 ulp(want in f16), elementwise."""
    want32 = want.astype(np.float32)
    ulp = np.spacing(np.abs(want).astype(np.float16)).astype(np.float32)
    return np.abs(got.astype(np.float32) - want32) <= 2e-3 + 2 * ulp


rng = np.random.default_rng(3)
x = rng.uniform(-1, 1, xdims).astype(np.float16)
np.save(f"{tmp}/x.npy", x)
w_file = (rng.standard_normal(dims) / np.sqrt(dims[0])).astype(np.float16)
write_safetensors(f"{tmp}/w.safetensors", {name: w_file})

sources = [("file", ["--weights", f"{tmp}/w.safetensors"]),
           ("random", ["--random-weights", "5"])]
for label, flags in sources:
    sim, ref = f"{tmp}/sim-{label}.npy", f"{tmp}/ref-{label}.npy"
    dumped = f"{tmp}/dumped-{label}.safetensors"
    run(["lpurun", lpx, "--input", f"x={tmp}/x.npy", "--output", f"out={sim}"] + flags)
    run(["lpurun", "--reference", ir, "--input", f"x={tmp}/x.npy", "--output", f"out={ref}",
         "--dump-weights", dumped] + flags)
    weights = read_safetensors(dumped)
    if sorted(weights) != [name] or list(weights[name].shape) != dims:
        sys.exit(f"{label}: the reference ran with {[(k, v.shape) for k, v in weights.items()]}, "
                 f"not the whole {name} {dims}")
    w = weights[name]
    if label == "file" and not np.array_equal(w.view(np.uint16), w_file.view(np.uint16)):
        sys.exit("file: the reference's weight is not the file's")
    want = eval(expr, {"x": x, "w": w, "mm": mm, "np": np})
    got_sim, got_ref = np.load(sim), np.load(ref)
    for what, got in (("simulator", got_sim), ("reference", got_ref)):
        if got.shape != want.shape or got.dtype != np.float16:
            sys.exit(f"{label}: {what} gave {got.dtype}{list(got.shape)}, numpy {list(want.shape)}")
        bad = ~close(got, want)
        if bad.any():
            i = tuple(np.argwhere(bad)[0])
            sys.exit(f"{label}: {what} differs from numpy's {expr} in {bad.sum()} elements, "
                     f"first at {i}: {got[i]} vs {want[i]}")
    bad = ~close(got_sim, got_ref)
    if bad.any():
        sys.exit(f"{label}: simulator and reference differ in {bad.sum()} elements")
    print(f"{label}: simulator, reference and numpy agree on {expr}, {name} {dims}")

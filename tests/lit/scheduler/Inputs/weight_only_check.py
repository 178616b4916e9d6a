"""Runs Inputs/weight-only.lpu's `plain` entry on the simulator with weights
drawn here (i8 over the whole range, per-column scales and zero points)
and compares it with NumPy: y = f16(x @ f16(dequantize(w)) + b) and
relu(y2 @ ...), the matmul summed in float64 and rounded to f16 once, within
the matmul tolerance of run_and_compare.py (|sim - ref| <= 2e-3 + 2 f16
ulps of ref: the MXM sums in fp32 in its own order). Then compares the
simulator's SRAM peak for the same Linear with f16 and with i8 weights:
the i8 one holds its weights in half the bytes and no f16 copy of them.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from int8_check import run, safetensors  # noqa: E402


def main(lpu, tmp):
    rng = np.random.default_rng(3)
    K, N = 96, 330
    w = rng.integers(-128, 128, (K, N)).astype(np.int8)
    s = (rng.random(N) * 0.02 + 0.001).astype(np.float32)
    z = rng.integers(-5, 6, N).astype(np.int8)
    b = rng.standard_normal((1, N)).astype(np.float16)
    x = rng.standard_normal((7, K)).astype(np.float16)
    y = rng.standard_normal((3, K)).astype(np.float16)
    wf = ((w.astype(np.int32) - z.astype(np.int32)).astype(np.float32) * (s * np.float32(0.5))).astype(np.float16)
    top = ((x.astype(np.float64) @ wf.astype(np.float64)).astype(np.float16).astype(np.float32) +
           b.astype(np.float32)).astype(np.float16)
    bottom = np.maximum((y.astype(np.float64) @ wf.astype(np.float64)).astype(np.float16), np.float16(0))
    want = np.concatenate([top, bottom]).astype(np.float32)
    weights = os.path.join(tmp, "plain.safetensors")
    safetensors(weights, {"w": w, "s": s, "z": z, "b": b})
    np.save(os.path.join(tmp, "x.npy"), x)
    np.save(os.path.join(tmp, "y.npy"), y)
    program = os.path.join(tmp, "wo.lpx")
    run(["lpuc", lpu, "-o", program])
    out = os.path.join(tmp, "out.npy")
    run(["lpurun", program, "--entry", "plain", "--input", f"x={tmp}/x.npy", "--input", f"y={tmp}/y.npy",
         "--weights", weights, "--output", f"out={out}", "-q"])
    got = np.load(out).astype(np.float32)
    ulp = np.spacing(np.abs(want).astype(np.float16)).astype(np.float32)
    bad = np.abs(got - want) > 2e-3 + 2 * ulp
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        sys.exit(f"plain: {int(bad.sum())} elements off NumPy's, first at {i}: {got[i]} against {want[i]}")
    print(f"plain: the simulator equals NumPy within the matmul tolerance ({got.size} elements)")
    report = json.loads(run(["lpuc", lpu, "--report", "--json"]))
    peak = {b["entry"]: b["sram_bytes"] for b in report["buckets"]}
    weight16, weight8 = 1024 * 1024 * 2, 1024 * 1024
    if not peak["wide8"] < weight16 <= peak["wide16"] or peak["wide8"] < weight8:
        sys.exit(f"SRAM at the peak: {peak['wide8']} bytes with i8 weights, {peak['wide16']} with f16")
    print(f"wide: i8 weights take {peak['wide8']} bytes of SRAM at the peak, under the f16 weights' "
          f"{weight16} (f16: {peak['wide16']})")


if __name__ == "__main__":
    main(*sys.argv[1:])

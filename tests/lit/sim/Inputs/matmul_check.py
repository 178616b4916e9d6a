#!/usr/bin/env python3
"""Generates the tiled matmul program for A[M,K] @ B[K,N] (f16 in, f32 out)
with bench/sim_matmul_gen.py, runs it with lpurun and compares with numpy.
usage: matmul_check.py SRC_ROOT M K N [lpurun flags...]"""
import os, subprocess, sys, tempfile
import numpy as np

src, m, k, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
extra = [a for a in sys.argv[5:] if a != "--i8"]
i8 = "--i8" in sys.argv[5:]
sys.path.insert(0, f"{src}/bench")
from sim_matmul_gen import read_tile_outputs, write_tile_inputs
rng = np.random.default_rng(11)
if i8:
    A = rng.integers(-128, 128, (m, k)).astype(np.int8)
    B = rng.integers(-128, 128, (k, n)).astype(np.int8)
else:
    A = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    B = rng.uniform(-1, 1, (k, n)).astype(np.float16)
with tempfile.TemporaryDirectory() as d:
    subprocess.run([sys.executable, f"{src}/bench/sim_matmul_gen.py", str(m), str(k), str(n),
                    "-o", f"{d}/mm.lpuasm"] + (["--dtype", "i8"] if i8 else []), check=True)
    args = write_tile_inputs(A, B, d)
    report = subprocess.run(["lpurun", f"{d}/mm.lpuasm"] + args + extra, check=True,
                            capture_output=True, text=True).stdout
    C = read_tile_outputs(d, n)
if i8:
    # int8 x int8 accumulated in int32: exact.
    assert C.dtype == np.int32 and np.array_equal(C, A.astype(np.int64) @ B.astype(np.int64))
    print("OK", C.shape, "exact")
    sys.stdout.write(report)
    sys.exit(0)
# fp16 products are exact in fp32; only the order of the fp32 additions
# differs from numpy's, so the error is a few ulps of the row sums.
ref = A.astype(np.float64) @ B.astype(np.float64)
err = np.abs(C - ref).max()
bound = 1e-6 * k * np.abs(A).max() * np.abs(B).max() * 4
assert err <= bound, f"max error {err} > {bound}"
# The padding columns beyond N come out as exact zeros.
print("OK", C.shape)
sys.stdout.write(report)

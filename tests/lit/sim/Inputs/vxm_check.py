#!/usr/bin/env python3
"""Runs lpurun on one VXM case and checks the result against numpy.
usage: vxm_check.py OP DTYPE [DTYPE2]; prints OK or raises."""
import os, subprocess, sys, tempfile
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
op, dt = sys.argv[1], sys.argv[2]
dt2 = sys.argv[3] if len(sys.argv) > 3 else None
NP = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "f16": np.float16, "f32": np.float32,
      "bool": np.bool_}
rng = np.random.default_rng(7)
if dt.startswith("f"):
    x = rng.uniform(-4, 4, 320).astype(NP[dt])
    y = rng.uniform(-4, 4, 320).astype(NP[dt])
    if op == "rsqrt":
        x = np.abs(x) + NP[dt](0.5)
    y[:16] = x[:16]  # some equal pairs for the compares
else:
    info = np.iinfo(NP[dt])
    x = rng.integers(info.min, info.max, 320, endpoint=True).astype(NP[dt])
    y = rng.integers(info.min, info.max, 320, endpoint=True).astype(NP[dt])
    y[:16] = x[:16]

unary = op in ("copy", "neg", "abs", "relu", "tanh", "exp", "rsqrt", "cvt")
with tempfile.TemporaryDirectory() as d:
    prog = subprocess.run([sys.executable, os.path.join(here, "vxm_case.py")] + sys.argv[1:],
                          check=True, capture_output=True, text=True).stdout
    open(f"{d}/p.lpuasm", "w").write(prog)
    np.save(f"{d}/x.npy", x)
    np.save(f"{d}/y.npy", y)
    cmd = ["lpurun", f"{d}/p.lpuasm", f"--input=x={d}/x.npy", f"--output=z={d}/z.npy"]
    if not unary:
        cmd.append(f"--input=y={d}/y.npy")
    subprocess.run(cmd, check=True)
    z = np.load(f"{d}/z.npy")

# The machine computes floats in fp32 and rounds to the dtype once;
# integers wrap.
if dt.startswith("f"):
    xf, yf = x.astype(np.float32), y.astype(np.float32)
    with np.errstate(all="ignore"):
        ref = {"copy": lambda: xf, "neg": lambda: -xf, "abs": lambda: np.abs(xf),
               "relu": lambda: np.maximum(xf, 0), "tanh": lambda: np.tanh(xf),
               "exp": lambda: np.exp(xf), "rsqrt": lambda: 1 / np.sqrt(xf),
               "add": lambda: xf + yf, "sub": lambda: xf - yf, "mul": lambda: xf * yf,
               "max": lambda: np.maximum(xf, yf), "min": lambda: np.minimum(xf, yf),
               "cmp.eq": lambda: xf == yf, "cmp.ne": lambda: xf != yf, "cmp.lt": lambda: xf < yf,
               "cmp.le": lambda: xf <= yf, "cmp.gt": lambda: xf > yf, "cmp.ge": lambda: xf >= yf,
               "cvt": lambda: (np.clip(np.rint(xf), np.iinfo(NP[dt2]).min, np.iinfo(NP[dt2]).max)
                               if dt2.startswith("i") else xf)}[op]()
else:
    xi, yi = x.astype(np.int64), y.astype(np.int64)
    ref = {"copy": lambda: xi, "neg": lambda: -xi, "abs": lambda: np.abs(xi),
           "relu": lambda: np.maximum(xi, 0), "add": lambda: xi + yi, "sub": lambda: xi - yi,
           "mul": lambda: xi * yi, "max": lambda: np.maximum(xi, yi), "min": lambda: np.minimum(xi, yi),
           "cmp.eq": lambda: xi == yi, "cmp.ne": lambda: xi != yi, "cmp.lt": lambda: xi < yi,
           "cmp.le": lambda: xi <= yi, "cmp.gt": lambda: xi > yi, "cmp.ge": lambda: xi >= yi,
           "cvt": lambda: xi}[op]()
out_dt = "bool" if op.startswith("cmp.") else dt2 or dt
expected = np.asarray(ref).astype(np.int64).astype(NP[out_dt]) if out_dt.startswith("i") \
    else np.asarray(ref).astype(NP[out_dt])
if op in ("tanh", "exp", "rsqrt"):
    # libm and numpy may differ in the last place of fp32 before rounding.
    ok = np.allclose(z.astype(np.float64), expected.astype(np.float64), rtol=2e-3 if dt == "f16" else 1e-6)
else:
    ok = np.array_equal(z, expected)
if not ok:
    bad = np.nonzero(z != expected)[0][:5]
    raise SystemExit(f"{op} {dt}: mismatch at {bad}: got {z[bad]} expected {expected[bad]}")
print(f"OK {op} {dt}")

"""softplus against numpy: runs ENTRY of softplus.lpu on the simulator
(lpuc, then lpurun) and in the reference interpreter (lpurun --reference)
on the same inputs, the edges of the function among them (0, -0, +-inf,
NaN, past exp's overflow at 88, the smallest values), and checks that
  - the simulator and the reference agree bit for bit;
  - both are numpy's np.logaddexp(0, x) (computed in float64, rounded to
    the dtype) within ULPS units in the last place of the dtype.
usage: softplus_check.py LPU TMPDIR ENTRY DTYPE ULPS
"""
import subprocess
import sys

import numpy as np

src, tmp, entry, dtype, ulps = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
np_type = {"f32": np.float32, "f16": np.float16, "bf16": None}[dtype]


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(" ".join(cmd) + " failed:\n" + r.stdout + r.stderr)


def to_bf16_bits(x32):
    """Rounds fp32 values to bf16 (nearest even) and returns the fp32 values."""
    b = x32.astype(np.float32).view(np.uint32).astype(np.uint64)
    nan = np.isnan(x32)
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    out = b.astype(np.uint32).view(np.float32)
    out[nan] = np.nan
    return out


def in_dtype(v):
    """v (float64) rounded to the entry's dtype, returned as float32."""
    if dtype == "bf16":
        return to_bf16_bits(v.astype(np.float32))
    return v.astype(np_type).astype(np.float32)


edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 20.0, -20.0, 88.0, 89.0, 100.0, -100.0,
         1e-8, -1e-8, 1e4, -1e4, 60000.0, -60000.0, 1e30, -1e30, 3e38, -3e38]
rng = np.random.default_rng(7)
x = np.concatenate([np.array(edges), np.linspace(-30, 30, 1000), rng.normal(0, 8, 3 * 700)])[:3 * 700]
x = in_dtype(x).reshape(3, 700)
inputs = {"x": x}
if entry == "chain":
    inputs["y"] = in_dtype(rng.uniform(-4, 4, 3 * 700)).reshape(3, 700)

args = []
for name, v in inputs.items():
    path = f"{tmp}/{entry}_{name}.npy"
    if dtype == "bf16":  # the raw bits as a 2-byte void array (docs/tensor-files.md)
        np.save(path, (v.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).view("V2"))
    else:
        np.save(path, v.astype(np_type))
    args += ["--input", f"{name}={path}"]

lpx = f"{tmp}/softplus.lpx"
run(["lpuc", src, "-o", lpx])
run(["lpurun", lpx, "--entry", entry] + args + ["--output", f"out={tmp}/{entry}_sim.npy"])
run(["lpurun", "--reference", src, "--entry", entry] + args +
    ["--output", f"out={tmp}/{entry}_ref.npy"])
sim = np.load(f"{tmp}/{entry}_sim.npy")
ref = np.load(f"{tmp}/{entry}_ref.npy")
if dtype == "bf16":
    sim = (sim.view("<u2").astype(np.uint32) << 16).view(np.float32)
    ref = (ref.view("<u2").astype(np.uint32) << 16).view(np.float32)
if sim.tobytes() != ref.tobytes():
    k = np.flatnonzero(sim.view(np.uint8).reshape(-1) != ref.view(np.uint8).reshape(-1))[0]
    sys.exit(f"{entry}: simulator and reference differ (byte {k})")

x64 = inputs["x"].astype(np.float64)
if entry == "chain":
    # softplus(x * y) - x, each op rounded to f16 as the IR specifies.
    xy = in_dtype(x64 * inputs["y"].astype(np.float64)).astype(np.float64)
    sp = in_dtype(np.logaddexp(0.0, xy)).astype(np.float64)
    want = in_dtype(sp - x64)
else:
    want = in_dtype(np.logaddexp(0.0, x64))
got = sim.astype(np.float32)


def ordered(v):
    """fp32 bit patterns on a line, so that a difference counts ulps of fp32."""
    b = v.view(np.int32).astype(np.int64)
    return np.where(b < 0, -(b & 0x7FFFFFFF), b)


shift = {"f32": 0, "f16": 13, "bf16": 16}[dtype]  # fp32 ulps per ulp of the dtype
both_nan = np.isnan(got) & np.isnan(want)
diff = np.abs(ordered(got) - ordered(want)) >> shift
bad = ~both_nan & ((diff > ulps) | (np.isnan(got) != np.isnan(want)))
if bad.any():
    k = np.flatnonzero(bad.reshape(-1))[0]
    sys.exit(f"{entry}: x = {x64.reshape(-1)[k]!r}: got {got.reshape(-1)[k]!r}, "
             f"numpy {want.reshape(-1)[k]!r}")
print(f"{entry}: simulator == reference, within {ulps} ulp of numpy on {got.size} values")

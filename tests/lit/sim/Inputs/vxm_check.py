#!/usr/bin/env python3
"""Runs lpurun on one VXM case and checks the result against numpy.
usage: vxm_check.py OP DTYPE [DTYPE2]; prints OK or raises."""
import math, os, subprocess, sys, tempfile
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
op, dt = sys.argv[1], sys.argv[2]
dt2 = sys.argv[3] if len(sys.argv) > 3 else None
NP = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "f16": np.float16, "f32": np.float32,
      "bool": np.bool_}
rng = np.random.default_rng(7)
c = rng.integers(0, 2, 320).astype(np.bool_)  # select's condition
if dt == "bool":
    x = rng.integers(0, 2, 320).astype(np.bool_)
    y = rng.integers(0, 2, 320).astype(np.bool_)
elif dt.startswith("f"):
    x = rng.uniform(-4, 4, 320).astype(NP[dt])
    y = rng.uniform(-4, 4, 320).astype(NP[dt])
    if op == "rsqrt":
        x = np.abs(x) + NP[dt](0.5)
    y[:16] = x[:16]  # some equal pairs for the compares
    if op == "cvt.trunc":  # halves, NaN, infinities, values beyond the integer range
        x[16:24] = np.array([0.5, -0.5, 1.5, -1.5, 2.5, -2.5, np.nan, np.inf], dtype=NP[dt])
        x[24:28] = np.array([-np.inf, 3e4, -3e4, 200], dtype=NP[dt])
    if op in ("div", "rem"):
        y[16:20] = 0
        x[20:24] = np.array([7, -7, 7, -7], dtype=NP[dt])
        y[20:24] = np.array([2, 2, -2, -2], dtype=NP[dt])
        x[24:28] = np.array([-4, 4, 0, -0.0], dtype=NP[dt])  # zero remainders: their signs
        y[24:28] = np.array([2, -2, -3, 3], dtype=NP[dt])
else:
    info = np.iinfo(NP[dt])
    x = rng.integers(info.min, info.max, 320, endpoint=True).astype(NP[dt])
    y = rng.integers(info.min, info.max, 320, endpoint=True).astype(NP[dt])
    y[:16] = x[:16]
    if op in ("div", "rem"):
        y[16:32] = 0
        x[32], y[32] = info.min, -1  # MIN // -1 wraps
        x[33:37] = [7, -7, 7, -7]
        y[33:37] = [2, 2, -2, -2]
    if op == "pow":
        y = rng.integers(-3, 9, 320).astype(NP[dt])
        x[:8] = [0, 1, -1, 2, -2, 3, 0, 1]

unary = op in ("copy", "neg", "abs", "relu", "tanh", "exp", "rsqrt", "cvt", "cvt.trunc", "not",
               "log", "sqrt", "sigmoid", "silu", "gelu", "gelu_tanh", "softplus")
with tempfile.TemporaryDirectory() as d:
    prog = subprocess.run([sys.executable, os.path.join(here, "vxm_case.py")] + sys.argv[1:],
                          check=True, capture_output=True, text=True).stdout
    open(f"{d}/p.lpuasm", "w").write(prog)
    np.save(f"{d}/x.npy", x)
    np.save(f"{d}/y.npy", y)
    cmd = ["lpurun", f"{d}/p.lpuasm", f"--input=x={d}/x.npy", f"--output=z={d}/z.npy"]
    if not unary:
        cmd.append(f"--input=y={d}/y.npy")
    if op == "select":
        np.save(f"{d}/c.npy", c)
        cmd.append(f"--input=c={d}/c.npy")
    subprocess.run(cmd, check=True)
    z = np.load(f"{d}/z.npy")

# The machine computes floats in fp32 and rounds to the dtype once;
# integers wrap. docs/ir.md gives each op's definition.
def int_floor_div(a, b):
    q = np.where(b == 0, 0, a // np.where(b == 0, 1, b))
    return q

def int_pow(a, e):
    out = []
    for u, v in zip(a.tolist(), e.tolist()):
        if v < 0:
            out.append(1 if u == 1 else (-1 if v % 2 else 1) if u == -1 else 0)
        else:
            out.append(u ** v)
    return np.array(out, dtype=object)

def trunc_sat(v, to):
    info = np.iinfo(NP[to])
    t = np.clip(np.trunc(np.nan_to_num(v.astype(np.float64), nan=0.0)), info.min, info.max)
    return t

if dt == "bool":
    ref = {"not": lambda: ~x, "and": lambda: x & y, "or": lambda: x | y,
           "select": lambda: np.where(c, x, y), "cmp.eq": lambda: x == y, "cmp.ne": lambda: x != y,
           "copy": lambda: x}[op]()
elif dt.startswith("f"):
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
                               if dt2.startswith("i") else xf),
               "cvt.trunc": lambda: trunc_sat(xf, dt2) if dt2.startswith("i") else xf,
               "log": lambda: np.log(xf), "sqrt": lambda: np.sqrt(xf),
               "sigmoid": lambda: 1 / (1 + np.exp(-xf.astype(np.float64))),
               "silu": lambda: xf / (1 + np.exp(-xf.astype(np.float64))),
               "gelu": lambda: np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in xf.tolist()]),
               "gelu_tanh": lambda: 0.5 * xf * (1 + np.tanh(math.sqrt(2 / math.pi) *
                                                            (xf.astype(np.float64) + 0.044715 * xf.astype(np.float64) ** 3))),
               "softplus": lambda: np.logaddexp(0.0, xf.astype(np.float64)),
               "div": lambda: xf / yf, "rem": lambda: np.remainder(xf, yf),
               "pow": lambda: np.power(xf.astype(np.float64), yf.astype(np.float64)),
               "select": lambda: np.where(c, x, y)}[op]()
else:
    xi, yi = x.astype(np.int64), y.astype(np.int64)
    ref = {"copy": lambda: xi, "neg": lambda: -xi, "abs": lambda: np.abs(xi),
           "relu": lambda: np.maximum(xi, 0), "add": lambda: xi + yi, "sub": lambda: xi - yi,
           "mul": lambda: xi * yi, "max": lambda: np.maximum(xi, yi), "min": lambda: np.minimum(xi, yi),
           "cmp.eq": lambda: xi == yi, "cmp.ne": lambda: xi != yi, "cmp.lt": lambda: xi < yi,
           "cmp.le": lambda: xi <= yi, "cmp.gt": lambda: xi > yi, "cmp.ge": lambda: xi >= yi,
           "cvt": lambda: xi, "cvt.trunc": lambda: xi, "not": lambda: ~xi, "and": lambda: xi & yi,
           "or": lambda: xi | yi, "div": lambda: int_floor_div(xi, yi),
           "rem": lambda: np.where(yi == 0, 0, xi - int_floor_div(xi, yi) * yi), "pow": lambda: int_pow(xi, yi),
           "select": lambda: np.where(c, x, y)}[op]()
out_dt = "bool" if op.startswith("cmp.") else dt2 or dt
def wrap(v, to):  # two's complement wrap of Python/int64 integers
    bits = {"i8": 8, "i16": 16, "i32": 32}[to]
    return np.array([((int(u) + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))
                     for u in np.asarray(v).tolist()], dtype=NP[to])

if out_dt.startswith("i"):
    expected = wrap(ref, out_dt)
else:
    with np.errstate(all="ignore"):
        expected = np.asarray(ref).astype(np.float32).astype(NP[out_dt]) if out_dt.startswith("f") \
            else np.asarray(ref).astype(NP[out_dt])
if op in ("tanh", "exp", "rsqrt", "log", "sigmoid", "silu", "gelu", "gelu_tanh", "softplus",
          "pow") and \
        dt.startswith("f"):
    # libm and numpy (or float64 references) may differ in the last place of
    # fp32 before rounding; gelu, gelu_tanh, sigmoid and silu add 1 to a
    # term in fp32 as docs/ir.md writes them, so their error is a few ulp of
    # 1 scaled by |x|.
    zf, ef = z.astype(np.float64), expected.astype(np.float64)
    rtol = 2e-3 if dt == "f16" else 1e-6
    atol = (2e-3 if dt == "f16" else 3e-7) * (np.abs(x.astype(np.float64)) + 1) \
        if op in ("gelu", "gelu_tanh", "sigmoid", "silu") else 1e-30
    with np.errstate(all="ignore"):
        close = (np.abs(zf - ef) <= rtol * np.abs(ef) + atol) | (zf == ef) | \
            (np.isnan(zf) & np.isnan(ef))
    ok = bool(np.all(close))
elif out_dt.startswith("f"):
    # bit for bit (so -0 and 0 differ), any NaN matching any NaN
    zb, eb = z.view(np.uint16 if z.itemsize == 2 else np.uint32), \
        expected.view(np.uint16 if expected.itemsize == 2 else np.uint32)
    ok = z.dtype == expected.dtype and bool(np.all((zb == eb) | (np.isnan(z) & np.isnan(expected))))
else:
    ok = np.array_equal(z, expected)
if not ok:
    bad = np.nonzero(z != expected)[0][:5]
    raise SystemExit(f"{op} {dt}: mismatch at {bad}: got {z[bad]} expected {expected[bad]}")
print(f"OK {op} {dt}")

"""Runs the entries of Inputs/int8.lpu on the simulator and in the reference
interpreter with the same inputs and weights (drawn here over the whole
i8 range, floats with NaN, infinities, ties and values far past the
scale), and requires both outputs to equal, bit for bit, what NumPy
computes independently from docs/language.md's definitions:

  quantize(x, s, z)   = clip(round_half_even(f32(x) / s) + z, -128, 127)
                        (NaN gives 0)
  dequantize(q, s, z) = f32(i32(q) - i32(z)) * s
  i8 @ i8             = exact integer sums, wrapped to i32

and the simulator's cycles to equal lpuc's prediction. Prints one line per
entry; exits 1 on the first difference.
"""
import json
import os
import struct
import subprocess
import sys

import numpy as np

rng = np.random.default_rng(8)
DTYPES = {np.float32: "F32", np.int8: "I8", np.float16: "F16", np.int32: "I32"}


def safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, v in tensors.items():
        data = np.ascontiguousarray(v).tobytes()
        header[name] = {"dtype": DTYPES[v.dtype.type], "shape": list(v.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def i8(*shape):
    return rng.integers(-128, 128, shape).astype(np.int8)


def floats(*shape, scale=3.0):
    x = (rng.standard_normal(shape) * scale).astype(np.float16)
    flat = x.reshape(-1)
    specials = [np.nan, np.inf, -np.inf, 1e4, -1e4, 0.0, -0.0]
    flat[:len(specials)] = specials
    return x


def quantize(x, s, z):
    with np.errstate(invalid="ignore", divide="ignore"):
        v = x.astype(np.float32) / np.float32(s)
        q = np.clip(np.round(np.clip(np.nan_to_num(v, nan=0.0), -1024, 1024)) + np.float32(z), -128, 127)
    return np.where(np.isnan(v), 0, q).astype(np.int8)


def dequantize(q, s, z):
    return ((q.astype(np.int32) - np.int32(z)).astype(np.float32) * np.float32(s)).astype(np.float32)


def matmul(a, b):
    return (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)


def conv2d(x, w, stride, pad):
    """NCHW x OIHW, exact integer sums wrapped to i32."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.zeros((n, c, h + 2 * pad, wd + 2 * pad), np.int64)
    xp[:, :, pad:pad + h, pad:pad + wd] = x
    ho, wo = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    y = np.zeros((n, o, ho, wo), np.int64)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + stride * ho:stride, j:j + stride * wo:stride]
            y += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j].astype(np.int64))
    return y.astype(np.int32)


def cases():
    for entry, (m, k, n) in [("small", (4, 64, 32)), ("tiles", (5, 700, 33)),
                             ("wide", (130, 321, 400)), ("row", (1, 1000, 7))]:
        x, w = i8(m, k), i8(k, n)
        yield entry, {"x": x}, {"w": w}, matmul(x, w)
    x, w = i8(2, 3, 40, 50), i8(2, 3, 50, 20)
    yield "batched", {"x": x, "w": w}, {}, matmul(x, w)
    # Scales 0.5 put x = 0.25 and 0.75 on ties (0.5 -> 0, 1.5 -> 2).
    x = floats(4, 8)
    x[1, :4] = [0.25, 0.75, -0.25, -0.75]
    s = (rng.random(8) * 0.1 + 0.01).astype(np.float32)
    s[:4] = 0.5
    z = rng.integers(-10, 10, 8).astype(np.int8)
    yield "roundtrip", {"x": x}, {"s": s, "z": z}, dequantize(quantize(x, s, z), s, z)
    x = floats(6, 72, scale=1.0)
    w, sw, b = i8(72, 40), (rng.random(40) * 0.02 + 0.001).astype(np.float32), \
        rng.standard_normal(40).astype(np.float32)
    sums = matmul((quantize(x, 0.03, 3).astype(np.int32) - 3).astype(np.int8), w)
    y = (dequantize(sums, 1.0, 0) / np.float32(1.0)) * (sw * np.float32(0.03)).astype(np.float32) + b
    yield "linear", {"x": x}, {"w": w, "sw": sw, "b": b}, y.astype(np.float32)
    x, w = i8(130, 321), i8(321, 400)
    yield "requant", {"x": x}, {"w": w}, quantize(dequantize(matmul(x, w), 0.0004, 0), 0.05, -2)
    w, w1 = i8(40, 24, 3, 3), i8(16, 40, 1, 1)
    s = (rng.random(40) * 1e-3 + 1e-4).astype(np.float32)
    x = i8(1, 24, 13, 11)
    yield "conv", {"x": x}, {"w": w}, conv2d(x, w, 2, 1)
    x = floats(2, 3, 72, scale=1.0)
    w, ws = i8(72, 40), (rng.random(40) * 0.02 + 0.001).astype(np.float32)
    b = rng.standard_normal(40).astype(np.float32)
    xs, xz = np.array(0.02, np.float32), np.array(-7, np.int8)
    sums = matmul((quantize(x, xs, xz).astype(np.int64) - np.int64(xz)), w)
    y = (dequantize(sums, 1.0, 0) * (xs * ws).astype(np.float32) + b).astype(np.float16)
    yield "qlinear", {"x": x}, {"fc.w": w, "fc.w_scale": ws, "fc.b": b, "fc.x_scale": xs, "fc.x_zero": xz}, y
    w = i8(40, 24, 3, 3)
    x = i8(2, 24, 9, 9)
    y = dequantize(conv2d(x, w, 1, 1), s[None, :, None, None], 0)
    y = quantize(np.maximum(y, np.float32(0)), 0.5, 0)
    yield "block", {"x": x}, {"w": w, "w1": w1, "s": s}, conv2d(y, w1, 1, 0)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def main(lpu, tmp):
    program = os.path.join(tmp, "int8.lpx")
    report = json.loads(run(["lpuc", lpu, "-o", program, "--report", "--json"]))
    predicted = {b["entry"]: b["cycles"] for b in report["buckets"]}
    for entry, inputs, weights, expected in cases():
        args = ["--entry", entry]
        for name, value in inputs.items():
            path = os.path.join(tmp, f"{entry}-{name}.npy")
            np.save(path, value)
            args += ["--input", f"{name}={path}"]
        if weights:
            path = os.path.join(tmp, f"{entry}.safetensors")
            safetensors(path, weights)
            args += ["--weights", path]
        else:
            args += ["--random-weights", "1"]
        out = os.path.join(tmp, f"{entry}-out.npy")
        for side in ("simulator", "reference"):
            where = [program] if side == "simulator" else ["--reference", lpu]
            stdout = run(["lpurun", *where, *args, "--output", f"out={out}", "-q",
                          *(["--report", "json"] if side == "simulator" else [])])
            got = np.load(out)
            if got.dtype != expected.dtype or got.shape != expected.shape or \
                    not np.array_equal(got.view(np.uint8), expected.view(np.uint8)):
                bad = np.argwhere(got.view(np.uint8).reshape(got.shape + (-1,)).any(-1) !=
                                  expected.view(np.uint8).reshape(expected.shape + (-1,)).any(-1)) \
                    if got.shape == expected.shape else []
                sys.exit(f"{entry} on the {side}: {got.dtype}{list(got.shape)} differs from NumPy's "
                         f"{expected.dtype}{list(expected.shape)}\n got {got.reshape(-1)[:8]}\n want "
                         f"{expected.reshape(-1)[:8]} {bad[:4]}")
            if side == "simulator":
                cycles = json.loads(stdout)["cycles"]
                if cycles != predicted[entry]:
                    sys.exit(f"{entry}: the simulator took {cycles} cycles, lpuc predicted {predicted[entry]}")
        print(f"{entry}: simulator and reference equal NumPy bit for bit, "
              f"{predicted[entry]} cycles as predicted")


if __name__ == "__main__":
    main(*sys.argv[1:])

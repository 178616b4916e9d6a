"""Compiles Inputs/resnet-int8.lpu (with lpuc's own choice of layouts, and
again with `--knob rows-layout-advantage=1`, which puts the 7x7 stems in
the rows layout's packed form) and runs each entry on the simulator and
in the reference interpreter with the same input and weights, requiring
their outputs to be equal bit for bit and the simulator's cycles to equal
lpuc's prediction. The `stem` entry (std.nn.QConvNormZ) is also required
to equal, bit for bit, what NumPy computes independently: the input
quantized with its zero point, `q - x_zero` padded with zeros (the float
model's zero padding, exact at the borders), the convolution's exact sums,
dequantized by x_scale * w_scale and the shift added in f32, rounded to
f16.

Weights that make sense: i8 weights over the whole range, positive scales
sized so that activations stay of order 1 (w_scale about 1 / (73
sqrt(fan-in)), the rms of a uniform i8), small shifts and zero points.
Prints one line per layout and entry; exits 1 on the first difference.

With --example, the file is examples/resnet50_int8.lpu: its entry
`classify` at N=1, lpuc's own layouts only, simulator against reference
(tests/lit/e2e/resnet50-int8.test).

usage: resnet_int8_check.py [--example] LPU TMPDIR
"""
import json
import os
import re
import struct
import subprocess
import sys

import numpy as np

rng = np.random.default_rng(50)
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


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def params(lpu, entry):
    """{path: (dtype, shape)} from lpuc --emit=params."""
    out, mine = {}, False
    for line in run(["lpuc", lpu, "--emit=params"]).splitlines():
        if line.startswith("entry "):
            mine = line.startswith(f"entry {entry}:")
        m = re.match(r"\s+(\S+): (\w+)(?:\[([0-9, ]*)\])?$", line)
        if m and mine:
            shape = [int(d) for d in m.group(3).split(",")] if m.group(3) else []
            out[m.group(1)] = (m.group(2), shape)
    return out


def weights(specs):
    w = {}
    for path, (dtype, shape) in specs.items():
        leaf, prefix = path.rsplit(".", 1)[-1], path[:-len(path.rsplit(".", 1)[-1])]
        if leaf == "w":
            w[path] = rng.integers(-127, 128, shape).astype(np.int8)
        elif leaf == "w_scale":
            ws = specs[prefix + "w"][1]
            fan_in = ws[0] if len(ws) == 2 else int(np.prod(ws[1:]))
            w[path] = (rng.uniform(0.5, 1.5, shape) / (73 * np.sqrt(fan_in))).astype(np.float32)
        elif leaf == "b":
            w[path] = (rng.standard_normal(shape) * 0.1).astype(np.float32)
        elif leaf in ("x_scale", "scale"):
            w[path] = np.array(rng.uniform(0.02, 0.04), np.float32)
        elif leaf in ("x_zero", "zero"):
            w[path] = np.array(rng.integers(-20, 21), np.int8)
        else:
            sys.exit(f"no rule for parameter {path}")
    return w


def quantize(x, s, z):
    with np.errstate(invalid="ignore", divide="ignore"):
        v = x.astype(np.float32) / np.float32(s)
        q = np.clip(np.round(np.clip(np.nan_to_num(v, nan=0.0), -1024, 1024)) + np.float32(z), -128, 127)
    return np.where(np.isnan(v), 0, q).astype(np.int8)


def qconvnormz(x, p, stride, pad):
    """std.nn.QConvNormZ from its definition, with the zero point taken out
    before padding (independent of the ones-convolution nn.lpu uses)."""
    d = quantize(x, p["x_scale"], p["x_zero"]).astype(np.int64) - np.int64(p["x_zero"])
    n, c, h, wd = d.shape
    w = p["w"].astype(np.int64)
    o, _, kh, kw = w.shape
    dp = np.zeros((n, c, h + 2 * pad, wd + 2 * pad), np.int64)
    dp[:, :, pad:pad + h, pad:pad + wd] = d
    ho, wo = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    sums = np.zeros((n, o, ho, wo), np.int64)
    for i in range(kh):
        for j in range(kw):
            patch = dp[:, :, i:i + stride * ho:stride, j:j + stride * wo:stride]
            sums += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    scale = (np.float32(p["x_scale"]) * p["w_scale"]).astype(np.float32)
    y = sums.astype(np.int32).astype(np.float32) * scale[None, :, None, None]
    return (y.astype(np.float32) + p["b"][None, :, None, None]).astype(np.float16)


def main(lpu, tmp, example=False):
    inputs = {"net": (1, 3, 45, 47), "stem": (1, 3, 37, 41)}
    layouts = [("default", []), ("rows stem", ["--knob", "rows-layout-advantage=1"])]
    if example:
        inputs, layouts = {"classify": (1, 3, 224, 224)}, layouts[:1]
    for layout, knobs in layouts:
        tag = layout.replace(" ", "-")
        program = os.path.join(tmp, f"resnet-int8-{tag}.lpx")
        report = json.loads(run(["lpuc", lpu, "-o", program, "--report", "--json", *knobs]))
        predicted = {b["entry"]: b["cycles"] for b in report["buckets"]}
        for entry, shape in inputs.items():
            x = (rng.standard_normal(shape) * 1.5).astype(np.float16)
            xpath = os.path.join(tmp, f"{tag}-{entry}-x.npy")
            np.save(xpath, x)
            w = weights(params(lpu, entry))
            wpath = os.path.join(tmp, f"{tag}-{entry}.safetensors")
            safetensors(wpath, w)
            got = {}
            for side in ("simulator", "reference"):
                out = os.path.join(tmp, f"{tag}-{entry}-{side}.npy")
                where = [program] if side == "simulator" else ["--reference", lpu]
                stdout = run(["lpurun", *where, "--entry", entry, "--input", f"x={xpath}",
                              "--weights", wpath, "--output", f"out={out}", "-q",
                              *(["--report", "json"] if side == "simulator" else [])])
                got[side] = np.load(out)
                if side == "simulator":
                    cycles = json.loads(stdout)["cycles"]
                    if cycles != predicted[entry]:
                        sys.exit(f"{layout} {entry}: {cycles} cycles on the simulator, "
                                 f"{predicted[entry]} predicted")
            sim, ref = got["simulator"], got["reference"]
            if not np.isfinite(ref).all() or not np.abs(ref).max() > 0:
                sys.exit(f"{layout} {entry}: the reference's output is degenerate")
            if sim.dtype != ref.dtype or not np.array_equal(sim.view(np.uint8), ref.view(np.uint8)):
                bad = np.flatnonzero(sim.reshape(-1) != ref.reshape(-1))
                sys.exit(f"{layout} {entry}: simulator and reference differ at {len(bad)} elements, "
                         f"first {bad[:5]}")
            what = "simulator and reference equal bit for bit"
            if entry == "stem":
                p = {k.split(".", 1)[1]: v for k, v in w.items()}
                expected = qconvnormz(x, p, 2, 3)
                if not np.array_equal(ref.view(np.uint16), expected.view(np.uint16)):
                    bad = np.flatnonzero(ref.view(np.uint16) != expected.view(np.uint16))
                    sys.exit(f"{layout} stem: reference and NumPy differ at {len(bad)} elements, "
                             f"first {bad[:5]}")
                what = "simulator and reference equal NumPy bit for bit"
            print(f"{layout} {entry}: {what}, {cycles} cycles as predicted")


if __name__ == "__main__":
    args = sys.argv[1:]
    example = "--example" in args
    args = [a for a in args if a != "--example"]
    main(args[0], args[1], example)

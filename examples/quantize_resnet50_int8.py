#!/usr/bin/env python3
"""Makes the weights of examples/resnet50_int8.lpu from those of examples/resnet50.lpu.

usage: quantize_resnet50_int8.py RESNET50.safetensors OUT.safetensors

Every ConvNorm `P` (`P.w` f16 [O, C, K, K] and its batch norm `P.bn.gamma`,
`.beta`, `.running_mean`, `.running_var`, f16 [O]) has the batch norm
folded in, as std.nn's BatchNorm2d computes it (eps 1e-5):
    inv   = f16(rsqrt(f32(running_var) + eps)) * gamma        (f16)
    shift = beta - running_mean * inv                           (f16)
    w'    = f32(w) * inv per output channel                     (f32)
and becomes `P.w` i8 [O, C, K, K] symmetric per output channel
(`P.w_scale` f32 [O] = max |w'[o]| / 127, 1 for a channel of zeros;
w8 = round_half_even(w' / scale) clipped to [-127, 127]) and `P.b` = shift
as f32: the parameters of std.nn's QConvNorm (QConvNormZ for the stem).
The classifier `fc` (std.nn.Linear: `fc.w` f16 [I, O], `fc.b` f16 [O])
becomes QLinear's `fc.w` i8 [I, O] (the same layout, no transpose),
`fc.w_scale` f32 [O] per output column, `fc.b` f32.

The activations' scales and zero points (every `x_scale` and `x_zero`,
and the FakeQuants' `scale` and `zero`) are not written: they come from
calibration on images, not from the weights. NumPy only.
"""
import json
import struct
import sys

import numpy as np

DTYPES = {"F16": np.float16, "F32": np.float32, "I8": np.int8, "I32": np.int32}
NAMES = {v: k for k, v in DTYPES.items()}
EPS = np.float32(1e-5)  # std.nn's LAYER_NORM_EPS, which BatchNorm2d uses
BN = ("gamma", "beta", "running_mean", "running_var")


def fail(msg):
    sys.exit(f"quantize_resnet50_int8.py: {msg}")


def read(path):
    """The tensors of a .safetensors file, or a clear exit if it is not one."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    try:
        n = struct.unpack("<Q", raw[:8])[0]
        if n > len(raw) - 8:
            raise ValueError("header past the end of the file")
        header = json.loads(raw[8:8 + n])
        if not isinstance(header, dict):
            raise ValueError("header is not a JSON object")
        data = raw[8 + n:]
        out = {}
        for name, t in header.items():
            if name == "__metadata__":
                continue
            if t["dtype"] not in DTYPES:
                raise ValueError(f"{name}: dtype {t['dtype']} (F16, F32, I8 or I32 expected)")
            a, b = t["data_offsets"]
            out[name] = np.frombuffer(data[a:b], DTYPES[t["dtype"]]).reshape(t["shape"])
    except (struct.error, ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
        fail(f"{path}: not a .safetensors file ({e})")
    return out


def write(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, v in tensors.items():
        raw = np.ascontiguousarray(v).tobytes()
        header[name] = {"dtype": NAMES[v.dtype.type], "shape": list(v.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def quantize_channels(w, axis):
    """w float -> (i8 of w's shape, f32 scales along axis), symmetric."""
    w = w.astype(np.float32)
    other = tuple(i for i in range(w.ndim) if i != axis)
    scale = (np.abs(w).max(axis=other) / np.float32(127)).astype(np.float32)
    scale = np.where(scale > 0, scale, np.float32(1)).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.round(w / scale.reshape(shape)), -127, 127).astype(np.int8)
    return q, scale


def fold(w, gamma, beta, mean, var):
    """A ConvNorm's weights and batch norm -> (f32 weights, f32 shift)."""
    inv = (1 / np.sqrt(var.astype(np.float32) + EPS)).astype(np.float16) * gamma
    shift = beta - mean * inv
    return w.astype(np.float32) * inv.astype(np.float32).reshape(-1, 1, 1, 1), shift.astype(np.float32)


def expect(weights, name, dtype, shape, path):
    t = weights.get(name)
    if t is None:
        fail(f"{path}: no {name}: not examples/resnet50.lpu's weights")
    if t.dtype != dtype or list(t.shape) != list(shape):
        fail(f"{path}: {name} is {t.dtype.name} {list(t.shape)}, "
             f"expected {np.dtype(dtype).name} {list(shape)}: not examples/resnet50.lpu's weights")
    return t


def main(argv):
    if len(argv) != 2:
        fail("usage: quantize_resnet50_int8.py RESNET50.safetensors OUT.safetensors")
    src, dst = argv
    weights = read(src)
    prefixes = sorted({n[:-len(".bn.gamma")] for n in weights if n.endswith(".bn.gamma")})
    if "stem" not in prefixes:
        fail(f"{src}: no stem.bn.gamma: not examples/resnet50.lpu's weights")
    out, used = {}, set()
    for p in prefixes:
        w = weights.get(f"{p}.w")
        if w is None or w.ndim != 4:
            fail(f"{src}: {p}.bn.gamma without a convolution {p}.w [O, C, K, K]")
        w = expect(weights, f"{p}.w", np.float16, w.shape, src)
        bn = [expect(weights, f"{p}.bn.{r}", np.float16, [w.shape[0]], src) for r in BN]
        used |= {f"{p}.w"} | {f"{p}.bn.{r}" for r in BN}
        bad = int((bn[3].astype(np.float32) + EPS <= 0).sum())
        if bad:
            fail(f"{src}: {p}.bn.running_var is negative in {bad} of {w.shape[0]} channels, where "
                 f"batch norm's rsqrt is NaN (lpurun --random-weights draws such variances)")
        folded, shift = fold(w, *bn)
        if not (np.isfinite(folded).all() and np.isfinite(shift).all()):
            fail(f"{src}: {p}: the folded weights are not finite")
        out[f"{p}.w"], out[f"{p}.w_scale"] = quantize_channels(folded, axis=0)
        out[f"{p}.b"] = shift
    fc_w = weights.get("fc.w")
    if fc_w is None or fc_w.ndim != 2:
        fail(f"{src}: no classifier fc.w [I, O]: not examples/resnet50.lpu's weights")
    fc_w = expect(weights, "fc.w", np.float16, fc_w.shape, src)
    fc_b = expect(weights, "fc.b", np.float16, [fc_w.shape[1]], src)
    used |= {"fc.w", "fc.b"}
    out["fc.w"], out["fc.w_scale"] = quantize_channels(fc_w, axis=1)
    out["fc.b"] = fc_b.astype(np.float32)
    extra = sorted(set(weights) - used)
    if extra:
        fail(f"{src}: {len(extra)} tensors of no ConvNorm or fc ({', '.join(extra[:4])}"
             f"{', ...' if len(extra) > 4 else ''}): not examples/resnet50.lpu's weights")
    write(dst, out)
    print(f"{dst}: {len(prefixes)} convolutions with their batch norms and fc in int8, "
          f"{sum(v.nbytes for v in out.values())} bytes of weights "
          f"({sum(v.nbytes for v in weights.values())} in f16); "
          f"activation scales and zero points not included")


if __name__ == "__main__":
    main(sys.argv[1:])

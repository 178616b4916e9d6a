#!/usr/bin/env python3
"""Makes the weights of examples/gpt2_w8.lpu from those of examples/gpt2.lpu.

usage: quantize_gpt2_w8.py GPT2.safetensors GPT2_W8.safetensors

Every Linear's weights `P.w` [I, O] become i8 with one scale per output
column, symmetric: scale = max |w[:, o]| / 127 (1 for a column of zeros),
w8 = round_half_even(w / scale) clipped to [-127, 127], written as `P.w`
and `P.scale` (f32); biases stay f16. The tied token table `wte.table`
[V, D] becomes `wte` (i8, a scale per column: `wte_scale` [D]) and, for the
LM head, `head` = its transpose [D, V] quantized per vocabulary column
(`head_scale` [V]). Everything else is copied. NumPy only.
"""
import json
import struct
import sys

import numpy as np

DTYPES = {"F16": np.float16, "F32": np.float32, "I8": np.int8, "I32": np.int32}
NAMES = {v: k for k, v in DTYPES.items()}


def read(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(data[a:b], DTYPES[t["dtype"]]).reshape(t["shape"])
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
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def quantize_columns(w):
    """w [I, O] float -> (i8 [I, O], f32 scales [O]), symmetric per column."""
    w = w.astype(np.float32)
    scale = np.abs(w).max(axis=0) / np.float32(127)
    scale = np.where(scale > 0, scale, np.float32(1)).astype(np.float32)
    q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
    return q, scale


def main(src, dst):
    weights = read(src)
    out = {}
    for name, value in weights.items():
        if name == "wte.table":
            out["wte"], out["wte_scale"] = quantize_columns(value)
            out["head"], out["head_scale"] = quantize_columns(value.T)
        elif name.endswith(".w") and value.ndim == 2:
            out[name], out[name[:-2] + ".scale"] = quantize_columns(value)
        else:
            out[name] = value
    write(dst, out)
    print(f"{dst}: {sum(v.nbytes for v in out.values())} bytes of weights "
          f"({sum(v.nbytes for v in weights.values())} in f16)")


if __name__ == "__main__":
    main(*sys.argv[1:])

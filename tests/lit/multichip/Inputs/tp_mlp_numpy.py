"""tp_mlp_numpy.py WEIGHTS.safetensors X.npy OUT.npy: OUT is tp-mlp.ir's
function computed by numpy in f32 from the whole weights: relu(x @ up.w +
up.b) @ down.w + x, then @ head.w. Prints 'close' when it agrees within 2%
of the output's scale."""
import json
import struct
import sys

import numpy as np


def load(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        begin, end = meta["data_offsets"]
        assert meta["dtype"] == "F16", meta
        out[name] = np.frombuffer(raw[8 + n + begin:8 + n + end], dtype=np.float16).reshape(meta["shape"])
    return out


w = {k: v.astype(np.float32) for k, v in load(sys.argv[1]).items()}
x = np.load(sys.argv[2]).astype(np.float32)
h = np.maximum(x @ w["up.w"] + w["up.b"], 0).astype(np.float16).astype(np.float32)
y = (x + (h @ w["down.w"])).astype(np.float16).astype(np.float32)
want = y @ w["head.w"]
got = np.load(sys.argv[3]).astype(np.float32)
assert got.shape == want.shape, (got.shape, want.shape)
scale = np.abs(want).max()
assert scale > 0 and np.abs(got - want).max() <= 0.02 * scale, (got, want)
print("close")

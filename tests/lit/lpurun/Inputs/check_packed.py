#!/usr/bin/env python3
"""check_packed.py WEIGHTS.safetensors Y.npy: y (packed.lpuasm's output) is
twice w's flat elements 320..639 and 960..1279 (zero past the 1000th)."""
import json, struct, sys
import numpy as np

raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
meta = json.loads(raw[8:8 + n])["w"]
w = np.frombuffer(raw[8 + n:], dtype=np.float16).reshape(meta["shape"])
flat = np.zeros(4 * 320, dtype=np.float16)
flat[:w.size] = w.reshape(-1)
expected = np.stack([flat[320:640], flat[960:1280]]) * np.float16(2)
y = np.load(sys.argv[2])
if y.shape != expected.shape or y.dtype != expected.dtype or not np.array_equal(y, expected):
    sys.exit("packed output differs:\n%s\nexpected\n%s" % (y, expected))
print("ok")

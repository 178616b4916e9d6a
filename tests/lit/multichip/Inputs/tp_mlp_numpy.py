"""tp_mlp_numpy.py WEIGHTS.safetensors X.npy OUT.npy: OUT is tp-mlp.ir's
function computed by numpy in f32 from the whole weights: relu(x @ up.w +
up.b) @ down.w + x, then @ head.w. Prints 'close' when it agrees within 2%
of the output's scale."""
import sys

import numpy as np

from safetensors_f16 import read_safetensors


w = {k: v.astype(np.float32) for k, v in read_safetensors(sys.argv[1]).items()}
x = np.load(sys.argv[2]).astype(np.float32)
h = np.maximum(x @ w["up.w"] + w["up.b"], 0).astype(np.float16).astype(np.float32)
y = (x + (h @ w["down.w"])).astype(np.float16).astype(np.float32)
want = y @ w["head.w"]
got = np.load(sys.argv[3]).astype(np.float32)
assert got.shape == want.shape, (got.shape, want.shape)
scale = np.abs(want).max()
assert scale > 0 and np.abs(got - want).max() <= 0.02 * scale, (got, want)
print("close")

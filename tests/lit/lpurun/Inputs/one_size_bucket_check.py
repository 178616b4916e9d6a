# The outputs of one-size-bucket.test against numpy: y is 2x the three
# given rows, w2 the whole 4x4 weight, on the simulator and the reference.
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Inputs"))
import safetensors_np  # noqa: E402

t = sys.argv[1]
x = np.load(f"{t}/x.npy")
w = safetensors_np.read(f"{t}/w.safetensors")["w"]
for prefix in ("", "r"):
    y = np.load(f"{t}/{prefix}y.npy")
    w2 = np.load(f"{t}/{prefix}w2.npy")
    assert y.shape == (3, 4), y.shape
    assert w2.shape == (4, 4), w2.shape
    np.testing.assert_array_equal(y, (x * 2).astype(np.float16))
    np.testing.assert_array_equal(w2, w)
print("one-size bucket outputs agree")

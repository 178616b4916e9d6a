"""close.py A.npy B.npy [TOL]: the two arrays agree within TOL (default 0.02)
of the larger's scale (its largest magnitude), element by element; prints
'close' or fails naming the worst element. The arrays must be finite and
not constant, so that agreement means something."""
import sys

import numpy as np

a = np.load(sys.argv[1]).astype(np.float64)
b = np.load(sys.argv[2]).astype(np.float64)
tol = float(sys.argv[3]) if len(sys.argv) > 3 else 0.02
assert a.shape == b.shape, (a.shape, b.shape)
assert np.isfinite(a).all() and np.isfinite(b).all(), "not finite"
assert a.std() > 0, "constant"
scale = max(np.abs(a).max(), np.abs(b).max())
err = np.abs(a - b)
worst = np.unravel_index(err.argmax(), err.shape)
assert err.max() <= tol * scale, f"at {worst}: {a[worst]} vs {b[worst]} (scale {scale})"
print("close")

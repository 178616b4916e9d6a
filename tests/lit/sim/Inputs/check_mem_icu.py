import sys
import numpy as np
d = sys.argv[1]
x, m = np.load(f"{d}/x.npy"), np.load(f"{d}/m.npy")
y, z, w = np.load(f"{d}/y.npy"), np.load(f"{d}/z.npy"), np.load(f"{d}/w.npy")
lanes = np.arange(320)
assert np.array_equal(y, x), "copy"
print("copy ok")
assert np.array_equal(z, x[m, lanes]), "gather"
print("gather ok")
expect = np.zeros_like(x)
expect[m, lanes] = x[0]
assert np.array_equal(w, expect), "scatter"
print("scatter ok")

import sys
import numpy as np
mode, d = sys.argv[1], sys.argv[2]
if mode == "make":
    r = np.random.default_rng(5)
    np.save(f"{d}/x.npy", r.integers(-128, 128, 320).astype(np.int8))
    np.save(f"{d}/m.npy", r.permutation(320).astype(np.int16))
    np.save(f"{d}/d.npy", r.integers(0, 400, 320).astype(np.int16))
    for k in range(16):
        np.save(f"{d}/t{k}.npy", r.integers(-128, 128, 320).astype(np.int8))
    sys.exit(0)
x, m, dm = (np.load(f"{d}/{n}.npy") for n in ("x", "m", "d"))
i = np.arange(320)
y = np.where(i >= 3, x[(i - 3) % 320], 0)
assert np.array_equal(np.load(f"{d}/y.npy"), y)
print("shift ok")
assert np.array_equal(np.load(f"{d}/r.npy"), x[(i - 5) % 320])
print("rotate ok")
assert np.array_equal(np.load(f"{d}/p.npy"), x[m])
print("permute ok")
assert np.array_equal(np.load(f"{d}/dd.npy"), np.where(dm < 320, x[np.minimum(dm, 319)], 0))
print("distribute ok")
t = np.stack([np.load(f"{d}/t{k}.npy") for k in range(16)])  # [16 streams, 320 lanes]
o = np.stack([np.load(f"{d}/o{k}.npy") for k in range(16)])
g = t.reshape(16, 20, 16)          # [stream l, group, lane s]
expect = g.transpose(2, 1, 0).reshape(16, 320)  # out[s][g*16+l] = in[l][g*16+s]
assert np.array_equal(o, expect)
print("transpose ok")

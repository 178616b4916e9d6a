"""update-column.test's check: states written a column at a time (update
on the last axis, Inputs/update_column.lpu), at run-time positions. For
each entry and position, the simulator's state equals the reference
interpreter's bit for bit and NumPy's update (the column at the clamped
position replaced, every other element kept); the outputs equal the
reference's (bit for bit where no matmul sums, within f16 rounding of
NumPy's product where one does).
  update_column_check.py PROGRAM SOURCE TMP POS..."""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Inputs"))
import safetensors_np  # noqa: E402

program, source, tmp = sys.argv[1:4]
positions = [int(p) for p in sys.argv[4:]]
rng = np.random.default_rng(7)
path = lambda name: os.path.join(tmp, name)


def column(shape, dtype):
    if dtype == np.int8:
        return rng.integers(-128, 128, shape).astype(np.int8)
    return rng.standard_normal(shape).astype(dtype)


# entry: (state name, state, input name, input, the column it writes, the
# output from the state written)
H, E, P = 3, 8, 700
H2, E2, P2 = 8, 64, 1000
cases = {}
k = column((1, H, 1, E), np.float16)
cases["keys"] = ("keys", column((1, H, E, P), np.float16), "k", k, k.transpose(0, 1, 3, 2),
                 lambda s, k=k: k.astype(np.float32) @ s.astype(np.float32))
k2 = column((1, H2, 1, E2), np.float16)
cases["heads"] = ("cache", column((1, H2, E2, P2), np.float16), "k", k2, k2.transpose(0, 1, 3, 2),
                  lambda s, k=k2: k.astype(np.float32) @ s.astype(np.float32))
x = column((5, 1), np.float32)
cases["wide"] = ("acc", column((5, 33), np.float32), "x", x, x * np.float32(2), lambda s: s + np.float32(1))
q = column((4, 1), np.int8)
cases["bytes"] = ("q", column((4, 700), np.int8), "x", q, q, lambda s: s.astype(np.float32))

for entry, (state, old, name, value, new, out) in cases.items():
    np.save(path(f"{entry}.state.npy"), old)
    np.save(path(f"{entry}.{name}.npy"), value)
    for pos in positions:
        np.save(path("pos.npy"), np.array(pos, dtype=np.int32))
        common = ["--entry", entry, "--input", f"{state}={path(entry + '.state.npy')}",
                  "--input", f"{name}={path(entry + '.' + name + '.npy')}", "--input", "pos=" + path("pos.npy"), "-q"]
        for run, extra in (("sim", [program]), ("ref", ["--reference", source])):
            subprocess.run(["lpurun", *extra, *common, "--output", f"out={path(run + '.npy')}",
                            "--dump-state", path(run + ".safetensors")], check=True)
        sim = safetensors_np.read(path("sim.safetensors"))[state]
        ref = safetensors_np.read(path("ref.safetensors"))[state]
        want = old.copy()
        want[..., min(max(pos, 0), old.shape[-1] - 1)] = new[..., 0]
        bits = lambda a: a.view(np.uint8)
        assert sim.shape == ref.shape == want.shape, (entry, sim.shape, ref.shape)
        assert (bits(sim) == bits(ref)).all(), (entry, pos, "simulator and reference differ")
        assert (bits(ref) == bits(want)).all(), (entry, pos, "not NumPy's update")
        a, b = np.load(path("sim.npy")), np.load(path("ref.npy"))
        expected = out(want)
        if entry in ("keys", "heads"):
            tol = 2e-3 * np.abs(expected).max()
            assert np.abs(a - b).max() <= tol and np.abs(b - expected).max() <= tol, (entry, pos)
        else:
            assert (bits(a) == bits(b)).all() and (bits(b) == bits(expected.astype(b.dtype))).all(), (entry, pos)
    print(f"{entry}: {old.dtype} {list(old.shape)} written a column in place at {len(positions)} positions, "
          "as NumPy's update")

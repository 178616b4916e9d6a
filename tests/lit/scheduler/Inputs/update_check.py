"""update-in-place.test's check: many states (Inputs/many_caches.lpu), each
updated in place at a run-time position, some of them stored in chunks
that split a head's positions. For each position, the simulator's states
and output equal the reference interpreter's bit for bit and NumPy's
update (the rows at the clamped position replaced, the rest kept).
  update_check.py LPURUN PROGRAM SOURCE CHIP TMP POS..."""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Inputs"))
import safetensors_np  # noqa: E402

lpurun, program, source, chip, tmp = sys.argv[1:6]
positions = [int(p) for p in sys.argv[6:]]
N, P, D = 24, 200, 8
rng = np.random.default_rng(11)
path = lambda name: os.path.join(tmp, name)
x = rng.standard_normal((1, 2, 1, D)).astype(np.float16)
np.save(path("x.npy"), x)
caches = {}
args = ["--input", "x=" + path("x.npy")]
for i in range(N):
    c = rng.standard_normal((1, 2, P, D)).astype(np.float16)
    name = f"slots.{i}.cache"
    caches[name] = c
    np.save(path(f"c{i}.npy"), c)
    args += ["--input", f"{name}={path(f'c{i}.npy')}"]
for pos in positions:
    np.save(path("pos.npy"), np.array(pos, dtype=np.int32))
    common = args + ["--input", "pos=" + path("pos.npy"), "-q"]
    for run, extra in (("sim", [program, "--chip", chip]), ("ref", ["--reference", source])):
        subprocess.run([lpurun, *extra, *common, "--output", f"out={path(run + '.npy')}",
                        "--dump-state", path(run + ".safetensors")], check=True)
    sim, ref = safetensors_np.read(path("sim.safetensors")), safetensors_np.read(path("ref.safetensors"))
    at = min(max(pos, 0), P - 1)
    y = x  # what slot i writes: x plus 1 i times, rounded to f16 each time
    for i in range(N):
        name = f"slots.{i}.cache"
        want = caches[name].copy()
        want[:, :, at] = y[:, :, 0]
        y = (y.astype(np.float32) + 1).astype(np.float16)
        assert (sim[name].view(np.uint16) == ref[name].view(np.uint16)).all(), (pos, name)
        assert (ref[name].view(np.uint16) == want.view(np.uint16)).all(), (pos, name)
    assert (np.load(path("sim.npy")).view(np.uint16) == np.load(path("ref.npy")).view(np.uint16)).all(), pos
print(f"{N} caches written in place at {len(positions)} positions, as NumPy's update")

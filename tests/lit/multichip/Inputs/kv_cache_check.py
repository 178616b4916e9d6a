"""kv-cache.test's data and checks.
  kv_cache_check.py make TMP
      the decode step's inputs: an id, a position and random caches
  kv_cache_check.py compare TMP ONE OTHER [LAYERS [zero]]
      the logits (TMP/ONE.npy) and every state (TMP/ONE.safetensors) of two
      runs of a decoder of LAYERS layers (default 2): each cache as it came
      in (the files `make` wrote, or with `zero` none: the caches started
      at zero) but at position 5, layer 0's bit for bit (each chip's heads
      are the same dot products as unsplit), the rest within f16 rounding
      of sums taken in another order
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Inputs"))
import safetensors_np  # noqa: E402

if sys.argv[1] == "make":
    tmp = sys.argv[2]
    rng = np.random.default_rng(4)
    np.save(os.path.join(tmp, "id.npy"), np.array([[7]], dtype=np.int32))
    np.save(os.path.join(tmp, "pos.npy"), np.array(5, dtype=np.int32))
    for layer in range(2):
        for kind in ("keys", "values"):
            shape = (1, 2, 8, 16) if kind == "keys" else (1, 2, 16, 8)
            np.save(os.path.join(tmp, f"l{layer}{kind}.npy"), rng.standard_normal(shape).astype(np.float16))
    sys.exit(0)

tmp, one, other = sys.argv[2:5]
layers = int(sys.argv[5]) if len(sys.argv) > 5 else 2
zero = sys.argv[6:] == ["zero"]
path = lambda name: os.path.join(tmp, name)
a, b = safetensors_np.read(path(one + ".safetensors")), safetensors_np.read(path(other + ".safetensors"))
assert sorted(a) == sorted(b) == sorted(f"layers.{l}.attention.{k}" for l in range(layers)
                                        for k in ("keys", "values")), (sorted(a), sorted(b))
for name in a:
    # The keys are stored transposed (std.llm): a position to a column.
    keys = name.endswith(".keys")
    x, y = a[name].astype(np.float32), b[name].astype(np.float32)
    assert x.shape == y.shape == ((1, 2, 8, 16) if keys else (1, 2, 16, 8)), (name, x.shape, y.shape)
    if name.startswith("layers.0."):
        assert (a[name].view(np.uint16) == b[name].view(np.uint16)).all(), name
    else:
        assert np.allclose(x, y, rtol=1e-2, atol=1e-3), (name, np.abs(x - y).max())
    given = (np.zeros(x.shape, np.float16) if zero else
             np.load(path(f"l{name.split('.')[1]}{name.split('.')[-1]}.npy")))
    positions = (lambda t: t.swapaxes(2, 3)) if keys else (lambda t: t)
    given = positions(given)
    kept = np.arange(16) != 5
    for run in (positions(a[name]), positions(b[name])):
        assert (run[:, :, kept].view(np.uint16) == given[:, :, kept].view(np.uint16)).all(), name
        assert not (run[:, :, 5] == given[:, :, 5]).all(), name
x, y = np.load(path(one + ".npy")).astype(np.float32), np.load(path(other + ".npy")).astype(np.float32)
assert x.shape == y.shape == (1, 1, 50) and x.std() > 0, (x.shape, y.shape)
assert np.abs(x - y).max() <= 0.02 * np.abs(x).max(), np.abs(x - y).max()
print(f"states and logits agree: {len(a)} caches")

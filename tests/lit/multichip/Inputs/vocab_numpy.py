"""vocab_numpy.py ENTRY WEIGHTS.safetensors IDS.npy OUT.npy: OUT is
Inputs/vocab.lpu's ENTRY (embedding, logits, tied or next) computed by numpy
from the whole weights, the ids clamped into the table as a gather clamps
them. The embedding must be equal bit for bit (its rows only move); the
logits agree within 2% of their scale (f32 here, f16 roundings there);
next is the argmax of logits computed from the same partitioned model, so
it is checked where numpy's top logit leads the second by more than that
tolerance. Prints 'equal' or 'close'."""
import sys

import numpy as np

from safetensors_f16 import read_safetensors

entry = sys.argv[1]
w = read_safetensors(sys.argv[2])
ids = np.load(sys.argv[3])
got = np.load(sys.argv[4])
table = w["embed"]
x = table[np.clip(ids, 0, table.shape[0] - 1)]
if entry == "embedding":
    assert got.dtype == np.float16 and got.shape == x.shape, (got.dtype, got.shape)
    assert (got.view(np.uint16) == x.view(np.uint16)).all(), "not bit-exact"
    print("equal")
    sys.exit(0)
f = {k: v.astype(np.float32) for k, v in w.items()}
x = x.astype(np.float32)
h = np.maximum(x @ f["up"], 0).astype(np.float16).astype(np.float32)
h = (x + (h @ f["down"]).astype(np.float16).astype(np.float32)).astype(np.float16).astype(np.float32)
head = f["embed"].T if entry == "tied" else f["head"]
want = h @ head
scale = np.abs(want).max()
if entry == "next":
    top = np.sort(want, axis=-1)
    clear = top[:, -1] - top[:, -2] > 0.02 * scale
    assert clear.sum() >= len(ids) // 2, clear
    assert (got[clear] == want.argmax(axis=-1)[clear]).all(), (got, want.argmax(axis=-1))
    print("close")
    sys.exit(0)
got = got.astype(np.float32)
assert got.shape == want.shape, (got.shape, want.shape)
assert scale > 0 and np.abs(got - want).max() <= 0.02 * scale, np.abs(got - want).max() / scale
print("close")

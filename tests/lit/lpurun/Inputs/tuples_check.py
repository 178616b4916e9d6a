"""Checks tuples.test's outputs: the simulator's against the reference's
bit for bit, and the reference's against NumPy. Usage: tuples_check.py TMP."""
import json
import os
import struct
import sys

import numpy as np

t = sys.argv[1]
load = lambda name: np.load(os.path.join(t, name))


def weights(path):
    data = open(path, 'rb').read()
    (n,) = struct.unpack('<Q', data[:8])
    header = json.loads(data[8:8 + n])
    kinds = {'F16': np.float16, 'F32': np.float32}
    out = {}
    for name, h in header.items():
        if name != '__metadata__':
            b, e = h['data_offsets']
            out[name] = np.frombuffer(data[8 + n + b:8 + n + e], kinds[h['dtype']]).reshape(h['shape'])
    return out


logits, nxt = load('logits.npy'), load('next.npy')
assert np.array_equal(logits, load('logits_ref.npy')) and np.array_equal(nxt, load('next_ref.npy'))
assert logits.shape == (3, 100) and nxt.shape == (3,) and nxt.dtype == np.int32, (logits.shape, nxt)
assert np.array_equal(nxt, np.argmax(logits.astype(np.float32), axis=1)), (nxt, logits)
w = weights(os.path.join(t, 'w.safetensors'))['w'].astype(np.float32)
x = load('x.npy').astype(np.float32)
assert np.allclose(logits.astype(np.float32), x @ w, rtol=1e-2, atol=5e-2)
print('step: logits and next equal on both sides; next is the argmax of logits '
      '(3 rows, cropped from bucket S=4)')

p = [load(f'p{k}.npy') for k in range(4)]
r = [load(f'r{k}.npy') for k in range(4)]
for a, b in zip(p, r):
    assert a.dtype == b.dtype and np.array_equal(a, b), (a, b)
b = weights(os.path.join(t, 'pw.safetensors'))['b']
x = load('p.npy')
y = (x + b).astype(np.float16)
assert np.array_equal(p[0], (y + b).astype(np.float16)) and np.array_equal(p[1], p[0])
assert np.allclose(p[2], x.astype(np.float32).sum(axis=1), rtol=1e-6)
assert np.array_equal(p[3], b)
print('parts: 4 outputs equal on both sides and to NumPy')

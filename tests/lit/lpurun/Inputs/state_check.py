"""state.test's data and checks. Usage: state_check.py TMP make|check.
make writes the input and the initial states; check compares the
simulator's outputs with the reference's bit for bit and the reference's
with NumPy's update: the rows at pos clamped into [0, P - 2], the rest
kept."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Inputs"))
import safetensors_np  # noqa: E402

t, what = sys.argv[1], sys.argv[2]
path = lambda name: os.path.join(t, name)
rng = np.random.default_rng(7)
P, D = 7, 5
if what == 'make':
    np.save(path('x.npy'), rng.standard_normal((2, D)).astype(np.float16))
    np.save(path('rows0.npy'), rng.standard_normal((P, D)).astype(np.float16))
    np.save(path('cols0.npy'), rng.standard_normal((D, P)).astype(np.float32))
    sys.exit(0)


w = safetensors_np.read(path('w.safetensors'))['w']
x = np.load(path('x.npy'))
y_ref = np.load(path('y.npy'))
y = (x.astype(np.float32) @ w.astype(np.float32)).astype(np.float16)
assert np.allclose(y_ref.astype(np.float32), y.astype(np.float32), rtol=2e-3, atol=2e-3), (y_ref, y)
rows0, cols0 = np.load(path('rows0.npy')), np.load(path('cols0.npy'))
for p in (2, -4, 6, 40):
    start = min(max(p, 0), P - 2)
    want_rows = rows0.copy()
    want_rows[start:start + 2] = y_ref
    want_cols = cols0.copy()
    want_cols[:, start:start + 2] = y_ref.astype(np.float32).T
    for name, want in (('rows', want_rows), ('cols', want_cols)):
        sim, ref = np.load(path(f'{name}{p}.npy')), np.load(path(f'ref_{name}{p}.npy'))
        assert sim.dtype == ref.dtype == want.dtype and np.array_equal(sim, ref), (name, p, sim, ref)
        assert np.array_equal(ref, want), (name, p, ref, want)
    assert np.array_equal(np.load(path(f'seen{p}.npy')), want_rows)
    assert np.array_equal(np.load(path(f'ref_seen{p}.npy')), want_rows)
    for f in (f'calls{p}.npy', f'ref_calls{p}.npy'):
        assert np.load(path(f)).tolist() == [42], f
    print(f'pos {p}: rows {start}..{start + 1} written, cols {start}..{start + 1} written')
print('simulator equals reference, reference equals NumPy, calls 41 -> 42')
want = rows0.copy()
want[0:2] = x
want[5:7] = (x.astype(np.float32) * 2).astype(np.float16)
for f in ('fixed.npy', 'ref_fixed.npy'):
    assert np.array_equal(np.load(path(f)), want), (f, np.load(path(f)), want)
print('positions 0 and 6 known when compiling: rows 0..1 and 5..6 written')

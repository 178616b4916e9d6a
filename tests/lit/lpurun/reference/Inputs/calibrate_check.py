"""Calibration against NumPy: runs `lpurun --reference --calibrate` on
calibrate.lpu's `net` and recomputes every scale and zero point here, from
the model's arithmetic written out in NumPy and the observers' rules
(docs/quantization.md), for min/max and for a percentile. Then runs the
model with the weights and the scales as two --weights files and checks
its output against NumPy's. Usage: calibrate_check.py LPU TMPDIR."""
import json
import os
import struct
import subprocess
import sys

import numpy as np

model, tmp = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(7)
KINDS = {np.float16: 'F16', np.float32: 'F32', np.int8: 'I8', np.int32: 'I32'}
DTYPES = {v: k for k, v in KINDS.items()}


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, value in tensors.items():
        blob = value.tobytes()
        header[name] = {'dtype': KINDS[value.dtype.type], 'shape': list(value.shape),
                        'data_offsets': [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(text)) + text + b''.join(blobs))


def read_safetensors(path):
    data = open(path, 'rb').read()
    (n,) = struct.unpack('<Q', data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, h in header.items():
        if name == '__metadata__':
            continue
        begin, end = h['data_offsets']
        out[name] = np.frombuffer(data[8 + n + begin:8 + n + end],
                                  dtype=DTYPES[h['dtype']]).reshape(h['shape'])
    return out


def quantize(x, scale, zero=0, axis=None):
    """ONNX QuantizeLinear in f32, as docs/language.md states it."""
    x = x.astype(np.float32)
    scale = np.asarray(scale, np.float32)
    zero = np.asarray(zero, np.float32)
    if axis is not None:
        shape = [1] * x.ndim
        shape[axis] = -1
        scale = scale.reshape(shape)
        zero = zero.reshape(shape) if zero.ndim else zero
    v = np.clip(x / scale, -1024, 1024)
    return np.clip(np.rint(v) + zero, -128, 127).astype(np.int8)


def dequantize(q, scale, zero=0, axis=None):
    scale = np.asarray(scale, np.float32)
    zero = np.asarray(zero, np.int32)
    if axis is not None:
        shape = [1] * q.ndim
        shape[axis] = -1
        scale = scale.reshape(shape)
        zero = zero.reshape(shape) if zero.ndim else zero
    return (q.astype(np.int32) - zero).astype(np.float32) * scale


def observe(values, observer, percentile, axis=None):
    """The range per channel (axis) or of the whole tensor, finite values."""
    if axis is not None:
        values = np.moveaxis(values, axis, -1).reshape(-1, values.shape[axis])
        cols = [values[:, c] for c in range(values.shape[1])]
    else:
        cols = [values.reshape(-1)]
    ranges = []
    for v in cols:
        v = v[np.isfinite(v)].astype(np.float64)
        if observer == 'minmax':
            ranges.append((float(v.min()), float(v.max())))
        else:
            ranges.append((float(np.percentile(v, 100 - percentile)),
                           float(np.percentile(v, percentile))))
    return ranges


def choose(lo, hi, affine, fixed_zero=0):
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if affine:
        scale = np.float32((hi - lo) / 255)
    else:
        scale = np.float32(max(hi / (127 - fixed_zero), lo / (-128 - fixed_zero)))
    if not scale > 0:
        scale = np.float32(1)
    if not affine:
        return scale, fixed_zero
    zero = int(np.clip(-128 - np.rint(lo / np.float64(scale)), -128, 127))
    return scale, zero


def expected_scales(x, w, observer, percentile):
    """Sequential, as the model runs: each scale from values computed with
    the scales before it."""
    out = {}
    (lo, hi), = observe(x.astype(np.float32), observer, percentile)
    out['x_scale'], _ = choose(lo, hi, affine=False)
    acc = quantize(x, out['x_scale']).astype(np.int32) @ w['w1'].astype(np.int32)
    a = acc.astype(np.float32) * (out['x_scale'] * w['w1_scale'])
    v = a - np.float32(0.5)
    (lo, hi), = observe(v, observer, percentile)
    out['h_scale'], zero = choose(lo, hi, affine=True)
    out['h_zero'] = np.int8(zero)
    h = dequantize(quantize(v, out['h_scale'], zero), out['h_scale'], zero)
    c = h[..., 0:4] * np.float32(3) + a[..., 4:8]
    ranges = observe(c, observer, percentile, axis=c.ndim - 1)
    out['c_scale'] = np.array([choose(l, h_, affine=False)[0] for l, h_ in ranges], np.float32)
    d = dequantize(quantize(c, out['c_scale'], axis=c.ndim - 1), out['c_scale'], axis=c.ndim - 1)
    e = d - np.float32(1)
    (lo, hi), = observe(e, observer, percentile)
    out['o_scale'], _ = choose(lo, hi, affine=False, fixed_zero=5)
    return out


weights = {
    'w1': rng.integers(-128, 128, size=(8, 16), dtype=np.int8),
    'w1_scale': (rng.random(16, dtype=np.float32) * 0.02 + 0.001).astype(np.float32),
}
wfile = os.path.join(tmp, 'weights.safetensors')
write_safetensors(wfile, weights)
# 5 samples of x: f16[3, 8], as a stack of 4 and one more file of one; an
# outlier in the last so that a percentile differs from the maximum.
x = (rng.standard_normal((5, 3, 8)) * 2).astype(np.float16)
x[4, 1, 2] = 40
np.save(os.path.join(tmp, 'stack.npy'), x[:4])
np.save(os.path.join(tmp, 'one.npy'), x[4])
failures = 0
for observer, percentile in [('minmax', None), ('percentile', 99.0)]:
    scales = os.path.join(tmp, f'scales-{observer}.safetensors')
    cmd = ['lpurun', '--reference', model, '--entry', 'net', '--weights', wfile,
           '--calibrate', os.path.join(tmp, 'stack.npy'),
           '--calibrate', 'x=' + os.path.join(tmp, 'one.npy'),
           '--dump-scales', scales, '--observer', observer, '-q']
    if percentile is not None:
        cmd += ['--percentile', str(percentile)]
    table = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    got = read_safetensors(scales)
    want = expected_scales(x, weights, observer, percentile or 100.0)
    equal = 0
    for name, value in want.items():
        g = got.get(name)
        if g is None or g.dtype != np.asarray(value).dtype or not np.array_equal(g, value):
            print(f'{observer}: {name}: got {g!r}, NumPy {value!r}')
            failures += 1
        else:
            equal += 1
    if sorted(got) != sorted(want):
        print(f'{observer}: names {sorted(got)} != {sorted(want)}')
        failures += 1
    print(f'{observer}: {equal} of {len(want)} parameters equal to NumPy\'s')
    print(table.splitlines()[0])
    # The model with its weights and these scales (two files) gives what
    # NumPy computes with them.
    out = os.path.join(tmp, f'out-{observer}.npy')
    np.save(os.path.join(tmp, 'x4.npy'), x[4])
    subprocess.run(['lpurun', '--reference', model, '--entry', 'net', '--weights', wfile,
                    '--weights', scales, '--input', 'x=' + os.path.join(tmp, 'x4.npy'),
                    '--output', 'out=' + out, '-q'], check=True)
    a = (quantize(x[4], want['x_scale']).astype(np.int32) @ weights['w1'].astype(np.int32))
    a = a.astype(np.float32) * (want['x_scale'] * weights['w1_scale'])
    v = a - np.float32(0.5)
    h = dequantize(quantize(v, want['h_scale'], want['h_zero']), want['h_scale'], want['h_zero'])
    c = h[:, 0:4] * np.float32(3) + a[:, 4:8]
    d = dequantize(quantize(c, want['c_scale'], axis=1), want['c_scale'], axis=1)
    e = d - np.float32(1)
    expect = dequantize(quantize(e, want['o_scale'], 5), want['o_scale'], 5)
    if not np.array_equal(np.load(out), expect):
        print(f'{observer}: the run with the scales differs from NumPy')
        failures += 1
    else:
        print(f'{observer}: run with --weights W --weights SCALES equals NumPy')
sys.exit(1 if failures else 0)

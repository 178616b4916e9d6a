"""An independent numpy model of examples/transformer.lpu (two post-norm
encoder blocks of stdlib/std/nn.lpu, D = 256, H = 4, F = 1024), to check
`lpurun --reference` against.

    transformer_ref.py input X.npy S          writes a random f16[1, S, 256]
    transformer_ref.py check W.safetensors X.npy Y.npy

The model follows the language's rounding points: every tensor is f16
unless the source converts to f32 (the layer norm, the attention scores and
the softmax), and each op's result is rounded to its dtype. Matmuls are
computed in float64 here and rounded once, so the only differences from the
interpreter (fp32 accumulation in sgemm's order) are in the last bit of a
rounding, which the next ops can carry on.

Tolerance (fp16): |lpurun - numpy| <= 4e-4 + 4e-3 |numpy| for every element,
and a mean absolute difference below 1e-5. The outputs are layer-norm outputs
scaled by random gammas of size ~1/16 (mean |y| ~ 0.04, where one f16 ulp is
2^-15 ~ 3e-5): 4e-3 relative is 4 ulps of any element, 4e-4 absolute covers
4 ulps of the elements near 0.1 whose neighbours cross a rounding boundary.
Measured: max 1.2e-4 (one ulp at 0.2), mean 2e-6. Running the same check on
outputs made with other weights gives a mean difference of 0.06.
"""
import json
import math
import struct
import sys

import numpy as np

D, H, F, LAYERS = 256, 4, 1024, 2
f16, f32 = np.float16, np.float32


def read_safetensors(path):
    data = open(path, 'rb').read()
    (n,) = struct.unpack('<Q', data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    kinds = {'F16': np.float16, 'F32': np.float32, 'I32': np.int32}
    out = {}
    for name, entry in header.items():
        if name == '__metadata__':
            continue
        begin, end = entry['data_offsets']
        out[name] = np.frombuffer(body[begin:end], dtype=kinds[entry['dtype']]).reshape(entry['shape'])
    return out


def matmul(a, b):
    return (a.astype(np.float64) @ b.astype(np.float64)).astype(a.dtype)


def linear(w, prefix, x):
    return (matmul(x, w[prefix + '.w']) + w[prefix + '.b']).astype(f16)


def layer_norm(w, prefix, x):
    xf = x.astype(f32)
    mu = xf.mean(axis=-1, keepdims=True, dtype=f32)
    c = xf - mu
    var = (c * c).mean(axis=-1, keepdims=True, dtype=f32)
    y = c * (f32(1) / np.sqrt(var + f32(1e-5)))
    return ((y.astype(f16) * w[prefix + '.gamma']).astype(f16) + w[prefix + '.beta']).astype(f16)


def split_heads(x):
    b, s, _ = x.shape
    return x.reshape(b, s, H, D // H).transpose(0, 2, 1, 3)


def attention(w, prefix, x):
    q = split_heads(linear(w, prefix + '.q', x))
    k = split_heads(linear(w, prefix + '.k', x))
    v = split_heads(linear(w, prefix + '.v', x))
    scores = matmul(q, k.transpose(0, 1, 3, 2)).astype(f32) / np.sqrt(f32(D // H))
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p = (e / e.sum(axis=-1, keepdims=True, dtype=f32)).astype(f16)
    heads = matmul(p, v)
    b, _, s, _ = heads.shape
    return linear(w, prefix + '.o', heads.transpose(0, 2, 1, 3).reshape(b, s, D))


def gelu(x):
    v = x.astype(np.float64)
    erf = np.vectorize(math.erf)
    return (0.5 * v * (1 + erf(v / math.sqrt(2)))).astype(f16)


def encoder(w, x):
    h = x
    for i in range(LAYERS):
        p = f'layers.{i}'
        a = layer_norm(w, p + '.ln1', (h + attention(w, p + '.attn', h)).astype(f16))
        ffn = linear(w, p + '.ffn.down', gelu(linear(w, p + '.ffn.up', a)))
        h = layer_norm(w, p + '.ln2', (a + ffn).astype(f16))
    return h


def main():
    if sys.argv[1] == 'input':
        s = int(sys.argv[3])
        rng = np.random.default_rng(s)
        np.save(sys.argv[2], rng.standard_normal((1, s, D)).astype(f16))
        return 0
    weights = read_safetensors(sys.argv[2])
    x = np.load(sys.argv[3])
    got = np.load(sys.argv[4])
    want = encoder(weights, x)
    if got.shape != want.shape or got.dtype != want.dtype:
        print(f'lpurun gave {got.dtype}{list(got.shape)}, numpy {want.dtype}{list(want.shape)}')
        return 1
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    bound = 4e-4 + 4e-3 * np.abs(want.astype(np.float64))
    print(f'max abs diff {diff.max():.5f}, mean {diff.mean():.6f}, '
          f'elements over the bound {(diff > bound).sum()}')
    if (diff > bound).any() or diff.mean() >= 1e-5:
        return 1
    print('matches numpy')
    return 0


if __name__ == '__main__':
    sys.exit(main())

"""BERT-base (examples/bert.lpu, entry `pooled`: 12 encoder layers and the
pooler, sequence 128, batch 1) in the reference interpreter next to PyTorch
CPU fp32 running the same architecture with random weights, in one run.

    bert_reference.py LPURUN [RUNS]

Both sides use Debian's OpenBLAS with OPENBLAS_CORETYPE=SkylakeX (the
library does not recognise this CPU and otherwise falls back to its slowest
kernels; docs/reference-interpreter.md) and the same number of threads (the
machine's cores). The interpreter's time is its own report: the run alone,
after compiling the model and binding the weights (which lpurun times
separately); PyTorch's is a forward pass after two warm-up passes. Each side
takes the best of RUNS (default 3); wall and CPU time are printed, since a
shared machine slows the wall clock.
"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEQ, VOCAB = 128, 30522

TORCH_MODEL = r'''
import math, os, sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F

V, P, T, L, D, H, FF = 30522, 512, 2, 12, 768, 12, 3072
S = int(sys.argv[1])
runs = int(sys.argv[2])
torch.set_num_threads(os.cpu_count())
torch.manual_seed(0)


class Layer(nn.Module):
    # Post-norm, as examples/bert.lpu: ln1(x + attn(x)), ln2(h + ffn(h)).
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(D, D) for _ in range(4))
        self.ln1, self.ln2 = nn.LayerNorm(D, eps=1e-5), nn.LayerNorm(D, eps=1e-5)
        self.up, self.down = nn.Linear(D, FF), nn.Linear(FF, D)

    def forward(self, x):
        b, s, _ = x.shape
        split = lambda t: t.view(b, s, H, D // H).transpose(1, 2)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        p = torch.softmax(q @ k.transpose(2, 3) / math.sqrt(D // H), dim=-1)
        h = self.ln1(x + self.o((p @ v).transpose(1, 2).reshape(b, s, D)))
        return self.ln2(h + self.down(F.gelu(self.up(h))))


class Bert(nn.Module):
    def __init__(self):
        super().__init__()
        self.words, self.positions, self.segments = nn.Embedding(V, D), nn.Embedding(P, D), nn.Embedding(T, D)
        self.ln = nn.LayerNorm(D, eps=1e-5)
        self.layers = nn.ModuleList(Layer() for _ in range(L))
        self.pooler = nn.Linear(D, D)

    def forward(self, ids, seg):
        h = self.ln(self.words(ids) + self.positions(torch.arange(ids.shape[1])) + self.segments(seg))
        for layer in self.layers:
            h = layer(h)
        return torch.tanh(self.pooler(h[:, 0]))


model = Bert().eval()
ids = torch.randint(0, V, (1, S))
seg = torch.zeros(1, S, dtype=torch.long)
best_wall = best_cpu = float('inf')
with torch.no_grad():
    for _ in range(2):
        model(ids, seg)
    for _ in range(runs):
        w, c = time.perf_counter(), time.process_time()
        model(ids, seg)
        best_wall = min(best_wall, time.perf_counter() - w)
        best_cpu = min(best_cpu, time.process_time() - c)
print(f'{best_wall} {best_cpu}')
'''


def main():
    lpurun = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    env = dict(os.environ, OPENBLAS_CORETYPE='SkylakeX', OMP_WAIT_POLICY='PASSIVE')
    threads = os.cpu_count()
    with tempfile.TemporaryDirectory() as d:
        rng = np.random.default_rng(0)
        np.save(f'{d}/ids.npy', rng.integers(0, VOCAB, (1, SEQ)).astype(np.int32))
        np.save(f'{d}/seg.npy', np.zeros((1, SEQ), np.int32))
        ours = []
        for _ in range(runs):
            out = subprocess.run(
                [lpurun, '--reference', f'{ROOT}/examples/bert.lpu', '--entry', 'pooled',
                 '--input', f'ids={d}/ids.npy', '--input', f'segment_ids={d}/seg.npy',
                 '--output', f'out={d}/out.npy', '--threads', str(threads)],
                env=env, capture_output=True, text=True, check=True)
            m = re.search(r'weights bound in ([\d.]+) s, run ([\d.]+) s \(cpu ([\d.]+) s\)', out.stderr)
            if not m:
                sys.exit('lpurun did not report its time:\n' + out.stderr)
            ours.append(tuple(float(g) for g in m.groups()))
        torch_out = subprocess.run([sys.executable, '-c', TORCH_MODEL, str(SEQ), str(runs)],
                                   env=env, capture_output=True, text=True, check=True)
        torch_wall, torch_cpu = (float(v) for v in torch_out.stdout.split())
    bind = min(r[0] for r in ours)
    wall = min(r[1] for r in ours)
    cpu = min(r[2] for r in ours)
    print(f'BERT-base, sequence {SEQ}, batch 1, {threads} threads, OPENBLAS_CORETYPE=SkylakeX, '
          f'best of {runs}')
    print(f'  reference interpreter (f16 storage, fp32 math): {wall * 1e3:7.1f} ms wall, '
          f'{cpu * 1e3:7.1f} ms cpu   (binding the weights: {bind * 1e3:.0f} ms, once)')
    print(f'  PyTorch {torch_version()} CPU fp32:                {torch_wall * 1e3:7.1f} ms wall, '
          f'{torch_cpu * 1e3:7.1f} ms cpu')
    print(f'  ratio interpreter / PyTorch: {wall / torch_wall:.2f}x wall, {cpu / torch_cpu:.2f}x cpu '
          f'(target: within 2x)')


def torch_version():
    out = subprocess.run([sys.executable, '-c', 'import torch; print(torch.__version__)'],
                         capture_output=True, text=True)
    return out.stdout.strip() or '?'


if __name__ == '__main__':
    main()

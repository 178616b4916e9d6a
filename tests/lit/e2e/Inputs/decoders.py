"""Greedy generation with a KV cache kept as state, checked against PyTorch.

usage: decoders.py KIND TMP MODEL.lpu PROGRAM N PROMPT...
  KIND     gpt (std.llm.GptBlock) or llama (std.llm.LlamaBlock), the sizes
           of Inputs/tiny_gpt.lpu or Inputs/tiny_llama.lpu; gpt2 for
           examples/gpt2_decode.lpu (GPT-2 small, a cache of 128)
  TMP      a scratch directory
  PROGRAM  MODEL.lpu compiled by lpuc (entries prefill and decode)
  N        tokens to generate
  PROMPT   the prompt's token ids

Writes random weights (at scales that make the tokens vary) as
TMP/w.safetensors,
then generates N tokens greedily: PyTorch, recomputing the whole sequence
at every step without a cache (in f32, from the same f16 weights), and
the reference interpreter, by one `prefill` call on the prompt and N - 1
`decode` calls, the state handed from one call to the next through files
(--input and --output of each state by its path): the same tokens, up to
a near tie (two tokens within 2% of the step's largest logit, which f16
against f32 may order either way; none in the tests' cases). The simulator
then makes the same calls, fed the reference's tokens: its logits within
2% of the reference's at every step, and the same argmax but at a near
tie. Prints one line a path.
"""
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Inputs"))
import safetensors_np  # noqa: E402

kind, tmp, model, program, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
prompt = [int(t) for t in sys.argv[6:]]
path = lambda name: os.path.join(tmp, name)

# The models' sizes: vocabulary, positions, layers, features, heads, the
# cache's positions; llama's key-value heads and MLP width.
V, P, L, D, H, C = (50257, 1024, 12, 768, 12, 128) if kind == 'gpt2' else (50, 16, 2, 32, 4, 16)
K, F = 2, 48
E = D // H
gpt = kind in ('gpt', 'gpt2')
rng = np.random.default_rng(2024)


def normal(*shape, scale=0.02):
    return (rng.standard_normal(shape) * scale).astype(np.float16)


def mat(rows, cols, scale):
    """A layer's matrix: the scale is for 32 features, 1/sqrt(D) wider."""
    return normal(rows, cols, scale=scale * np.sqrt(32 / D))


def rope_tables():
    inv = 1.0 / (10000.0 ** (np.arange(0, E, 2) / E))
    angles = np.arange(P)[:, None] * inv[None, :]
    return np.cos(angles).astype(np.float16), np.sin(angles).astype(np.float16)


w = {}
if gpt:
    w['wte.table'] = normal(V, D, scale=0.5)
    w['wpe.table'] = normal(P, D, scale=1.0)
    for i in range(L):
        p = f'h.{i}.'
        for ln in ('ln_1', 'ln_2'):
            w[p + ln + '.gamma'] = (1 + normal(D, scale=0.1)).astype(np.float16)
            w[p + ln + '.beta'] = normal(D)
        w[p + 'attn.c_attn.w'], w[p + 'attn.c_attn.b'] = mat(D, 3 * D, 0.5), normal(3 * D)
        w[p + 'attn.c_proj.w'], w[p + 'attn.c_proj.b'] = mat(D, D, 0.5), normal(D, scale=0.5)
        w[p + 'mlp.c_fc.w'], w[p + 'mlp.c_fc.b'] = mat(D, 4 * D, 0.5), normal(4 * D)
        w[p + 'mlp.c_proj.w'], w[p + 'mlp.c_proj.b'] = mat(4 * D, D, 0.3), normal(D)
    w['ln_f.gamma'], w['ln_f.beta'] = (1 + normal(D, scale=0.1)).astype(np.float16), normal(D)
    states = [f'h.{i}.attn.{s}' for i in range(L) for s in ('keys', 'values')]
else:
    w['embed.table'] = normal(V, D, scale=0.5)
    w['rope_cos'], w['rope_sin'] = rope_tables()
    for i in range(L):
        p = f'layers.{i}.'
        w[p + 'attention_norm.g'] = (1 + normal(D, scale=0.1)).astype(np.float16)
        w[p + 'ffn_norm.g'] = (1 + normal(D, scale=0.1)).astype(np.float16)
        w[p + 'attention.wq'], w[p + 'attention.wo'] = mat(D, D, 0.2), mat(D, D, 0.2)
        w[p + 'attention.wk'], w[p + 'attention.wv'] = mat(D, E * K, 0.2), mat(D, E * K, 0.2)
        w[p + 'feed_forward.w1'], w[p + 'feed_forward.w3'] = mat(D, F, 0.2), mat(D, F, 0.2)
        w[p + 'feed_forward.w2'] = mat(F, D, 0.2)
    w['norm.g'] = (1 + normal(D, scale=0.1)).astype(np.float16)
    w['output'] = normal(D, V, scale=0.5)
    states = [f'layers.{i}.attention.{s}' for i in range(L) for s in ('keys', 'values')]
safetensors_np.write(path('w.safetensors'), w)
t = {k: torch.tensor(v.astype(np.float32)) for k, v in w.items()}


def layer_norm(x, p):
    return torch.nn.functional.layer_norm(x, (D,), t[p + '.gamma'], t[p + '.beta'], eps=1e-5)


def rms_norm(x, p):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5) * t[p + '.g']


def causal(q, k, v):
    s = q.shape[-2]
    scores = q @ k.transpose(-1, -2) / np.sqrt(E)
    scores = scores.masked_fill(torch.triu(torch.ones(s, s, dtype=torch.bool), 1), float('-inf'))
    return torch.softmax(scores, -1) @ v


def gpt_logits(ids):
    s = len(ids)
    x = t['wte.table'][ids] + t['wpe.table'][:s]
    for i in range(L):
        p = f'h.{i}.'
        a = layer_norm(x, p + 'ln_1') @ t[p + 'attn.c_attn.w'] + t[p + 'attn.c_attn.b']
        q, k, v = (z.reshape(s, H, E).transpose(0, 1) for z in a.split(D, -1))
        x = x + causal(q, k, v).transpose(0, 1).reshape(s, D) @ t[p + 'attn.c_proj.w'] + t[p + 'attn.c_proj.b']
        m = layer_norm(x, p + 'ln_2') @ t[p + 'mlp.c_fc.w'] + t[p + 'mlp.c_fc.b']
        m = torch.nn.functional.gelu(m, approximate='tanh')
        x = x + m @ t[p + 'mlp.c_proj.w'] + t[p + 'mlp.c_proj.b']
    return layer_norm(x, 'ln_f') @ t['wte.table'].T


def rotary(x, s):
    c, sn = t['rope_cos'][:s], t['rope_sin'][:s]
    a, b = x[..., :E // 2], x[..., E // 2:]
    return torch.cat([a * c - b * sn, b * c + a * sn], -1)


def llama_logits(ids):
    s = len(ids)
    x = t['embed.table'][ids]
    for i in range(L):
        p = f'layers.{i}.'
        h = rms_norm(x, p + 'attention_norm')
        q = rotary((h @ t[p + 'attention.wq']).reshape(s, H, E).transpose(0, 1), s)
        k = rotary((h @ t[p + 'attention.wk']).reshape(s, K, E).transpose(0, 1), s)
        v = (h @ t[p + 'attention.wv']).reshape(s, K, E).transpose(0, 1)
        k, v = k.repeat_interleave(H // K, 0), v.repeat_interleave(H // K, 0)
        x = x + causal(q, k, v).transpose(0, 1).reshape(s, D) @ t[p + 'attention.wo']
        h = rms_norm(x, p + 'ffn_norm')
        x = x + (torch.nn.functional.silu(h @ t[p + 'feed_forward.w1']) * (h @ t[p + 'feed_forward.w3'])) @ t[p + 'feed_forward.w2']
    return rms_norm(x, 'norm') @ t['output']


logits_of = gpt_logits if gpt else llama_logits
with torch.no_grad():
    ids, torch_logits = list(prompt), []
    for _ in range(n):
        torch_logits.append(logits_of(ids)[-1].numpy())
        ids.append(int(np.argmax(torch_logits[-1])))
    torch_tokens = ids[len(prompt):]


def run(args, step, outputs):
    """One lpurun call; returns the outputs named in `outputs`, read back."""
    files = {name: path(f'{step}.{name}.npy') for name in outputs}
    cmd = list(args) + ['-q', '--weights', path('w.safetensors')]
    for name, f in files.items():
        cmd += ['--output', f'{name}={f}']
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f'{" ".join(cmd)}\n{done.stderr}')
    return {name: np.load(f) for name, f in files.items()}


def generate(base, tag, forced=None):
    """prefill, then decode steps, the state carried through files: each
    step's logits row and argmax. Each decode step takes the argmax before
    it, or the token `forced` gives."""
    np.save(path('prompt.npy'), np.array([prompt], np.int32))
    args = base + ['--entry', 'prefill', '--input', 'ids=' + path('prompt.npy')]
    # The cache starts as zeros, given here as every call's is: the values
    # a position to a row, the keys transposed (a position to a column).
    heads = H if gpt else K
    np.save(path('zeros.values.npy'), np.zeros((1, heads, C, E), np.float16))
    np.save(path('zeros.keys.npy'), np.zeros((1, heads, E, C), np.float16))
    for s in states:
        args += ['--input', f'{s}=' + path('zeros.' + s.split('.')[-1] + '.npy')]
    out = run(args, f'{tag}0', ['out'] + states)
    tokens, logits = [], []
    row = out['out'][0, len(prompt) - 1]
    for step in range(1, n + 1):
        logits.append(row)
        tokens.append(int(np.argmax(row)))
        if step == n:
            break
        token = forced[step - 1] if forced else tokens[-1]
        args = base + ['--entry', 'decode', '--input', f'id=1x1xi32={token}',
                       '--input', f'pos=i32={len(prompt) + step - 1}']
        for s in states:
            np.save(path(f'{tag}.state.{s}.npy'), out[s])
            args += ['--input', f'{s}=' + path(f'{tag}.state.{s}.npy')]
        out = run(args, f'{tag}{step}', ['out'] + states)
        row = out['out'][0, 0]
    return tokens, np.array(logits)


def near_tie(row, a, b):
    """Whether tokens a and b score within 2% of the row's largest |logit|:
    rounding may order them either way (f16 against f32, or two orders of
    f32 sums)."""
    return abs(float(row[a]) - float(row[b])) <= 0.02 * float(np.abs(row).max())


# The reference's own greedy loop against PyTorch's: the same tokens, up to
# a near tie (after one, the two continue from different texts).
ref_tokens, ref_logits = generate(['lpurun', '--reference', model], 'ref')
print(f'pytorch: {torch_tokens}')
same = 0
while same < n and ref_tokens[same] == torch_tokens[same]:
    same += 1
if same < n:
    assert near_tie(torch_logits[same], ref_tokens[same], torch_tokens[same]), \
        ('reference', ref_tokens, 'pytorch', torch_tokens, same)
    print(f'reference: the same first {same} tokens, then a near tie')
else:
    print(f'reference: the same {n} tokens')
# The simulator fed the reference's tokens: at every step logits within the
# tolerance of the reference's, and the same token but at a near tie.
sim_tokens, sim_logits = generate(['lpurun', program], 'sim', forced=ref_tokens)
diff = np.abs(sim_logits - ref_logits).max()
scale = np.abs(ref_logits).max()
assert diff <= 0.02 * scale, (diff, scale)
ties = 0
for step, (a, b) in enumerate(zip(sim_tokens, ref_tokens)):
    if a != b:
        assert near_tie(ref_logits[step], a, b), ('simulator', sim_tokens, 'reference', ref_tokens, step)
        ties += 1
print(f'simulator: logits within 2% of their largest at each of the {n} steps, '
      f'the same tokens' + (f' but {ties} near ties' if ties else ''))


def generated(args):
    """The tokens `lpurun ... --generate` prints, and its other lines."""
    cmd = list(args) + ['--generate', str(n), '--prompt', path('prompt.npy'), '--weights', path('w.safetensors')]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f'{" ".join(cmd)}\n{done.stderr}')
    lines = done.stdout.splitlines()
    return [int(x) for x in lines[0].split(':')[1].split()], lines[1:]


# lpurun's own loop (--generate, the state kept by lpurun): the reference's
# tokens as above; the simulator's the same up to a near tie.
gen_ref, _ = generated(['lpurun', '--reference', model])
assert gen_ref == ref_tokens, ('--generate', gen_ref, 'file loop', ref_tokens)
gen_sim, lines = generated(['lpurun', program])
same = 0
while same < n and gen_sim[same] == ref_tokens[same]:
    same += 1
if same < n:
    assert near_tie(ref_logits[same], gen_sim[same], ref_tokens[same]), ('--generate', gen_sim, ref_tokens)
    print(f'lpurun --generate: the reference gives the {n} tokens, the simulator the first {same}, then a near tie')
else:
    print(f'lpurun --generate: the same {n} tokens on the simulator and the reference')
for line in lines:
    if line.startswith('decode:'):
        print(line)

"""Builds a PyTorch model in code and exports it to ONNX for lpu-import's
tests; nothing is downloaded.

usage: export_models.py KIND OUTDIR [--f16-error]

KIND is one of mlp, cnn, cnn_bn, resnet50, resnet50_bn, bert, bert_small,
bert_masked, torch_encoder, int_div, gather_negative. Writes to
OUTDIR (created if need be):
  KIND.onnx                     the model (torch.onnx.export);
  KIND.CASE.NAME.npy            each input of each case, in the type the
                                imported entry takes (ONNX float -> f16,
                                int64 -> i32), values representable there;
  KIND.CASE.torch.npy           PyTorch's fp32 output on those inputs;
  KIND.json                     the manifest compare.py reads: the graph's
                                input and output names and, per case, its
                                label, the sizes of the symbolic dimensions
                                (the bucket lpurun must pick) and the files.
A static model has one case (its label names its batch, e.g. B=2, and
CASE is the label without '=', B2); a model with a symbolic dimension has
one per size saved (bert: S=64 and S=128, files KIND.S64.*, KIND.S128.*).

Weights: torch.manual_seed(0), every layer's own initialisation, then
every normalisation randomised away from the identity (gamma and
running_var uniform in [0.5, 1.5], beta and running_mean in [-0.1, 0.1]:
an importer that swapped gamma and beta, or dropped the running mean,
would still pass on the defaults 1, 0, 0, 1), and finally m.half().float():
every parameter and buffer f16-representable, so that the .safetensors
lpu-import writes holds exactly the numbers PyTorch multiplies by. Two
exceptions the tolerances account for: an eval-mode export folds batch
norm into the convolution before it (cnn, resnet50), and the folded
weights w * gamma / sqrt(var + eps) are fp32 numbers the importer rounds
to f16, half a step (2^-11 relative at most) away from PyTorch's product;
and the lpu side stores every activation in f16.

--f16-error also runs the model with every layer's output rounded to f16
(a forward hook on each leaf module, plus the attention's own matmuls,
softmax and residual adds) and prints how far that lands from the fp32
output: an estimate, made without lpu-import, of what f16 activations
cost, which the tests' tolerances are set against (their comments quote
it).
"""
import json
import math
import os
import sys
import time

import numpy as np
import onnx
import torch
from torch import nn

# Whether the hand-written ops below (attention, residual adds) round to
# f16: only under --f16-error.
ROUND = False


def r(t):
    return t.half().float() if ROUND else t


def randomise_norms(m):
    """Moves every BatchNorm/LayerNorm away from the identity (docstring)."""
    g = torch.Generator().manual_seed(1)

    def u(t, lo, hi):
        with torch.no_grad():
            t.copy_(torch.rand(t.shape, generator=g) * (hi - lo) + lo)

    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            u(mod.weight, 0.5, 1.5)
            u(mod.bias, -0.1, 0.1)
            u(mod.running_mean, -0.1, 0.1)
            u(mod.running_var, 0.5, 1.5)
        elif isinstance(mod, nn.LayerNorm):
            u(mod.weight, 0.5, 1.5)
            u(mod.bias, -0.1, 0.1)


def f16_representable(m):
    return m.half().float()


# ----------------------------------------------------------------- models


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu1 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.relu2 = nn.ReLU()
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        x = self.pool(self.relu1(self.bn1(self.conv1(x))))
        x = self.relu2(self.conv2(x))
        return self.fc(self.flatten(self.gap(x)))


class Attention(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h, self.e = h, d // h
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x):
        b, s, d = x.shape

        def heads(t):
            return t.view(b, s, self.h, self.e).transpose(1, 2)

        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        scores = r(q @ k.transpose(-1, -2)) / math.sqrt(self.e)
        p = r(torch.softmax(scores, dim=-1))
        ctx = r(p @ v).transpose(1, 2).reshape(b, s, d)
        return self.o(ctx)


class EncoderLayer(nn.Module):
    """Post-LN: x = ln1(x + attn(x)); x = ln2(x + ffn(x))."""

    def __init__(self, d, h, f, eps):
        super().__init__()
        self.attn = Attention(d, h)
        self.ln1 = nn.LayerNorm(d, eps=eps)
        self.up = nn.Linear(d, f)
        self.gelu = nn.GELU()
        self.down = nn.Linear(f, d)
        self.ln2 = nn.LayerNorm(d, eps=eps)

    def forward(self, x):
        x = self.ln1(r(x + self.attn(x)))
        return self.ln2(r(x + self.down(self.gelu(self.up(x)))))


class Encoder(nn.Module):
    """BERT's encoder without segments or pooler: token and learned
    position embeddings, their LayerNorm, L post-LN layers. The position
    ids are a slice of an arange buffer, as in HF's BertEmbeddings: in
    ONNX, Shape -> Gather -> Slice of a constant, then a Gather."""

    def __init__(self, vocab, positions, layers, d, h, f, eps=1e-12):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(positions, d)
        self.register_buffer("position_ids", torch.arange(positions).unsqueeze(0))
        self.ln = nn.LayerNorm(d, eps=eps)
        self.layers = nn.ModuleList(EncoderLayer(d, h, f, eps) for _ in range(layers))

    def forward(self, input_ids):
        s = input_ids.shape[1]
        x = self.ln(r(self.tok(input_ids) + self.pos(self.position_ids[:, :s])))
        for layer in self.layers:
            x = layer(x)
        return x


class MaskedBert(nn.Module):
    """A Hugging Face-style BERT layer: token, segment and position
    embeddings, an additive attention mask from a 0/1 input, post-LN with
    epsilon 1e-12, and a tanh pooler over the first token."""

    def __init__(self, vocab=100, d=64, h=4, f=256, positions=64):
        super().__init__()
        self.tok, self.typ, self.pos = nn.Embedding(vocab, d), nn.Embedding(2, d), nn.Embedding(positions, d)
        self.register_buffer("position_ids", torch.arange(positions).expand((1, -1)))
        self.h = h
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
        self.up, self.down, self.pool = nn.Linear(d, f), nn.Linear(f, d), nn.Linear(d, d)

    def forward(self, input_ids, token_type_ids, attention_mask):
        b, s = input_ids.shape
        x = self.tok(input_ids) + self.typ(token_type_ids) + self.pos(self.position_ids[:, :s])
        mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        e = x.shape[-1] // self.h

        def heads(t):
            return t.view(b, s, self.h, e).permute(0, 2, 1, 3)

        scores = torch.matmul(heads(self.q(x)), heads(self.k(x)).transpose(-1, -2)) / e ** 0.5
        p = torch.softmax(scores + mask, dim=-1)
        c = torch.matmul(p, heads(self.v(x))).permute(0, 2, 1, 3).reshape(b, s, -1)
        y = self.ln1(x + self.o(c))
        y = self.ln2(y + self.down(nn.functional.gelu(self.up(y))))
        return torch.tanh(self.pool(y[:, 0]))


class IntDiv(nn.Module):
    """Integer division as PyTorch's trunc rounding (ONNX's integer Div):
    by a run-time divisor, by a positive and by a negative constant, each
    on negative and positive numerators. The quotients are small integers,
    exact in the f16 the float output is computed in."""

    def forward(self, a, b):
        q = torch.cat([torch.div(a, b, rounding_mode="trunc"),
                       torch.div(a, 3, rounding_mode="trunc"),
                       torch.div(a, -4, rounding_mode="trunc")], dim=-1)
        return q.float()


class GatherNegative(nn.Module):
    """Gather with indices counted from the end (ONNX allows [-s, s-1]):
    run-time ids into a constant table (an embedding) and into a run-time
    tensor, and constant indices, some negative and not a run, into a
    run-time tensor."""

    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.randn(6, 4))
        self.register_buffer("fixed", torch.tensor([-1, 0, -2, -6]))

    def forward(self, x, ids):
        a = self.table[ids]                    # [1, 4, 4], run-time ids
        b = x[:, ids[0]]                       # [1, 4, 4], run-time data and ids
        c = x[:, self.fixed]                   # [1, 4, 4], constant indices
        return torch.cat([a, b, c], dim=-1)


class AvgPoolCNN(nn.Module):
    """nn.AvgPool2d, which torch 1.13 exports as a Pad of nothing before
    the AveragePool, and nn.AvgPool2d with padding (count_include_pad, the
    language's), between convolutions."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.pool1 = nn.AvgPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, 3)
        self.pool2 = nn.AvgPool2d(3, stride=2, padding=1)
        self.fc = nn.Linear(16 * 3 * 3, 5)

    def forward(self, x):
        x = self.pool1(torch.relu(self.conv1(x)))
        x = self.pool2(torch.relu(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


def resnet50():
    import torchvision
    m = torchvision.models.resnet50(weights=None)
    # Weights as tests/lit/e2e/resnet50.test's (run_and_compare.py's
    # --scaled-weights): conv weights of std 1/sqrt(C*K*K) rather than
    # torchvision's He init of std sqrt(2 / (O*K*K)), with which the
    # residual sums grow block by block towards f16's limit.
    g = torch.Generator().manual_seed(2)
    for mod in m.modules():
        if isinstance(mod, nn.Conv2d):
            o, c, kh, kw = mod.weight.shape
            with torch.no_grad():
                mod.weight.copy_(torch.randn(mod.weight.shape, generator=g) / math.sqrt(c * kh * kw))
        elif isinstance(mod, nn.Linear):
            with torch.no_grad():
                mod.weight.copy_(torch.randn(mod.weight.shape, generator=g) / math.sqrt(mod.in_features))
    return m


# KIND -> (builder, opset, input names, output name, {symbolic dim: axis
# of each input}, cases [(label, {dim: size}, seed)], export kwargs).
def spec(kind):
    static = {"do_constant_folding": True}
    if kind == "mlp":
        return (lambda: nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)), 13,
                {"x": ("f", [2, 64])}, "logits", {}, [("B=2", {})], static)
    if kind == "cnn":
        return (SmallCNN, 13, {"x": ("f", [1, 3, 16, 16])}, "logits", {}, [("N=1", {})], static)
    if kind == "cnn_bn":
        # TrainingMode.PRESERVE on a model in eval mode: the exporter skips
        # its eval-mode peephole that folds batch norm into the conv
        # (torch 1.13's _model_to_graph runs it only for EVAL), so a
        # BatchNormalization node (inference form, one output) remains.
        # Constant folding off, as the exporter advises in that mode.
        return (SmallCNN, 13, {"x": ("f", [1, 3, 16, 16])}, "logits", {}, [("N=1", {})],
                {"training": torch.onnx.TrainingMode.PRESERVE, "do_constant_folding": False})
    if kind == "resnet50":
        return (resnet50, 13, {"image": ("f", [1, 3, 224, 224])}, "logits", {}, [("N=1", {})], static)
    if kind == "resnet50_bn":
        # The batch norms kept, as in cnn_bn: nn.BatchNorm2d in the import.
        return (resnet50, 13, {"image": ("f", [1, 3, 224, 224])}, "logits", {}, [("N=1", {})],
                {"training": torch.onnx.TrainingMode.PRESERVE, "do_constant_folding": False})
    if kind == "bert":
        return (lambda: Encoder(30522, 512, 12, 768, 12, 3072), 17,
                {"input_ids": ("i", [1, "S"], 30522)}, "last_hidden_state", {"S": 1},
                [("S=64", {"S": 64}), ("S=128", {"S": 128})], static)
    if kind == "bert_masked":
        return (MaskedBert, 13, {"input_ids": ("i", [1, "S"], 100),
                                 "token_type_ids": ("i", [1, "S"], 2),
                                 "attention_mask": ("i", [1, "S"], 2)},
                "pooled", {"S": 1}, [("S=16", {"S": 16}), ("S=40", {"S": 40})], static)
    if kind == "torch_encoder":
        # torch.nn's own nn.TransformerEncoder (batch first, GELU, post-LN),
        # whose export goes through F.multi_head_attention_forward: a fused
        # in-projection sliced three ways, [S, B * H, E] heads, layer norms
        # written out at opset 14, and its two identical layers' weights
        # shared by the exporter through Identity nodes.
        def encoder():
            layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                               batch_first=True, activation="gelu")
            return nn.TransformerEncoder(layer, num_layers=2)
        return (encoder, 14, {"x": ("f", [1, "S", 64])}, "y", {"S": 1},
                [("S=16", {"S": 16}), ("S=24", {"S": 24})], static)
    if kind == "bert_small":
        return (lambda: Encoder(100, 64, 2, 64, 4, 256), 13,
                {"input_ids": ("i", [1, "S"], 100)}, "last_hidden_state", {"S": 1},
                [("S=16", {"S": 16}), ("S=32", {"S": 32})], static)
    if kind == "avgpool":
        return (AvgPoolCNN, 13, {"x": ("f", [1, 3, 14, 14])}, "logits", {}, [("N=1", {})], static)
    if kind == "int_div":
        # Numerators in [-20, 20], divisors in [-5, 5] but not 0.
        return (IntDiv, 13, {"a": ("i", [2, 16], 21, -20), "b": ("i", [2, 16], 6, -5, "nonzero")},
                "q", {}, [("B=2", {})], static)
    if kind == "gather_negative":
        # Ids over the whole of [-6, 6): half of them count from the end.
        return (GatherNegative, 13, {"x": ("f", [1, 6, 4]), "ids": ("i", [1, 4], 6, -6)},
                "y", {}, [("B=1", {})], static)
    sys.exit(f"export_models.py: unknown KIND '{kind}' "
             "(mlp, cnn, cnn_bn, resnet50, resnet50_bn, bert, bert_small, bert_masked, "
             "torch_encoder, avgpool, int_div, gather_negative)")


def make_input(rng, desc, sizes):
    kind, dims = desc[0], [sizes[d] if isinstance(d, str) else d for d in desc[1]]
    if kind == "i":
        # Ids anywhere in the vocabulary (or in [low, high) when a low
        # bound is given, without 0 when "nonzero" follows it); the
        # imported entry takes i32.
        low = desc[3] if len(desc) > 3 else 0
        v = rng.integers(low, desc[2], dims)
        if "nonzero" in desc[4:]:
            v[v == 0] = 1
        return v.astype(np.int32)
    # Unit normal, in f16 (the imported entry's input type).
    return rng.standard_normal(dims).astype(np.float16)


def to_torch(a):
    return torch.from_numpy(a.astype(np.int64) if a.dtype.kind == "i" else a.astype(np.float32))


def rounding_hooks(m):
    def hook(_mod, _inp, out):
        return out.half().float()
    return [mod.register_forward_hook(hook) for mod in m.modules()
            if not list(mod.children()) and not isinstance(mod, (nn.Dropout, nn.Flatten))]


def round_every_step():
    """Also rounds inside the layers, as an importer that writes each ONNX
    node as its own f16 op would: a linear's product before its bias, a
    layer norm's normalised value, its scaling and its shift, each step of
    GELU's erf form. Returns a function that undoes the patches."""
    fn = torch.nn.functional
    saved = {c: c.forward for c in (nn.Linear, nn.LayerNorm, nn.GELU)}
    nn.Linear.forward = lambda self, x: r(r(x @ self.weight.t()) + self.bias)
    nn.LayerNorm.forward = lambda self, x: r(r(r(fn.layer_norm(
        x, self.normalized_shape, None, None, self.eps)) * self.weight) + self.bias)
    nn.GELU.forward = lambda self, x: r(r(x * 0.5) * r(1 + r(torch.erf(r(x / math.sqrt(2))))))

    def undo():
        for c, f in saved.items():
            c.forward = f
    return undo


def round_folded_weights(m):
    """The weights of an eval-mode export, which folds each batch norm into
    the conv registered just before it: w * s with s = gamma / sqrt(var +
    eps), rounded to f16 by the importer. Sets each such conv's weight to
    f16(w * s) / s, so that the unfolded model computes what the folded,
    rounded one does; returns a function that restores the weights."""
    saved, prev = [], None
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d) and isinstance(prev, nn.Conv2d):
            scale = (mod.weight / torch.sqrt(mod.running_var + mod.eps)).view(-1, 1, 1, 1)
            saved.append((prev, prev.weight.detach().clone()))
            with torch.no_grad():
                prev.weight.copy_((prev.weight * scale).half().float() / scale)
        if not list(mod.children()):
            prev = mod

    def undo():
        with torch.no_grad():
            for conv, w in saved:
                conv.weight.copy_(w)
    return undo


def f16_error(m, arrays, inputs, y, every_step, folded):
    """Runs m with f16 rounding (docstring) and prints the error against y."""
    global ROUND
    ROUND = True
    hooks = rounding_hooks(m)
    undo = round_every_step() if every_step else (lambda: None)
    unfold = round_folded_weights(m) if every_step and folded else (lambda: None)
    try:
        with torch.no_grad():
            z = m(*(to_torch(arrays[n]) for n in inputs)).numpy().astype(np.float32)
    finally:
        unfold()
        undo()
        for h in hooks:
            h.remove()
        ROUND = False
    d = np.abs(z.astype(np.float64) - y)
    i = np.unravel_index(np.argmax(d), d.shape)
    # The smallest atol with which |z - y| <= atol + rtol |y| holds.
    need = ", ".join(f"rtol {t:g}: atol {np.max(d - t * np.abs(y)):.3g}" for t in (0, 1e-3, 4e-3, 1e-2))
    print(f"  f16 {'every step' + (', folded weights' if folded else '') if every_step else 'each layer'}: |error| max {d.max():.3g} "
          f"(at {list(i)}: {z[i]:.6g} vs {y[i]:.6g}), rms {np.sqrt(np.mean(d ** 2)):.3g}; "
          f"needs {need}")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    want_f16_error = "--f16-error" in sys.argv[1:]
    if len(args) != 2:
        sys.exit(__doc__)
    kind, out = args
    build, opset, inputs, output, symbolic, cases, kwargs = spec(kind)
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    m = build()
    randomise_norms(m)
    m = f16_representable(m).eval()

    rng = np.random.default_rng(0)
    manifest = {"kind": kind, "onnx": f"{kind}.onnx", "inputs": list(inputs), "output": output,
                "cases": []}
    for label, sizes in cases:
        arrays = {n: make_input(rng, d, sizes) for n, d in inputs.items()}
        # No '=' in the file names: lpurun's --input=NAME=FILE splits at it.
        tag = label.replace("=", "")
        files = {}
        for n, a in arrays.items():
            files[n] = f"{kind}.{tag}.{n}.npy"
            np.save(os.path.join(out, files[n]), a)
        with torch.no_grad():
            y = m(*(to_torch(arrays[n]) for n in inputs)).numpy().astype(np.float32)
        assert np.isfinite(y).all(), f"{kind} {label}: non-finite output"
        np.save(os.path.join(out, f"{kind}.{tag}.torch.npy"), y)
        manifest["cases"].append({"label": label, "bucket": sizes, "inputs": files,
                                  "output": f"{kind}.{tag}.torch.npy"})
        print(f"{kind} ({label}): output {list(y.shape)}, rms {np.sqrt(np.mean(y ** 2)):.4g}, "
              f"max |y| {np.abs(y).max():.4g}")
        if want_f16_error:
            # An eval-mode export of a model with batch norm folds it.
            folded = kwargs.get("training") is None and any(
                isinstance(mod, nn.BatchNorm2d) for mod in m.modules())
            f16_error(m, arrays, inputs, y, False, folded)
            f16_error(m, arrays, inputs, y, True, folded)

    # Exported with the first case's inputs; dim_param names the symbolic
    # dimensions (dynamic_axes), on the output too.
    first = manifest["cases"][0]
    example = tuple(to_torch(np.load(os.path.join(out, first["inputs"][n]))) for n in inputs)
    dynamic = {}
    for n, d in inputs.items():
        axes = {i: s for i, s in enumerate(d[1]) if isinstance(s, str)}
        if axes:
            dynamic[n] = axes
            dynamic.setdefault(output, {}).update(axes)
    start = time.time()
    torch.onnx.export(m, example, os.path.join(out, f"{kind}.onnx"), opset_version=opset,
                      input_names=list(inputs), output_names=[output],
                      dynamic_axes=dynamic or None, **kwargs)
    manifest["export_seconds"] = round(time.time() - start, 1)
    path = os.path.join(out, f"{kind}.onnx")
    model = onnx.load(path)
    # torch 1.13 names the output's dimensions it cannot tie to an input's
    # (the batch of a view(b, s, ...) whose b is traced through Shape) with
    # made-up dim_params such as "LayerNormalizationlast_hidden_state_dim_0".
    # They are not sizes of the model: the output gets the declared
    # symbolic names and concrete sizes elsewhere, so that every dim_param
    # left is one --bucket must name.
    y = np.load(os.path.join(out, first["output"]))
    for v in model.graph.output:
        for i, d in enumerate(v.type.tensor_type.shape.dim):
            if d.dim_param and d.dim_param not in symbolic:
                d.Clear()
                d.dim_value = y.shape[i]
    onnx.checker.check_model(model)
    onnx.save(model, path)
    with open(os.path.join(out, f"{kind}.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()

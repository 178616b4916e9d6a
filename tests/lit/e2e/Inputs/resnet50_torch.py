"""torchvision's quantizable ResNet-50 (torchvision.models.quantization,
float until converted) beside examples/resnet50.lpu and
examples/resnet50_int8.lpu: the weights drawn for a test, PyTorch's
post-training quantization of it, and the parameters of both .lpu models
taken from the torch modules, under the .lpu names. Used by
resnet50_int8_torch.py and resnet50_int8_quantize.py.

Engine: this PyTorch (Debian's 1.13) has no fbgemm; onednn (x86) runs
per-channel int8 weights and is used. Activations are quint8 with
reduce_range (MinMaxObserver: the 128 values [0, 127], so that a torch
activation's integer and zero point are also an i8's), weights qint8
symmetric per output channel (PerChannelMinMaxObserver: scale =
max|w| / 127.5, integers in [-128, 127]).

Which torch tensor each int8 parameter stands for (resnet50_int8.lpu):
  stem.x_scale, stem.x_zero      the QuantStub's (the network's input);
  B.conv1.x_scale, B.downsample.x_scale
                                 block B's input: the previous block's
                                 skip_add_relu, or for layer1's first the
                                 stem's conv1 (ConvReLU; max pooling keeps
                                 its grid);
  B.conv2.x_scale, B.conv3.x_scale
                                 B's conv1's and conv2's outputs;
  B.out3, B.out_down             B's conv3's (ConvBn, no relu) and
                                 downsample's outputs;
  B.out                          B's skip_add_relu (zero point 0: relu's);
  fc.x_scale, fc.x_zero          layer4's last block's output (the average
                                 pool keeps the grid).
"""
import copy
import json
import math
import struct

import numpy as np
import torch

ENGINE = "onednn"
DTYPES = {"F16": np.float16, "F32": np.float32, "I8": np.int8, "I32": np.int32}
NAMES = {v: k for k, v in DTYPES.items()}
# ImageNet's normalisation, as torchvision's transforms apply it.
MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(1, 3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(1, 3, 1, 1)


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name != "__metadata__":
            a, b = t["data_offsets"]
            out[name] = np.frombuffer(data[a:b], DTYPES[t["dtype"]]).reshape(t["shape"])
    return out


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, v in tensors.items():
        raw = np.ascontiguousarray(v).tobytes()
        header[name] = {"dtype": NAMES[v.dtype.type], "shape": list(v.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def blocks(m):
    """(.lpu prefix, torch bottleneck) for the 16 blocks in order."""
    for stage in range(1, 5):
        for i, block in enumerate(getattr(m, f"layer{stage}")):
            yield (f"layer{stage}.first" if i == 0 else f"layer{stage}.rest.{i - 1}"), block


def conv_norms(m):
    """(.lpu prefix, conv, batch norm) for the 53 ConvNorms of the float
    (unfused) model, in resnet50.lpu's names."""
    yield "stem", m.conv1, m.bn1
    for p, b in blocks(m):
        for k in (1, 2, 3):
            yield f"{p}.conv{k}", getattr(b, f"conv{k}"), getattr(b, f"bn{k}")
        if b.downsample is not None:
            yield f"{p}.downsample", b.downsample[0], b.downsample[1]


def float_model(seed):
    """The float model with every weight drawn from seed: convolutions
    normal with std 1/sqrt(C*K*K) (torchvision's He init makes the
    residual sums grow block by block), the linear layer std
    1/sqrt(2048), batch norms' running_var and gamma uniform in [0.5, 1.5],
    running_mean and beta in [-0.1, 0.1] (so folding changes every
    channel), all rounded to f16 (resnet50.lpu's weights are f16).
    Eval mode."""
    from torchvision.models.quantization import resnet50
    torch.manual_seed(seed)
    m = resnet50(weights=None, quantize=False).eval()
    g = torch.Generator().manual_seed(seed)

    def fill(t, x):
        with torch.no_grad():
            t.copy_(x.half().float())

    for _, conv, bn in conv_norms(m):
        o, c, kh, kw = conv.weight.shape
        fill(conv.weight, torch.randn(conv.weight.shape, generator=g) / math.sqrt(c * kh * kw))
        for t, lo, hi in ((bn.running_var, 0.5, 1.5), (bn.weight, 0.5, 1.5),
                          (bn.running_mean, -0.1, 0.1), (bn.bias, -0.1, 0.1)):
            fill(t, torch.rand(t.shape, generator=g) * (hi - lo) + lo)
    fill(m.fc.weight, torch.randn(m.fc.weight.shape, generator=g) / math.sqrt(m.fc.in_features))
    fill(m.fc.bias, (torch.rand(m.fc.bias.shape, generator=g) * 2 - 1) / math.sqrt(m.fc.in_features))
    return m


def f16_weights(m):
    """The float model's weights in examples/resnet50.lpu's names, f16."""
    h = lambda t: t.detach().numpy().astype(np.float16)  # noqa: E731
    out = {}
    for p, conv, bn in conv_norms(m):
        out[f"{p}.w"] = h(conv.weight)
        out[f"{p}.bn.gamma"], out[f"{p}.bn.beta"] = h(bn.weight), h(bn.bias)
        out[f"{p}.bn.running_mean"], out[f"{p}.bn.running_var"] = h(bn.running_mean), h(bn.running_var)
    out["fc.w"], out["fc.b"] = h(m.fc.weight.T), h(m.fc.bias)
    return out


def images(n, seed):
    """n random images [n, 3, 224, 224] as resnet50.lpu takes them:
    squares of random colour (pixels uniform in [0, 1], in blocks of 7 to
    112 pixels, a random size per image), normalised as ImageNet's
    (torchvision's mean and std), rounded to f16."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        r = int(rng.choice([2, 4, 7, 8, 14, 16, 28, 32]))
        pix = rng.random((3, r, r), np.float32).repeat(224 // r, 1).repeat(224 // r, 2)
        out.append(((pix[None] - MEAN) / STD).astype(np.float16)[0])
    return np.stack(out)


def quantize(m, calibration):
    """PyTorch's post-training static quantization of a copy of m:
    fuse_model, prepare with the observers of the docstring, one forward
    pass per image of calibration ([n, 3, 224, 224], one at a time as the
    .lpu entry runs them: MinMax does not care), convert."""
    from torch.ao.quantization import MinMaxObserver, PerChannelMinMaxObserver, QConfig
    torch.backends.quantized.engine = ENGINE
    q = copy.deepcopy(m).eval()
    q.fuse_model(is_qat=False)
    q.qconfig = QConfig(
        activation=MinMaxObserver.with_args(dtype=torch.quint8, reduce_range=True),
        weight=PerChannelMinMaxObserver.with_args(dtype=torch.qint8, qscheme=torch.per_channel_symmetric))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reduce_range's deprecation
        torch.ao.quantization.prepare(q, inplace=True)
    with torch.no_grad():
        for x in calibration:
            q(torch.from_numpy(x[None].astype(np.float32)))
    torch.ao.quantization.convert(q, inplace=True)
    return q


def grid(mod):
    """A quantized module's output (scale, zero point) as f32[] and i8[];
    the integers torch holds, quint8 in [0, 127], are then the i8's."""
    scale, zero = float(mod.scale), int(mod.zero_point)
    if not 0 <= zero <= 127:
        raise SystemExit(f"zero point {zero} outside [0, 127]: not an i8's")
    return np.array(scale, np.float32), np.array(zero, np.int8)


def activation_params(q):
    """resnet50_int8.lpu's activation parameters (x_scale, x_zero, the
    FakeQuants' scale and zero) from a converted model (docstring's
    table). A QConvNorm's input must have zero point 0 (relu's)."""
    out = {}

    def x_scale(name, g):
        if int(g[1]) != 0:
            raise SystemExit(f"{name}: input zero point {int(g[1])}, QConvNorm takes 0")
        out[f"{name}.x_scale"] = g[0]

    out["stem.x_scale"], out["stem.x_zero"] = grid(q.quant)
    prev = grid(q.conv1)
    for p, b in blocks(q):
        x_scale(f"{p}.conv1", prev)
        x_scale(f"{p}.conv2", grid(b.conv1))
        x_scale(f"{p}.conv3", grid(b.conv2))
        out[f"{p}.out3.scale"], out[f"{p}.out3.zero"] = grid(b.conv3)
        if b.downsample is not None:
            x_scale(f"{p}.downsample", prev)
            out[f"{p}.out_down.scale"], out[f"{p}.out_down.zero"] = grid(b.downsample[0])
        prev = grid(b.skip_add_relu)
        if int(prev[1]) != 0:
            raise SystemExit(f"{p}: the sum's zero point {int(prev[1])}, FakeQuant takes 0")
        out[f"{p}.out.scale"] = prev[0]
    out["fc.x_scale"], out["fc.x_zero"] = prev
    return out


def weight_params(q):
    """resnet50_int8.lpu's w, w_scale and b from a converted model: the
    int8 weights torch multiplies, their per-channel scales and the float
    biases (batch norms folded by fuse_model); fc.w transposed to [I, O]."""
    out = {}

    def put(name, mod, transpose=False):
        w = mod.weight()
        if w.q_per_channel_zero_points().abs().max() != 0:
            raise SystemExit(f"{name}: weights not symmetric")
        iw = w.int_repr().numpy()
        out[f"{name}.w"] = np.ascontiguousarray(iw.T if transpose else iw).astype(np.int8)
        out[f"{name}.w_scale"] = w.q_per_channel_scales().numpy().astype(np.float32)
        out[f"{name}.b"] = mod.bias().detach().numpy().astype(np.float32)

    put("stem", q.conv1)
    for p, b in blocks(q):
        for k in (1, 2, 3):
            put(f"{p}.conv{k}", getattr(b, f"conv{k}"))
        if b.downsample is not None:
            put(f"{p}.downsample", b.downsample[0])
    put("fc", q.fc, transpose=True)
    return out


# resnet50_int8.lpu's arithmetic transcribed from docs/language.md
# ("Quantization") and std.nn, in PyTorch: integer sums exact in float64,
# the f32 and f16 roundings where the .lpu has them. It gives lpurun's
# logits bit for bit, and run on torch's own int8 tensors it shows, layer
# by layer, that our parameters are torch's (int8_layers).

def _quantize(x, scale, zero=0):
    """quantize(x, scale, zero): f32 division, ties to even, clipped."""
    v = x.float() / torch.tensor(float(scale), dtype=torch.float32)
    return torch.clamp(torch.round(v).double() + int(zero), -128, 127)


def _dequantize16(q, scale, zero=0):
    """f16(dequantize(q, scale, zero)) (FakeQuant's way back)."""
    return ((q - int(zero)).float() * torch.tensor(float(scale), dtype=torch.float32)).half()


def _relu16(x):
    return torch.relu(x.float()).half()


def _qconv(p, name, x, stride=1, padding=0):
    """QConvNorm (QConvNormZ when p has name.x_zero) of f16 x -> f16."""
    import torch.nn.functional as F
    zero = int(p.get(f"{name}.x_zero", 0))
    q = _quantize(x, p[f"{name}.x_scale"], zero)
    w = torch.from_numpy(p[f"{name}.w"].astype(np.float64))
    sums = F.conv2d(q, w, stride=stride, padding=padding)
    if zero:
        sums = sums - zero * F.conv2d(torch.ones_like(q), w, stride=stride, padding=padding)
    scale = torch.from_numpy(np.float32(p[f"{name}.x_scale"]) * p[f"{name}.w_scale"]).view(1, -1, 1, 1)
    return (sums.float() * scale + torch.from_numpy(p[f"{name}.b"]).view(1, -1, 1, 1)).half()


def _fake_quant(p, name, x):
    zero = p.get(f"{name}.zero", 0)  # FakeQuantZ has one, FakeQuant 0
    q = _quantize(x, p[f"{name}.scale"], zero)
    return _dequantize16(q, p[f"{name}.scale"], zero), q


def _block(p, name, b, x, forced=None):
    """One QBottleneck or QDownBottleneck (b: the torch block, for its
    strides). With forced (torch's tensors, f16), each layer takes torch's
    input instead of ours; returns the output and each checked layer's
    integers."""
    f = forced or {}
    s = b.conv2.stride[0]
    h1 = _relu16(_qconv(p, f"{name}.conv1", x))
    h2 = _relu16(_qconv(p, f"{name}.conv2", f.get("conv1", h1), s, 1))
    y, q3 = _fake_quant(p, f"{name}.out3", _qconv(p, f"{name}.conv3", f.get("conv2", h2)))
    ints = {"conv1": _quantize(h1, p[f"{name}.conv2.x_scale"]),
            "conv2": _quantize(h2, p[f"{name}.conv3.x_scale"]), "conv3": q3}
    if b.downsample is not None:
        ident, ints["downsample"] = _fake_quant(
            p, f"{name}.out_down", _qconv(p, f"{name}.downsample", x, b.downsample[0].stride[0]))
    else:
        ident = x
    y, ints["out"] = _fake_quant(p, f"{name}.out", _relu16(f.get("conv3", y) + f.get("downsample", ident)))
    return y, ints


def int8_forward(p, q, x):
    """resnet50_int8.lpu's classify on x (f16 [1, 3, 224, 224] numpy)
    with parameters p; q is a converted torch model (for the strides).
    Returns the logits [1, 1000] (f32 of f16 values)."""
    import torch.nn.functional as F
    h = _relu16(_qconv(p, "stem", torch.from_numpy(x), 2, 3))
    h = F.max_pool2d(h.float(), 3, 2, 1).half()
    for name, b in blocks(q):
        h, _ = _block(p, name, b, h)
    # mean(f32(h), axis = [2, 3]) as the reference interpreter sums
    # (docs/reference-interpreter.md): one f32 accumulator, the elements in
    # row-major order, then the division by the count in f32.
    flat = h.float().flatten(2)
    acc = torch.zeros(flat.shape[:2], dtype=torch.float32)
    for i in range(flat.shape[2]):
        acc = acc + flat[:, :, i]
    pooled = (acc / torch.tensor(float(flat.shape[2]), dtype=torch.float32)).half()
    zero = int(p["fc.x_zero"])
    qx = _quantize(pooled, p["fc.x_scale"], zero)
    w = torch.from_numpy(p["fc.w"].astype(np.float64))
    sums = qx @ w - zero * w.sum(dim=0)
    scale = torch.from_numpy(np.float32(p["fc.x_scale"]) * p["fc.w_scale"])
    return (sums.float() * scale + torch.from_numpy(p["fc.b"])).half().float()


def int8_layers(p, q, x):
    """Each int8 tensor of torch's converted model q on x against ours
    computed from torch's own inputs to that layer: [(name, differing,
    total, largest |difference|, integers past [0, 127])]. Torch observed
    the float model, so its int8 model's integers may leave the calibrated
    [0, 127] a little: its quint8 goes on past 127 where an i8 stops, and
    stops at 0 where an i8 goes on; both sides are clipped to [0, 127]
    before comparing, and how many integers were past it is counted.
    The input's row ("quant") counts differences only where x / scale is
    not at a tie; the second result is how many were (see below).
    Returns (rows, ties)."""
    seen = {}

    def keep(name):
        return lambda mod, i, o: seen.__setitem__(name, (i[0], o))

    hooks = [q.quant.register_forward_hook(keep("quant")), q.conv1.register_forward_hook(keep("stem"))]
    for name, b in blocks(q):
        hooks.append(b.register_forward_hook(keep(name)))
        for k in ("conv1", "conv2", "conv3"):
            hooks.append(getattr(b, k).register_forward_hook(keep(f"{name}.{k}")))
        if b.downsample is not None:
            hooks.append(b.downsample[0].register_forward_hook(keep(f"{name}.downsample")))
    with torch.no_grad():
        q(torch.from_numpy(x.astype(np.float32)))
    for h in hooks:
        h.remove()
    rows = []

    def compare(name, ours, theirs):
        t = theirs.int_repr().double()
        d = (ours.clamp(0, 127) - t.clamp(max=127)).abs()
        past = int((t > 127).sum() + (ours < 0).sum())
        rows.append((name, int((d != 0).sum()), d.numel(), int(d.max()), past))

    def f16(t):
        return t.dequantize().half()

    # The input: torch multiplies by 1/scale where quantize divides, so
    # the two round apart where x / scale is within an f32 rounding of a
    # tie (with images of flat colour, a whole square at once); any other
    # difference counts.
    xs = torch.from_numpy(x)
    ours = _quantize(xs, p["stem.x_scale"], p["stem.x_zero"])
    theirs = seen["quant"][1].int_repr().double()
    v = xs.double() / float(p["stem.x_scale"])
    tie = (v - torch.floor(v) - 0.5).abs() < 1e-5
    ties = int(((ours != theirs) & tie).sum())
    d = (ours - theirs).abs() * ~tie
    rows.append(("quant", int((d != 0).sum()), d.numel(), int((ours - theirs).abs().max()), 0))
    stem = _relu16(_qconv(p, "stem", f16(seen["quant"][1]), 2, 3))
    compare("stem", _quantize(stem, p["layer1.first.conv1.x_scale"]), seen["stem"][1])
    with torch.no_grad():
        for name, b in blocks(q):
            forced = {k: f16(seen[f"{name}.{k}"][1]) for k in ("conv1", "conv2", "conv3", "downsample")
                      if f"{name}.{k}" in seen}
            _, ints = _block(p, name, b, f16(seen[name][0]), forced)
            for k, v in ints.items():
                compare(f"{name}.{k}", v, seen[name][1] if k == "out" else seen[f"{name}.{k}"][1])
    return rows, ties

"""Checks `lpuc --stats --json` against figures computed here, independently
of the compiler: parameter counts from the published totals, FLOPs from the
shapes of each model (2 per multiply-add of matmul and convolution, plus the
elementwise work counted as docs/language.md describes).

Usage: expect.py MODEL < stats.json
"""
import json
import sys


def mlp(b, D=784, H=256, C=10):
    # fc1 (matmul, bias), relu, fc2 (matmul, bias), softmax (5 per element)
    return b * (2 * D * H + H + H + 2 * H * C + C + 5 * C)


def resnet50(n):
    total = 0

    def convnorm(c, o, k, s, p, h, w):
        nonlocal total
        oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        total += 2 * n * o * oh * ow * c * k * k  # convolution
        total += 5 * o + 2 * n * o * oh * ow      # batch norm: per channel, then scale and shift
        return oh, ow

    def bottleneck(c, m, s, h, w, down):
        nonlocal total
        h1, w1 = convnorm(c, m, 1, 1, 0, h, w)
        total += n * m * h1 * w1                  # relu
        h2, w2 = convnorm(m, m, 3, s, 1, h1, w1)
        total += n * m * h2 * w2                  # relu
        h3, w3 = convnorm(m, 4 * m, 1, 1, 0, h2, w2)
        if down:
            convnorm(c, 4 * m, 1, s, 0, h, w)
        total += 2 * n * 4 * m * h3 * w3          # residual add, relu
        return h3, w3

    h, w = convnorm(3, 64, 7, 2, 3, 224, 224)
    total += n * 64 * h * w                       # relu
    h, w = (h + 2 - 3) // 2 + 1, (w + 2 - 3) // 2 + 1
    total += n * 64 * h * w * 9                   # max pool 3x3
    c = 64
    for m, blocks, s in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        h, w = bottleneck(c, m, s, h, w, True)
        for _ in range(blocks - 1):
            h, w = bottleneck(4 * m, m, 1, h, w, False)
        c = 4 * m
    total += n * 2048 * h * w                     # mean over H, W
    total += 2 * n * 2048 * 1000 + n * 1000       # fc
    return total


def transformer_matmuls(b, s, L, D, F, H, extra):
    e = D // H
    per_layer = 2 * b * s * D * D * 4 + 2 * 2 * b * H * s * s * e + 2 * 2 * b * s * D * F
    return L * per_layer + extra


def check(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)
    print("ok:", what)


stats = json.load(sys.stdin)
model = sys.argv[1]
for entry in stats["entries"]:
    for bucket in entry["buckets"]:
        sizes, params, flops = bucket["sizes"], bucket["params"], bucket["flops"]
        where = f"{entry['name']} {sizes}"
        if model == "mlp":
            check(params == 784 * 256 + 256 + 256 * 10 + 10, f"{where} params")
            check(flops == mlp(sizes["B"]), f"{where} flops == {mlp(sizes['B'])}")
        elif model == "resnet50":
            check(params == 25_557_032 + 53_120, f"{where} params")
            check(bucket["param_bytes"] == 2 * params, f"{where} f16 bytes")
            check(flops == resnet50(sizes["N"]), f"{where} flops == {resnet50(sizes['N'])}")
        elif model == "bert":
            check(params == 109_482_240, f"{where} params")
            b, s = (1, sizes["S"]) if entry["name"] == "pooled" else (8, 128)
            mm = transformer_matmuls(b, s, 12, 768, 3072, 12,
                                     2 * b * 768 * 768 if entry["name"] == "pooled" else 0)
            # Elementwise work (layer norms, softmax, GELU, residuals) on top.
            check(mm < flops < mm * 1.03, f"{where} flops {flops} within 3% above matmuls {mm}")
        elif model == "gpt2":
            check(params == 124_439_808, f"{where} params")
            s = sizes["S"]
            # c_attn is one D x 3D matmul: the same work as q, k, v.
            mm = transformer_matmuls(1, s, 12, 768, 3072, 12, 2 * s * 768 * 50257)
            check(mm < flops < mm * 1.03, f"{where} flops {flops} within 3% above matmuls {mm}")
print("all figures match")

"""Int8 against f16, predicted cycles from lpuc --report --json (groqchip1):

- one matmul [512, 768] @ [768, 3072] and one 3x3 convolution, 256 -> 256
  channels at 14x14, each in f16 and in i8 (i32 sums): cycles, the physical
  bound (docs/scheduler.md, "The physical bound") and its resource, and
  the ratio;
- GPT-2 small at 64 tokens: examples/gpt2_w8.lpu (int8 weights) on one chip
  next to examples/gpt2.lpu (f16) on two, with the weights' bytes and the
  compile seconds;
- ResNet-50 at N=1: examples/resnet50_int8.lpu (int8 weights and
  activations, std.nn's QConvNorm models) next to examples/resnet50.lpu
  (f16): cycles, images/s at the chip's clock, the physical bound and the
  ratio, and the published figure for the Groq chip, 20,400 images/s
  (Abts et al., ISCA 2020).

usage: int8_bench.py LPUC
"""
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

KERNELS = {
    "matmul 512x768 @ 768x3072": """model M {{
  param w: {t}[768, 3072]
  fn f(x: {t}[512, 768]) -> {o}[512, 3072] {{
    return x @ w
  }}
}}
entry e = M.f
""",
    "conv 3x3 256->256 at 14x14": """model M {{
  param w: {t}[256, 256, 3, 3]
  fn f(x: {t}[1, 256, 14, 14]) -> {o}[1, 256, 14, 14] {{
    return conv2d(x, w, padding = 1)
  }}
}}
entry e = M.f
""",
}


PUBLISHED_IMAGES_PER_S = 20400  # ResNet-50, int8, batch 1 (ISCA 2020)


def report(lpuc, path, flags=(), clock=False):
    start = time.monotonic()
    r = subprocess.run([lpuc, path, "--report", "--json", *flags], capture_output=True, text=True)
    seconds = time.monotonic() - start
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[0] if r.stderr else f"exit {r.returncode}", seconds
    out = json.loads(r.stdout)
    if clock:
        out["buckets"][0]["clock_mhz"] = out["clock_mhz"]
    return out["buckets"][0], None, seconds


def main(lpuc):
    print("# lpuc --report --json, groqchip1; ratio: cycles / physical bound")
    print(f"{'kernel':<30} {'dtype':>5} {'cycles':>9} {'physical':>9} {'resource':>17} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in KERNELS.items():
            for t, o in (("f16", "f16"), ("i8", "i32")):
                path = os.path.join(tmp, f"{t}.lpu")
                with open(path, "w") as f:
                    f.write(text.format(t=t, o=o))
                b, err, _ = report(lpuc, path)
                if b is None:
                    print(f"{name:<30} {t:>5} {err}")
                    continue
                print(f"{name:<30} {t:>5} {b['cycles']:>9} {b['physical_bound']:>9} "
                      f"{b['physical_resource']:>17} {b['cycles'] / b['physical_bound']:>6.2f}")
    print()
    print("# GPT-2 small, 64 tokens: int8 weights on one chip, f16 on two (pipeline)")
    print(f"{'model':<22} {'chips':>5} {'cycles':>9} {'latency us':>10} {'weights MB':>10} {'compile s':>9}")
    for name, path, flags, weights in (
            ("gpt2_w8 (int8 weights)", "gpt2_w8.lpu", (), 164480836),
            ("gpt2 (f16)", "gpt2.lpu", ("--chips", "2", "--bucket", "S=64"), 248879616)):
        b, err, seconds = report(lpuc, os.path.join(ROOT, "examples", path), flags)
        if b is None:
            print(f"{name:<22} {err}")
            continue
        chips = 2 if flags else 1
        print(f"{name:<22} {chips:>5} {b['cycles']:>9} {b['cycles'] / 900:>10.1f} {weights / 1e6:>10.1f} "
              f"{seconds:>9.1f}")

    print()
    print(f"# ResNet-50, N=1; published: {PUBLISHED_IMAGES_PER_S} images/s (ISCA 2020), "
          f"ratio: cycles / physical bound")
    print(f"{'model':<22} {'cycles':>9} {'images/s':>9} {'physical':>9} {'resource':>17} {'ratio':>6} "
          f"{'of published':>12} {'compile s':>9}")
    for name, path, flags in (("resnet50_int8 (int8)", "resnet50_int8.lpu", ()),
                              ("resnet50 (f16)", "resnet50.lpu", ("--bucket", "N=1"))):
        b, err, seconds = report(lpuc, os.path.join(ROOT, "examples", path), flags, clock=True)
        if b is None:
            print(f"{name:<22} {err}")
            continue
        images = b["clock_mhz"] * 1e6 / b["cycles"]
        print(f"{name:<22} {b['cycles']:>9} {images:>9.0f} {b['physical_bound']:>9} "
              f"{b['physical_resource']:>17} {b['cycles'] / b['physical_bound']:>6.2f} "
              f"{images / PUBLISHED_IMAGES_PER_S:>12.2f} {seconds:>9.1f}")


if __name__ == "__main__":
    main(*sys.argv[1:])

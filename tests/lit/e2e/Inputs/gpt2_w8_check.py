"""The weight-only int8 GPT-2 against the f16 one: draws examples/gpt2.lpu's
weights (lpurun --random-weights, written with --dump-weights by its
reference run), quantizes them with examples/quantize_gpt2_w8.py, runs
examples/gpt2_w8.lpu on them in the reference interpreter, and compares
its logits with the f16 model's on the same ids: the same next token at
every position, and the logits within 2% of the largest logit (per-column
symmetric int8 weights carry about 0.4% of a weight's column maximum).

usage: gpt2_w8_check.py EXAMPLES TMPDIR
"""
import os
import subprocess
import sys

import numpy as np


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def main(examples, tmp):
    ids = os.path.join(tmp, "ids.npy")
    np.save(ids, (np.arange(64) * 7919 % 50257).astype(np.int32).reshape(1, 64))
    f16, w8 = os.path.join(tmp, "f16.safetensors"), os.path.join(tmp, "w8.safetensors")
    out16, out8 = os.path.join(tmp, "out16.npy"), os.path.join(tmp, "out8.npy")
    run(["lpurun", "--reference", os.path.join(examples, "gpt2.lpu"), "--random-weights", "1",
         "--dump-weights", f16, "--input", f"ids={ids}", "--output", f"out={out16}", "-q"])
    print(run([sys.executable, os.path.join(examples, "quantize_gpt2_w8.py"), f16, w8]).strip()
          .replace(tmp + "/", ""))
    run(["lpurun", "--reference", os.path.join(examples, "gpt2_w8.lpu"), "--weights", w8,
         "--input", f"ids={ids}", "--output", f"out={out8}", "-q"])
    a = np.load(out16).astype(np.float64)
    b = np.load(out8).astype(np.float64)
    if a.shape != b.shape:
        sys.exit(f"logits {b.shape} against {a.shape}")
    same = (a.argmax(-1) == b.argmax(-1)).mean()
    err = np.abs(a - b).max() / np.abs(a).max()
    if same < 1.0 or err > 0.02:
        sys.exit(f"int8 against f16: next token equal at {same:.1%} of positions, "
                 f"largest difference {err:.2%} of the largest logit")
    print(f"int8 against f16: the same next token at every position, logits within {err:.2%} "
          f"of the largest (2% allowed)")


if __name__ == "__main__":
    main(*sys.argv[1:])

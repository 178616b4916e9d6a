"""Packed attention against numpy, not against the reference interpreter:
compiles attention.lpu's `straddle` entry (heads of 100 lanes written out
without std.nn), runs it on the simulator with scaled weights and a random
input, and recomputes it in numpy from the same weights: each projection
and product summed in f32 and rounded to f16 as the IR says, the scores
scaled and the softmax taken in f32, P rounded to f16.

usage: attention_numpy.py ATTENTION_LPU TMPDIR B
"""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_and_compare as rc  # noqa: E402


def main():
    src, tmp, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
    lpx, _ = rc.compile_program(src, tmp, ["--entry", "straddle", "--bucket", f"B={batch}"])
    _, params = rc.program_tensors(lpx, tmp)
    weights = rc.write_scaled_weights(params, f"{tmp}/w.safetensors")
    S, D, H = 80, 600, 6
    rng = np.random.default_rng(7)
    x = rng.standard_normal((batch, S, D)).astype(np.float16)
    np.save(f"{tmp}/x.npy", x)
    subprocess.run(["lpurun", lpx, "--weights", weights, "--input", f"x={tmp}/x.npy",
                    "--output", f"out={tmp}/out.npy"], check=True)
    got = np.load(f"{tmp}/out.npy")

    w = {name: np.frombuffer(rc.scaled_parameter(name, dtype, dims), np.float16).reshape(dims)
         for name, dtype, dims in params}
    f32 = lambda a: a.astype(np.float32)  # noqa: E731

    def heads(m):
        return f32(m).reshape(batch, S, H, D // H).transpose(0, 2, 1, 3)

    q, k, v = (heads((f32(x) @ f32(w[n])).astype(np.float16)) for n in ("wq", "wk", "wv"))
    scores = f32((q @ k.transpose(0, 1, 3, 2)).astype(np.float16)) * np.float32(0.1)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p = f32((e / e.sum(axis=-1, keepdims=True)).astype(np.float16))
    want = (p @ v).astype(np.float16).transpose(0, 2, 1, 3).reshape(batch, S, D)

    if got.shape != want.shape or got.dtype != want.dtype:
        sys.exit(f"simulator gives {got.dtype}{got.shape}, numpy {want.dtype}{want.shape}")
    err = np.abs(f32(got) - f32(want))
    bound = 2e-3 + 1e-2 * np.abs(f32(want))
    if not np.isfinite(got).all() or (err > bound).any():
        i = np.unravel_index(np.argmax(err - bound), err.shape)
        sys.exit(f"straddle (B={batch}): differs from numpy at {i}: {got[i]} vs {want[i]}")
    print(f"straddle (B={batch}): as numpy, largest difference {err.max():.3g} "
          f"on values up to {np.abs(f32(want)).max():.3g}")


if __name__ == "__main__":
    main()

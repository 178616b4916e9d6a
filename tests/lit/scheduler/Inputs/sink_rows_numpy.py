"""sink-rows.lpu against numpy, not against the reference interpreter (which
runs the same sliced IR): compiles ENTRY, runs it on the simulator with
scaled weights and a random input, and recomputes the whole block for every
row in numpy from the same weights (each product summed in f32 and rounded
to f16 as the IR says, the softmax and the norm in f32), then takes the
rows the entry returns. The rows computed alone must be the rows of the
whole computation.

usage: sink_rows_numpy.py SINK_ROWS_LPU TMPDIR ENTRY
"""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_and_compare as rc  # noqa: E402

SHAPES = {"first": (1, 24), "last": (1, 37), "middle": (2, 24)}


def main():
    src, tmp, entry = sys.argv[1], sys.argv[2], sys.argv[3]
    batch, S = SHAPES[entry]
    D = 40
    lpx, _ = rc.compile_program(src, tmp, ["--entry", entry], name=entry)
    _, params = rc.program_tensors(lpx, tmp)
    weights = rc.write_scaled_weights(params, f"{tmp}/{entry}.safetensors")
    rng = np.random.default_rng(11)
    x = rng.standard_normal((batch, S, D)).astype(np.float16)
    np.save(f"{tmp}/{entry}_x.npy", x)
    subprocess.run(["lpurun", lpx, "--weights", weights, "--input", f"x={tmp}/{entry}_x.npy",
                    "--output", f"out={tmp}/{entry}_out.npy"], check=True)
    got = np.load(f"{tmp}/{entry}_out.npy")

    dtypes = {"f16": np.float16, "f32": np.float32}
    w = {name: np.frombuffer(rc.scaled_parameter(name, dtype, dims), dtypes[dtype]).reshape(dims)
         for name, dtype, dims in params}
    f32 = lambda a: a.astype(np.float32)  # noqa: E731
    h16 = lambda a: a.astype(np.float16)  # noqa: E731

    def mm(a, b):
        return h16(f32(a) @ f32(b))

    q, k, v = mm(x, w["wq"]), mm(x, w["wk"]), mm(x, w["wv"])
    s = f32(mm(q, k.transpose(0, 2, 1))) * np.float32(0.125)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    p = h16(e / e.sum(axis=-1, keepdims=True))
    h = h16(f32(x) + f32(mm(mm(p, v), w["wo"])))
    hf = f32(h)
    n = h16(hf / np.sqrt((hf * hf).mean(axis=-1, keepdims=True) + np.float32(1e-5)))
    n = h16(f32(n) * f32(w["gamma"]))
    u = h16(np.maximum(f32(mm(n, w["w1"])) + f32(w["b1"]), 0))
    block = h16(f32(n) + f32(mm(u, w["w2"])))
    if entry == "first":
        want = f32(block[:, 0]) @ f32(w["head"])
    elif entry == "last":
        want = block[:, S - 1]
    else:
        want = block[:, 5:7]

    if got.shape != want.shape or got.dtype != want.dtype:
        sys.exit(f"simulator gives {got.dtype}{got.shape}, numpy {want.dtype}{want.shape}")
    err = np.abs(f32(got) - f32(want))
    bound = 5e-3 + 1e-2 * np.abs(f32(want))
    if not np.isfinite(got).all() or (err > bound).any():
        i = np.unravel_index(np.argmax(err - bound), err.shape)
        sys.exit(f"{entry}: differs from numpy at {i}: {got[i]} vs {want[i]}")
    print(f"{entry}: as numpy, largest difference {err.max():.3g} "
          f"on values up to {np.abs(f32(want)).max():.3g}")


if __name__ == "__main__":
    main()

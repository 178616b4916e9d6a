"""Weights for bench/llama_decode.lpu's int8 Llama (W8 blocks) in ranges
where every layer's activations quantize to more than zeros: int8 weights
over their whole range with per-column scales of 1 / (127 sqrt(rows)),
activation scales for a range of +-4, norms' gains 1, rotary tables and
the embedding's scale random.

  int8_llama_weights.py ENTRY OUT.safetensors < `lpuc --emit=params` output
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Inputs"))
import safetensors_np  # noqa: E402

entry, out = sys.argv[1:3]
rng = np.random.default_rng(8)
params, inside = {}, False
for line in sys.stdin:
    if line.startswith("entry "):
        inside = line.split()[1].rstrip(":") == entry
        continue
    if not inside or ":" not in line:
        continue
    name, t = (x.strip() for x in line.split(":", 1))
    dtype, _, dims = t.partition("[")  # a scalar has no brackets
    params[name] = (dtype, [int(d) for d in dims.rstrip("]").split(",") if d.strip()])
assert params, f"no parameters for entry {entry}"
tensors = {}
for name, (dtype, shape) in params.items():
    leaf = name.split(".")[-1]
    if dtype == "i8":
        tensors[name] = rng.integers(-127, 128, shape).astype(np.int8)
    elif leaf == "w_scale":
        rows = params[name[: -len("w_scale")] + "w"][1][0]
        tensors[name] = np.full(shape, 1 / (127 * np.sqrt(rows)), np.float32)
    elif leaf == "x_scale":
        tensors[name] = np.full(shape, 4 / 127, np.float32)
    elif leaf == "embed_scale":
        tensors[name] = rng.uniform(0.005, 0.01, shape).astype(np.float32)
    elif leaf == "g":
        tensors[name] = np.ones(shape, np.float16)
    else:
        tensors[name] = rng.uniform(-1, 1, shape).astype(np.float16 if dtype == "f16" else np.float32)
safetensors_np.write(out, tensors)
print(f"{len(tensors)} tensors")

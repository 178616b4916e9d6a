"""f16 .safetensors files for the multichip tests' numpy checks: read and
write a dict of name -> array (every tensor f16, no metadata)."""
import json
import struct

import numpy as np


def write_safetensors(path, tensors):
    header, data = {}, b""
    for key, value in tensors.items():
        raw = value.astype(np.float16).tobytes()
        header[key] = {"dtype": "F16", "shape": list(value.shape),
                       "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def read_safetensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    out = {}
    for key, info in header.items():
        if key == "__metadata__":
            continue
        assert info["dtype"] == "F16", info
        a, b = info["data_offsets"]
        out[key] = np.frombuffer(raw[8 + n + a:8 + n + b], np.float16).reshape(info["shape"])
    return out

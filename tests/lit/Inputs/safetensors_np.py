"""Safetensors files as dicts of NumPy arrays, for the tests' scripts (a
script in tests/lit/X/Inputs imports it after
`sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Inputs"))`)."""
import json
import struct

import numpy as np

DTYPES = {"F16": np.float16, "F32": np.float32, "I32": np.int32, "I8": np.int8, "BOOL": np.bool_}


def read(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
    return out


def write(path, tensors):
    names = {v: k for k, v in DTYPES.items()}
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        data = np.ascontiguousarray(a).tobytes()
        header[name] = {"dtype": names[a.dtype.type], "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    h = json.dumps(header).encode()
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))

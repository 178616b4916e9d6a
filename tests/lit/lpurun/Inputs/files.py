#!/usr/bin/env python3
"""Makes the files the lpurun tests need.
  files.py safetensors OUT NAME SHAPE...   f16 weights 0.25, 0.5, ... (by index)
  files.py truncate IN OUT BYTES           the first BYTES bytes of IN
  files.py flip IN OUT OFFSET              IN with one byte changed
  files.py version IN OUT N                IN with format version N"""
import json, struct, sys
import numpy as np

cmd = sys.argv[1]
if cmd == "safetensors":
    out, name = sys.argv[2], sys.argv[3]
    shape = [int(s) for s in sys.argv[4:]]
    data = (np.arange(int(np.prod(shape))) % 8 * 0.25).astype(np.float16).tobytes()
    header = json.dumps({name: {"dtype": "F16", "shape": shape, "data_offsets": [0, len(data)]}}).encode()
    open(out, "wb").write(struct.pack("<Q", len(header)) + header + data)
else:
    data = bytearray(open(sys.argv[2], "rb").read())
    out = sys.argv[3]
    if cmd == "truncate":
        data = data[:int(sys.argv[4])]
    elif cmd == "flip":
        data[int(sys.argv[4])] ^= 0x40
    elif cmd == "version":
        data[8:12] = struct.pack("<I", int(sys.argv[4]))
    open(out, "wb").write(bytes(data))

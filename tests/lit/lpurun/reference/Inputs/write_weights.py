"""Writes a .safetensors file by hand (8-byte header length, JSON header,
raw data): write_weights.py OUT NAME=DTYPE:DIM[xDIM...]=[VALUE,...] ...
Values default to 0.5 + index / 4."""
import json
import struct
import sys

import numpy as np

kinds = {'f16': ('F16', np.float16), 'f32': ('F32', np.float32), 'i32': ('I32', np.int32)}
header, blobs, offset = {}, [], 0
for spec in sys.argv[2:]:
    name, rest = spec.split('=', 1)
    kind, _, values = rest.partition('=')
    dtype, dims = kind.split(':')
    shape = [int(d) for d in dims.split('x')]
    count = int(np.prod(shape))
    data = ([float(v) for v in values.split(',')] if values
            else [0.5 + i / 4 for i in range(count)])
    blob = np.array(data, dtype=kinds[dtype][1]).reshape(shape).tobytes()
    header[name] = {'dtype': kinds[dtype][0], 'shape': shape,
                    'data_offsets': [offset, offset + len(blob)]}
    blobs.append(blob)
    offset += len(blob)
text = json.dumps(header).encode()
with open(sys.argv[1], 'wb') as f:
    f.write(struct.pack('<Q', len(text)) + text + b''.join(blobs))

#!/usr/bin/env python3
"""Makes the files the lpurun tests need.
  files.py safetensors OUT NAME SHAPE...   f16 weights 0.25, 0.5, ... (by index)
  files.py truncate IN OUT BYTES           the first BYTES bytes of IN
  files.py flip IN OUT OFFSET              IN with one byte changed
  files.py version IN OUT N                IN with format version N
  files.py stateflag IN OTHER OUT VALUE    IN with the one payload byte where
                                           OTHER differs set to VALUE, and the
                                           checksum made right again"""
import json, struct, sys
import numpy as np

M = 2**64 - 1
P1, P2, P3 = 11400714785074694791, 14029467366897019727, 1609587929392839161
P4, P5 = 9650029242287828579, 2870177450012600261


def xxh64(data, seed=0):
    """xxHash64, as the program file's header holds it."""
    rotl = lambda x, r: ((x << r) | (x >> (64 - r))) & M
    rnd = lambda acc, v: (rotl((acc + v * P2) & M, 31) * P1) & M
    u64 = lambda i: struct.unpack_from("<Q", data, i)[0]
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + P1 + P2) & M, (seed + P2) & M, seed, (seed - P1) & M]
        while i + 32 <= n:
            v = [rnd(v[k], u64(i + 8 * k)) for k in range(4)]
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M
        for x in v:
            h = ((h ^ rnd(0, x)) * P1 + P4) & M
    else:
        h = (seed + P5) & M
    h = (h + n) & M
    while i + 8 <= n:
        h = (rotl(h ^ rnd(0, u64(i)), 27) * P1 + P4) & M
        i += 8
    if i + 4 <= n:
        h = (rotl(h ^ ((struct.unpack_from("<I", data, i)[0] * P1) & M), 23) * P2 + P3) & M
        i += 4
    while i < n:
        h = (rotl(h ^ ((data[i] * P5) & M), 11) * P1) & M
        i += 1
    h ^= h >> 33
    h = (h * P2) & M
    h ^= h >> 29
    h = (h * P3) & M
    return h ^ (h >> 32)


cmd = sys.argv[1]
if cmd == "safetensors":
    out, name = sys.argv[2], sys.argv[3]
    shape = [int(s) for s in sys.argv[4:]]
    data = (np.arange(int(np.prod(shape))) % 8 * 0.25).astype(np.float16).tobytes()
    header = json.dumps({name: {"dtype": "F16", "shape": shape, "data_offsets": [0, len(data)]}}).encode()
    open(out, "wb").write(struct.pack("<Q", len(header)) + header + data)
elif cmd == "stateflag":
    data = bytearray(open(sys.argv[2], "rb").read())
    other = open(sys.argv[3], "rb").read()
    assert struct.unpack_from("<Q", data, 24)[0] == xxh64(bytes(data[32:])), "checksum"
    diff = [i for i in range(32, len(data)) if data[i] != other[i]]
    assert len(diff) == 1 and len(data) == len(other), diff
    data[diff[0]] = int(sys.argv[5])
    struct.pack_into("<Q", data, 24, xxh64(bytes(data[32:])))
    open(sys.argv[4], "wb").write(bytes(data))
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

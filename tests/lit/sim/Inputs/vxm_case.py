#!/usr/bin/env python3
"""Prints a one-instruction VXM program: x (and y) read from MEM, OP on the
VXM, the result written back to MEM. Every cycle is computed from the
groqchip1 latencies below, the way docs/isa.md describes the timing.
usage: vxm_case.py OP DTYPE [DTYPE2]    (DTYPE2: cvt's target)
select also reads the bool condition c."""
import sys

LAT = {"copy": 1, "neg": 1, "abs": 1, "relu": 1, "add": 2, "sub": 2, "mul": 3, "max": 2,
       "min": 2, "cvt": 2, "tanh": 8, "exp": 8, "rsqrt": 8, "not": 1, "and": 1, "or": 1,
       "select": 2, "cvt.trunc": 2, "log": 8, "sqrt": 8, "sigmoid": 8, "silu": 8, "gelu": 8,
       "gelu_tanh": 8, "softplus": 8, "div": 8, "rem": 8, "pow": 8}
WIDTH = {"bool": 1, "i8": 1, "i16": 2, "i32": 4, "f16": 2, "bf16": 2, "f32": 4}
UNARY = {"copy", "neg", "abs", "relu", "tanh", "exp", "rsqrt", "cvt", "cvt.trunc", "not", "log",
         "sqrt", "sigmoid", "silu", "gelu", "gelu_tanh", "softplus"}

op, dt = sys.argv[1], sys.argv[2]
dt2 = sys.argv[3] if len(sys.argv) > 3 else None
lat = 2 if op.startswith("cmp.") else LAT[op]
w = WIDTH[dt]
wo = 1 if op.startswith("cmp.") else WIDTH[dt2] if dt2 else w
out_dt = "bool" if op.startswith("cmp.") else dt2 or dt
T = 50  # the cycle the VXM issues
lines = ["lpu-program 1", "target groqchip1", "topology single 1", "entry main", "bucket"]
x_slices = list(range(40, 40 + w))
y_slices = list(range(36, 36 + w))
z_slices = list(range(44, 44 + wo))
c_slice = 30
lines.append(f"tensor input x {dt} [320] chip 0 slices {','.join(map(str, x_slices))} addr 0")
if op not in UNARY:
    lines.append(f"tensor input y {dt} [320] chip 0 slices {','.join(map(str, y_slices))} addr 0")
if op == "select":
    lines.append(f"tensor input c bool [320] chip 0 slices {c_slice} addr 0")
lines.append(f"tensor output z {out_dt} [320] chip 0 slices {','.join(map(str, z_slices))} addr 0")
lines.append("chip 0")
# A west slice s sits at position s + 2; the VXM at 46. A read emits two
# cycles after issue and the vector moves one position per cycle.
for b, s in enumerate(x_slices):
    lines += [f"queue mem{s}", f"  nop {T - 46 + s}", f"  read s{s} @0 -> e{b}"]
if op not in UNARY:
    for b, s in enumerate(y_slices):
        lines += [f"queue mem{s}", f"  nop {T - 46 + s}", f"  read s{s} @0 -> e{4 + b}"]
if op == "select":
    lines += [f"queue mem{c_slice}", f"  nop {T - 46 + c_slice}", f"  read s{c_slice} @0 -> e12"]
if op.startswith("cvt"):
    instr = f"{op} {dt} {dt2} e0 -> e8"
elif op == "select":
    instr = f"select {dt} e12 e0 e4 -> e8"
elif op in UNARY:
    instr = f"{op} {dt} e0 -> e8"
else:
    instr = f"{op} {dt} e0 e4 -> e8"
lines += ["queue vxm0", f"  nop {T}", f"  {instr}"]
# East slice 44 + b sits at position 47 + b.
for b, s in enumerate(z_slices):
    lines += [f"queue mem{s}", f"  nop {T + lat + 1 + b}", f"  write e{8 + b} s{s} @0"]
print("\n".join(lines))

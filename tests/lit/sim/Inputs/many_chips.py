#!/usr/bin/env python3
"""Prints a program for dragonfly:N (8N chips): every chip sends a vector to
the next chip of its node on local link 0 (arriving on that chip's link 6),
and chip 0 of node 0 also sends to node 1 on global link 7 (chip 8's link 7
when N = 2, see backend/Topology.h). usage: many_chips.py N"""
import sys

nodes = int(sys.argv[1])
out = ["lpu-program 1", "target groqchip1", f"topology dragonfly:{nodes} {8 * nodes}",
       "entry main", "bucket"]
for c in range(8 * nodes):
    out.append(f"chip {c}")
    # Slice 0 (position 2) read in cycle 1: at the links (position 1) in 4.
    out += ["queue mem0", "  nop 1", "  read s0 @0 -> w0",
            "queue c2c0", "  nop 4", "  send i8 l0 w0",
            # Arrives 4 + 21 + 216 = 241; lands in slice 0 two cycles later.
            "queue c2c6", "  nop 241", "  recv i8 l6 -> e0",
            "queue mem1", "  nop 243", "  write e0 s0 @1"]
    if nodes == 2 and c == 0:
        out += ["queue c2c7", "  nop 4", "  send i8 l7 w0"]
    if nodes == 2 and c == 8:
        out += ["queue c2c7", "  nop 300", "  recv i8 l7 -> e1",
                "queue mem2", "  nop 302", "  write e1 s0 @2"]
print("\n".join(out))

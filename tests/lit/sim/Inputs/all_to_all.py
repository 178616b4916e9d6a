#!/usr/bin/env python3
"""Every chip of a node sends its vector x<c> (i8, slice 0) over each of its
7 local links in one cycle and receives on each of them: y<c>_<j> is what
chip c received on link j, written to slice j + 1.
  all_to_all.py program        prints the program (text form)
  all_to_all.py run DIR OUT FLAGS...
                               runs lpurun on DIR/p.lpuasm with DIR's inputs,
                               the outputs into OUT
  all_to_all.py check DIR OUT  checks y<c>_<j> == x<(c + j + 1) mod 8>, the
                               far end of link j of chip c (docs/isa.md)
  all_to_all.py cycles REPORT  checks lpurun --report=text's cycles"""
import sys

CHIPS, LINKS = 8, 7
HOP, WIRE = 216, 21  # groqchip1: c2c_hop_cycles, c2c_cycles_per_vector
SEND = 4  # slice 0 (position 2) read in cycle 1 is at the links (1) in 4
ARRIVAL = SEND + WIRE + HOP
mode = sys.argv[1]
if mode == "program":
    out = ["lpu-program 1", "target groqchip1", "topology node 8", "entry main", "bucket"]
    for c in range(CHIPS):
        out.append(f"tensor input x{c} i8 [320] chip {c} slices 0 addr 0")
        for j in range(LINKS):
            out.append(f"tensor output y{c}_{j} i8 [320] chip {c} slices {j + 1} addr 0")
    for c in range(CHIPS):
        out += [f"chip {c}", "queue mem0", "  nop 1", "  read s0 @0 -> w0"]
        for j in range(LINKS):
            out += [f"queue c2c{j}", f"  nop {SEND}", f"  send i8 l{j} w0",
                    f"  nop {ARRIVAL - SEND - 1}", f"  recv i8 l{j} -> e{j}",
                    # e<j> leaves the links (1) in arrival + 1; slice j + 1
                    # is at position j + 3.
                    f"queue mem{j + 1}", f"  nop {ARRIVAL + 1 + j + 2}",
                    f"  write e{j} s{j + 1} @0"]
    print("\n".join(out))
elif mode == "run":
    import subprocess
    d, o = sys.argv[2], sys.argv[3]
    args = ([f"--input=x{c}={d}/x{c}.npy" for c in range(CHIPS)] +
            [f"--output=y{c}_{j}={o}/y{c}_{j}.npy" for c in range(CHIPS) for j in range(LINKS)])
    sys.exit(subprocess.run(["lpurun", f"{d}/p.lpuasm", *args, *sys.argv[4:]]).returncode)
elif mode == "make":
    import numpy as np
    r = np.random.default_rng(8)
    for c in range(CHIPS):
        np.save(f"{sys.argv[2]}/x{c}.npy", r.integers(-128, 128, 320).astype(np.int8))
elif mode == "check":
    import numpy as np
    d, o = sys.argv[2], sys.argv[3]
    x = [np.load(f"{d}/x{c}.npy") for c in range(CHIPS)]
    for c in range(CHIPS):
        for j in range(LINKS):
            y = np.load(f"{o}/y{c}_{j}.npy")
            assert np.array_equal(y, x[(c + j + 1) % CHIPS]), f"chip {c} link {j}"
    print(f"{CHIPS * LINKS} links carried their far end's vector")
elif mode == "cycles":
    import re
    got = int(re.search(r"cycles: (\d+)", open(sys.argv[2]).read()).group(1))
    # The last write (slice 7) issues in ARRIVAL + 1 + 6 + 2 and lands a
    # cycle later (write latency 1); cycles count from 0.
    want = ARRIVAL + 1 + (LINKS - 1) + 2 + 1 + 1
    assert got == want, f"lpurun counts {got} cycles, the rules give {want}"
    print("cycles as the timing rules give")

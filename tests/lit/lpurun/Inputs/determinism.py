#!/usr/bin/env python3
"""Runs one matmul program 10 times on 1 thread and once each on 2 and 4
threads, full and timing-only: every run must give the same output bytes
and the same report. usage: determinism.py SRC_ROOT"""
import os, subprocess, sys, tempfile
import numpy as np

src = sys.argv[1]
with tempfile.TemporaryDirectory() as d:
    subprocess.run([sys.executable, f"{src}/bench/sim_matmul_gen.py", "40", "400", "700",
                    "-o", f"{d}/mm.lpuasm"], check=True)
    rng = np.random.default_rng(4)
    args = []
    for t in range(2):
        np.save(f"{d}/A{t}.npy", rng.uniform(-1, 1, (40, 320)).astype(np.float16))
        args.append(f"--input=A{t}={d}/A{t}.npy")
    for j in range(3):
        np.save(f"{d}/B{j}.npy", rng.uniform(-1, 1, (400, 320)).astype(np.float16))
        args.append(f"--input=B{j}={d}/B{j}.npy")
    outs = set()
    for run, threads in enumerate([1] * 10 + [2, 4]):
        o = f"{d}/C{run}.npy"
        report = subprocess.run(["lpurun", f"{d}/mm.lpuasm", "--report=json", f"--threads={threads}",
                                 f"--output=C1={o}"] + args, check=True, capture_output=True,
                                text=True).stdout
        # Everything but the host's own time must match.
        report = "\n".join(l for l in report.splitlines() if "host_run_seconds" not in l)
        outs.add((open(o, "rb").read(), report))
    assert len(outs) == 1, f"{len(outs)} different results"
    timing = subprocess.run(["lpurun", f"{d}/mm.lpuasm", "--report=json", "--timing-only"],
                            check=True, capture_output=True, text=True).stdout
    cycles = [l for l in report.splitlines() if '"cycles"' in l]
    assert cycles == [l for l in timing.splitlines() if '"cycles"' in l], (cycles, timing)
    print("12 runs identical;", cycles[0].strip(), "also in timing-only mode")

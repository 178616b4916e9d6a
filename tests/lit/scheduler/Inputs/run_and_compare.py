"""Compiles a .lpu, runs every listed entry on the simulator and in the
reference interpreter with the same random inputs and weights, and checks:
  - the outputs agree: bit for bit (--exact), or within the matmul tolerance
    below;
  - the simulator's cycle count equals lpuc's prediction (--report --json).

Matmul tolerance: the MXM adds the K products in ascending k in fp32 and the
interpreter uses sgemm's blocked order, so the fp32 sums may differ in their
last bits, and the f16 result (and what is computed from it) by one rounding
step: |sim - ref| <= 2 ulp_f16(|ref|) + 2e-3 (the absolute term covers sums
that cancel to near zero, where the fp32 order error of K products of size
~1 dominates the tiny ulp).

usage: run_and_compare.py LPU TMPDIR [--exact] ENTRY:NAME=SHAPE[,NAME=SHAPE...] ...
SHAPE is dtype x dims, e.g. f16x4x320.
"""
import json
import subprocess
import sys

import numpy as np


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def main():
    src, tmp = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    exact = "--exact" in args
    args = [a for a in args if a != "--exact"]
    lpx = f"{tmp}/prog.lpx"
    run(["lpuc", src, "-o", lpx])
    predicted = json.loads(run(["lpuc", src, "--report", "--json"]))
    rng = np.random.default_rng(11)
    for spec in args:
        entry, inputs = spec.split(":")
        flags = []
        for item in inputs.split(","):
            name, shape = item.split("=")
            dtype, *dims = shape.split("x")
            x = rng.standard_normal([int(d) for d in dims]).astype(dtype)
            np.save(f"{tmp}/{entry}_{name}.npy", x)
            flags.append(f"--input={name}={tmp}/{entry}_{name}.npy")
        sim = run(["lpurun", lpx, "--entry", entry, "--random-weights", "5",
                   f"--output=out={tmp}/{entry}_sim.npy", "--report=json"] + flags)
        run(["lpurun", "--reference", src, "--entry", entry, "--random-weights", "5",
             f"--output=out={tmp}/{entry}_ref.npy"] + flags)
        report = json.loads(sim[sim.index("{"):])
        cycles = report["cycles"]
        # The bucket lpurun chose (the smallest that holds the inputs).
        dims = report["bucket_dims"]
        bucket = [b for b in predicted["buckets"] if b["entry"] == entry and
                  " ".join(f"{k}={v}" for k, v in b["bucket"].items()) == dims]
        assert len(bucket) == 1, bucket
        if cycles != bucket[0]["cycles"]:
            sys.exit(f"{entry}: simulated {cycles} cycles, lpuc predicted {bucket[0]['cycles']}")
        a = np.load(f"{tmp}/{entry}_sim.npy")
        b = np.load(f"{tmp}/{entry}_ref.npy")
        if a.shape != b.shape or a.dtype != b.dtype:
            sys.exit(f"{entry}: simulator gives {a.dtype}{a.shape}, reference {b.dtype}{b.shape}")
        if exact:
            if a.tobytes() != b.tobytes():
                bad = np.argwhere(a != b)
                sys.exit(f"{entry}: {len(bad)} elements differ, first at {bad[0]}: {a[tuple(bad[0])]} vs {b[tuple(bad[0])]}")
            how = "bit-exact"
        else:
            af, bf = a.astype(np.float32), b.astype(np.float32)
            tol = 2 * np.spacing(np.abs(b).astype(np.float16)).astype(np.float32) + 2e-3
            over = np.abs(af - bf) > tol
            if over.any():
                i = tuple(np.argwhere(over)[0])
                sys.exit(f"{entry}: {over.sum()} elements outside the tolerance, first at {i}: {af[i]} vs {bf[i]}")
            how = "within tolerance"
        print(f"{entry} ({dims}): {how}, {cycles} cycles as predicted")


main()

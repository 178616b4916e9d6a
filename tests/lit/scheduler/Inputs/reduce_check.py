"""Compiles a .lpu, runs every listed entry on the simulator and in the
reference interpreter with the same random inputs and weights, and checks:
  - the outputs agree bit for bit (--exact), or within the tolerance of a
    reduction in another order (docs/scheduler.md, "Reductions"):
    |sim - ref| <= atol + rtol * |ref| + ulps * ulp(ref in the result type);
  - the simulator's cycle count equals lpuc's prediction (--report --json).

usage: reduce_check.py LPU TMPDIR [--exact] [--atol A] [--rtol R] [--ulps U]
                       ENTRY[@DIM=N...][:NAME=SHAPE[,NAME=SHAPE...]] ...
SHAPE is dtype x dims, e.g. float16x4x320; @DIM=N picks the entry's bucket.
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
    opts = {"--atol": 0.0, "--rtol": 0.0, "--ulps": 0.0}
    exact = False
    specs = []
    i = 0
    while i < len(args):
        if args[i] == "--exact":
            exact = True
        elif args[i] in opts:
            opts[args[i]] = float(args[i + 1])
            i += 1
        else:
            specs.append(args[i])
        i += 1
    lpx = f"{tmp}/prog.lpx"
    run(["lpuc", src, "-o", lpx])
    predicted = json.loads(run(["lpuc", src, "--report", "--json"]))
    rng = np.random.default_rng(7)
    for spec in specs:
        entry, _, inputs = spec.partition(":")
        entry, *dims = entry.split("@")  # ENTRY@B=8: the bucket with B = 8
        want = {k: int(v) for k, v in (d.split("=") for d in dims)}
        flags = []
        for item in filter(None, inputs.split(",")):
            name, shape = item.split("=")
            dtype, *dims = shape.split("x")
            x = rng.standard_normal([int(d) for d in dims]).astype(dtype)
            np.save(f"{tmp}/{entry}_{name}.npy", x)
            flags.append(f"--input={name}={tmp}/{entry}_{name}.npy")
        sim = run(["lpurun", lpx, "--entry", entry, "--random-weights", "5",
                   f"--output=out={tmp}/{entry}_sim.npy", "--report=json"] + flags)
        run(["lpurun", "--reference", src, "--entry", entry, "--random-weights", "5",
             f"--output=out={tmp}/{entry}_ref.npy"] + flags)
        cycles = json.loads(sim[sim.index("{"):])["cycles"]
        bucket = [b for b in predicted["buckets"] if b["entry"] == entry and
                  all(b["bucket"].get(k) == v for k, v in want.items())]
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
                sys.exit(f"{entry}: {len(bad)} elements differ, first at {bad[0]}: "
                         f"{a[tuple(bad[0])]} vs {b[tuple(bad[0])]}")
            how = "bit-exact"
        else:
            if not np.isfinite(b).all() or not np.isfinite(a).all():
                sys.exit(f"{entry}: non-finite values")
            af, bf = a.astype(np.float64), b.astype(np.float64)
            ulp = np.spacing(np.abs(b)).astype(np.float64)
            tol = opts["--atol"] + opts["--rtol"] * np.abs(bf) + opts["--ulps"] * ulp
            over = np.abs(af - bf) > tol
            if over.any():
                i = tuple(np.argwhere(over)[0])
                sys.exit(f"{entry}: {over.sum()} elements outside the tolerance, first at {i}: "
                         f"{af[i]} vs {bf[i]}")
            how = "within tolerance"
        print(f"{spec.split(':')[0]}: {how}, {cycles} cycles as predicted")


main()

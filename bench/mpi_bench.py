#!/usr/bin/env python3
"""lpurun over MPI ranks on this host: for an 8-chip and a 64-chip program,
with data (random weights), at 1, 2 and 4 ranks: simulated cycles per host
second, peak resident memory per rank (the largest and the sum), the bytes
one rank sends the others per window (exchange) and in all, and whether
the run's report equals the one-process run's. Figures, not pass/fail.

usage: mpi_bench.py LPUC LPURUN [--ranks 1,2,4] [--keep DIR]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (name, source, lpuc flags, input argument for lpurun)
PROGRAMS = [
    ("bert-base layer, tensor, 8 chips", "bench/bert_layer.lpu",
     ["--chips", "8", "--partition", "tensor"], "x=1x128x768xf16=0.5"),
    ("deep mlp 128 blocks, pipeline, 64 chips", "bench/deep.lpu",
     ["--chips", "64", "--partition", "pipeline"], "x=128x1024xf16=0.5"),
]


def run_ranks(lpurun, program, ranks, input_arg, work):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    stats = os.path.join(work, f"rank-%q.time")
    timed = ["/usr/bin/time", "-f", "%M", "-o"]
    args = [lpurun, program, "--random-weights", "1", "--input", input_arg,
            "--report", "json", "--time-phases", "--threads", "2" if ranks == 1 else "1"]
    if ranks == 1:
        cmd = timed + [os.path.join(work, "rank-0.time")] + args
    else:
        # Each rank under its own /usr/bin/time: OMPI_COMM_WORLD_RANK names its file.
        wrapper = os.path.join(work, "rank.sh")
        with open(wrapper, "w") as f:
            f.write('#!/bin/sh\nexec /usr/bin/time -f %M -o "$RANKDIR/rank-$OMPI_COMM_WORLD_RANK.time" "$@"\n')
        os.chmod(wrapper, 0o755)
        env["RANKDIR"] = work
        cmd = ["mpirun", "-np", str(ranks), wrapper] + args
    for f in os.listdir(work):
        if f.endswith(".time"):
            os.remove(os.path.join(work, f))
    start = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.time() - start
    if p.returncode != 0:
        return {"error": p.stderr.strip().splitlines()[:2]}
    # The outputs print first (no --output), then the report.
    report = json.loads(p.stdout[p.stdout.index("\n{") + 1:] if not p.stdout.startswith("{") else p.stdout)
    simulate = None
    for line in p.stderr.splitlines():
        m = re.match(r"\s*([\d.]+)\s+[\d.]+\s+[\d.]+%\s+simulate$", line)
        if m:
            simulate = float(m.group(1))
    m = re.search(r"sent (\d+) bytes to the others in (\d+) exchanges", p.stderr)
    sent, exchanges = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    peaks = []
    for f in sorted(os.listdir(work)):
        if f.endswith(".time"):
            with open(os.path.join(work, f)) as t:
                peaks.append(int(t.read().strip().splitlines()[-1]) / 1024)
    report.pop("host_run_seconds", None)
    return {"report": report, "cycles": report["cycles"], "wall": wall, "simulate": simulate,
            "peaks": peaks, "sent": sent, "exchanges": exchanges}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lpuc")
    ap.add_argument("lpurun")
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--keep")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="mpi-bench-")
    os.makedirs(work, exist_ok=True)
    print(f"# lpurun over MPI ranks on this host ({os.cpu_count()} cores), data from --random-weights;")
    print("# cycles/s: simulated cycles per second of the 'simulate' phase (rank 0's);")
    print("# peak MB: resident memory of the largest rank, and of all ranks together;")
    print("# bytes/window: what rank 0 sends the others per exchange (one per simulated window)")
    print(f"{'program':42} {'ranks':>5} {'cycles':>9} {'simulate s':>10} {'cycles/s':>10} "
          f"{'peak MB':>8} {'all MB':>8} {'bytes/window':>12} {'exchanges':>9} {'same':>5}")
    for name, source, flags, input_arg in PROGRAMS:
        program = os.path.join(work, os.path.basename(source) + ".lpx")
        c = subprocess.run([args.lpuc, os.path.join(ROOT, source), "-q", "-o", program] + flags,
                           capture_output=True, text=True)
        if c.returncode != 0:
            print(f"{name:42} does not compile: {c.stderr.strip().splitlines()[:1]}")
            continue
        base = None
        for r in [int(x) for x in args.ranks.split(",")]:
            d = os.path.join(work, f"r{r}")
            os.makedirs(d, exist_ok=True)
            got = run_ranks(args.lpurun, program, r, input_arg, d)
            if "error" in got:
                print(f"{name:42} {r:5} failed: {got['error']}")
                continue
            if base is None:
                base = got["report"]
            same = "yes" if got["report"] == base else "NO"
            rate = got["cycles"] / got["simulate"] if got["simulate"] else 0
            per = got["sent"] / got["exchanges"] if got["exchanges"] else 0
            print(f"{name:42} {r:5} {got['cycles']:9} {got['simulate'] or 0:10.2f} {rate:10.0f} "
                  f"{max(got['peaks'] or [0]):8.0f} {sum(got['peaks']):8.0f} {per:12.0f} "
                  f"{got['exchanges']:9} {same:>5}")
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Runs one program in one process and under mpirun with several ranks, and
checks that every run gives the same bits: each output file, the JSON
report (less host_run_seconds, the host's own time) and, with --trace, the
trace file. Prints one line per run that agrees; exits 1 at the first that
does not.

usage: ranks_compare.py PROGRAM DIR [--trace] [--ranks R[:N0,N1,...]]... -- LPURUN_ARGS...
(R ranks; after the colon, the chips of each rank for --rank-chips)
"""
import json
import os
import re
import subprocess
import sys


def outputs_of(program):
    text = subprocess.run(["lpurun", program, "--emit", "text"], check=True,
                          capture_output=True, text=True).stdout
    names = []
    for m in re.finditer(r"^\s*tensor output (\S+) ", text, re.M):
        if m.group(1) not in names:
            names.append(m.group(1))
    return names


def run(cmd, outdir, names, trace, timing_only):
    os.makedirs(outdir, exist_ok=True)
    args = list(cmd) + ["--report", "json"]
    if not timing_only:
        for n in names:
            args += ["--output", f"{n}={os.path.join(outdir, n + '.npy')}"]
    if trace:
        args += ["--trace", os.path.join(outdir, "trace.json")]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(args)}: exit {p.returncode}\n{p.stderr}")
    report = json.loads(p.stdout)
    report.pop("host_run_seconds", None)
    return report


def main():
    argv = sys.argv[1:]
    sep = argv.index("--")
    mine, lpurun_args = argv[:sep], argv[sep + 1:]
    program, work = mine[0], mine[1]
    ranks = []
    trace = False
    i = 2
    while i < len(mine):
        if mine[i] == "--ranks":
            ranks.append(mine[i + 1])
            i += 2
        elif mine[i] == "--trace":
            trace = True
            i += 1
        else:
            sys.exit(f"unknown argument {mine[i]}")
    timing_only = "--timing-only" in lpurun_args
    names = outputs_of(program)
    base_dir = os.path.join(work, "one")
    base = run(["lpurun", program] + lpurun_args, base_dir, names, trace, timing_only)
    print(f"one process: {base['cycles']} cycles, outputs {', '.join(names) if not timing_only else '(timing only)'}")
    for spec in ranks:
        r, _, counts = spec.partition(":")
        cmd = ["mpirun", "-np", r, "--oversubscribe", "lpurun", program] + lpurun_args
        if counts:
            cmd += ["--rank-chips", counts]
        d = os.path.join(work, "ranks-" + spec.replace(":", "-").replace(",", "_"))
        got = run(cmd, d, names, trace, timing_only)
        if got != base:
            sys.exit(f"{spec} ranks: the report differs from one process's")
        files = ([n + ".npy" for n in names] if not timing_only else []) + (["trace.json"] if trace else [])
        for f in files:
            with open(os.path.join(base_dir, f), "rb") as a, open(os.path.join(d, f), "rb") as b:
                if a.read() != b.read():
                    sys.exit(f"{spec} ranks: {f} differs from one process's")
        print(f"{r} ranks{' (' + counts + ')' if counts else ''}: identical, {got['cycles']} cycles")


if __name__ == "__main__":
    main()

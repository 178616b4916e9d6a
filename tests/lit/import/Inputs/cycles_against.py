"""Predicted cycles of an imported model against a hand-written one.

    cycles_against.py IMPORTED.lpu HANDWRITTEN.lpu [--bucket B] [--within F]

Compiles both with `lpuc --report --json` (the hand-written one only at
--bucket when given) and prints the predicted cycles of each bucket and
their ratio; exits 1 when the imported one takes more than F times the
hand-written one's cycles (default 1.10). Cycles are the compiler's exact
prediction, the same on every machine: no timing is measured.
"""
import argparse
import json
import subprocess
import sys


def cycles(path, extra):
    out = subprocess.run(["lpuc", path, "--report", "--json", *extra], check=True,
                         capture_output=True, text=True).stdout
    buckets = json.loads(out)["buckets"]
    if len(buckets) != 1:
        sys.exit(f"cycles_against.py: {path} has {len(buckets)} buckets, expected one")
    return buckets[0]["cycles"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("imported")
    p.add_argument("handwritten")
    p.add_argument("--bucket", default=None)
    p.add_argument("--within", type=float, default=1.10)
    a = p.parse_args()
    mine = cycles(a.imported, [])
    theirs = cycles(a.handwritten, ["--bucket", a.bucket] if a.bucket else [])
    ratio = mine / theirs
    print(f"imported {mine} cycles, hand-written {theirs} cycles, ratio {ratio:.3f}")
    if ratio > a.within:
        sys.exit(f"cycles_against.py: the import takes {ratio:.3f} times the hand-written "
                 f"model's cycles (at most {a.within})")
    print(f"within {a.within} of the hand-written model")


main()

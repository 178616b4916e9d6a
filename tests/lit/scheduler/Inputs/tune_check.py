"""Checks that lpuc's variants never lose against --no-tune.

For every bucket of every entry of each .lpu file given, the cycles lpuc
predicts (it schedules a bucket with each set of placement heuristics and
keeps the fastest, docs/scheduler.md "Variants") must be at most those of
`lpuc --no-tune` (the default set only). Prints one line per file with the
buckets where the variants won, and exits 1 on the first that is slower.
"""
import json
import os
import subprocess
import sys


def cycles(path, *flags):
    r = subprocess.run(["lpuc", path, "--report", "--json", *flags], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"lpuc {path} {' '.join(flags)} failed ({r.returncode}):\n{r.stderr}")
    out = {}
    for b in json.loads(r.stdout)["buckets"]:
        sizes = ",".join(f"{k}={v}" for k, v in sorted(b["bucket"].items()))
        out[(b["entry"], sizes)] = b["cycles"]
    return out


def main(paths):
    for path in paths:
        tuned, once = cycles(path), cycles(path, "--no-tune")
        if tuned.keys() != once.keys():
            sys.exit(f"{path}: the buckets differ with --no-tune")
        won = []
        for key, c in tuned.items():
            if c > once[key]:
                sys.exit(f"{path} {key[0]} {key[1]}: {c} cycles, {once[key]} with --no-tune")
            if c < once[key]:
                won.append(f"{key[0]} {key[1]}".strip())
        print(f"{os.path.basename(path)}: {len(tuned)} buckets, never slower than --no-tune, "
              f"faster in {len(won)}: {', '.join(sorted(won)) or 'none'}")


if __name__ == "__main__":
    main(sys.argv[1:])

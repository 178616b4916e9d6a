"""Checks lpuc --report's lower bound against its predicted cycles.

For every bucket of every entry of each .lpu file given, the lower bound
(the largest of each unit's work over its throughput and the critical
path) must be positive and at most the predicted cycles: a bound above
them would be no bound. Prints one line per file, and exits 1 on the first
bucket that breaks it.
"""
import json
import os
import subprocess
import sys


def main(paths):
    for path in paths:
        r = subprocess.run(["lpuc", path, "--report", "--json"], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"lpuc {path} failed ({r.returncode}):\n{r.stderr}")
        buckets = json.loads(r.stdout)["buckets"]
        critical = 0
        for b in buckets:
            where = f"{os.path.basename(path)} {b['entry']} {b['bucket']}"
            if not 0 < b["lower_bound"] <= b["cycles"]:
                sys.exit(f"{where}: lower bound {b['lower_bound']} ({b['lower_bound_reason']}) "
                         f"is not in (0, {b['cycles']}]")
            critical += b["lower_bound_reason"] == "critical path"
        print(f"{os.path.basename(path)}: {len(buckets)} buckets, every lower bound at most the "
              f"predicted cycles, {critical} set by the critical path")


if __name__ == "__main__":
    main(sys.argv[1:])

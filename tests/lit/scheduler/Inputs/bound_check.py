"""Checks lpuc --report's lower and physical bounds against its predicted cycles.

For every bucket of every entry of each .lpu file given, the lower bound
(the largest of each unit's work over its throughput and the critical
path) must be positive and at most the predicted cycles: a bound above
them would be no bound. So must each op's: the critical path's earliest
cycles for its first and last result rows (--report-ops) at most when
they are ready. With --at-least ENTRY=CYCLES, that
entry's bounds must also reach CYCLES; --lpuc-flag F passes F to lpuc
(repeatable). Prints one line per file (and per
--at-least), and exits 1 on the first bucket that breaks it.
"""
import json
import os
import subprocess
import sys


def main(args):
    # --at-least ENTRY=CYCLES: that entry's every bound is at least CYCLES
    # (a figure worked out by hand from the chip file's latencies).
    at_least, paths, flags = {}, [], []
    while args:
        a = args.pop(0)
        if a == "--at-least":
            entry, cycles = args.pop(0).split("=")
            at_least[entry] = int(cycles)
        elif a == "--lpuc-flag":
            flags.append(args.pop(0))
        else:
            paths.append(a)
    seen = set()
    for path in paths:
        r = subprocess.run(["lpuc", path, "--report", "--report-ops", "--json", *flags], capture_output=True,
                           text=True)
        if r.returncode != 0:
            sys.exit(f"lpuc {path} failed ({r.returncode}):\n{r.stderr}")
        buckets = json.loads(r.stdout)["buckets"]
        critical = ops = physical = 0
        for b in buckets:
            where = f"{os.path.basename(path)} {b['entry']} {b['bucket']}"
            if not 0 < b["lower_bound"] <= b["cycles"]:
                sys.exit(f"{where}: lower bound {b['lower_bound']} ({b['lower_bound_reason']}) "
                         f"is not in (0, {b['cycles']}]")
            # The physical bound (docs/scheduler.md, "The physical bound")
            # holds for every schedule, this one too.
            if not 0 < b["physical_bound"] <= b["cycles"]:
                sys.exit(f"{where}: physical bound {b['physical_bound']} ({b['physical_resource']}) "
                         f"is not in (0, {b['cycles']}]")
            physical += 1
            for op in b["ops"]:
                if "first_row_ready" not in op:
                    continue
                ops += 1
                if not (0 <= op["first_row_bound"] <= op["first_row_ready"]
                        and op["first_row_bound"] <= op["last_row_bound"] <= op["last_row_ready"]):
                    sys.exit(f"{where}: {op['op']} {op['type']} at {op['loc']}: rows ready "
                             f"{op['first_row_ready']}..{op['last_row_ready']}, bound "
                             f"{op['first_row_bound']}..{op['last_row_bound']}")
            seen.add(b["entry"])
            if b["lower_bound"] < at_least.get(b["entry"], 0):
                sys.exit(f"{where}: lower bound {b['lower_bound']} ({b['lower_bound_reason']}) "
                         f"is below {at_least[b['entry']]}")
            critical += b["lower_bound_reason"] == "critical path"
        print(f"{os.path.basename(path)}: {len(buckets)} buckets, every lower bound at most the "
              f"predicted cycles, {critical} set by the critical path; {ops} ops' rows no "
              f"earlier than their bound; {physical} physical bounds at most the predicted cycles")
    for entry, cycles in at_least.items():
        if entry not in seen:
            sys.exit(f"no entry {entry}")
        print(f"{entry}: every lower bound at least {cycles}")


if __name__ == "__main__":
    main(sys.argv[1:])

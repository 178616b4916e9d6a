"""One entry of a model, every bucket, end to end: compiles the .lpu once
(lpuc -o and --report --json), reads each bucket's inputs (names, types,
shapes) from the program file, and for every bucket runs the simulator and
the reference interpreter on the same random inputs and weights with
tests/lit/scheduler/Inputs/run_and_compare.py: the outputs must agree within
the tolerance given (its docstring lists each op's) and the simulated cycles
must equal lpuc's prediction. Exits non-zero on the first difference, and
on an entry or a --bucket the program does not have.

usage: check_example.py LPU ENTRY TMPDIR [--exact] [--atol A] [--rtol R]
                        [--ulps U] [--f16-ulps U] [--bucket DIM=N[,DIM=N...]]...
                        [--int-high H]
--bucket limits the run to the listed buckets (the test says why); integer
inputs are drawn from [0, H) with --int-high (ids into a table of H rows),
unit-normal values truncated otherwise.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scheduler", "Inputs"))
import run_and_compare as rc  # noqa: E402

NUMPY_DTYPES = {"f16": "float16", "f32": "float32", "i32": "int32", "i16": "int16",
                "i8": "int8", "bool": "bool"}


def program_inputs(lpx, tmp):
    """{entry: {bucket dims: [(name, numpy dtype, sizes)]}} from the
    program's text form (`tensor input NAME DTYPE [DIMS] ...` per bucket)."""
    text = f"{tmp}/prog.lpuasm"
    rc.run(["lpurun", lpx, "--emit=text", "-o", text])
    entries, buckets, current = {}, None, None
    with open(text) as f:
        for line in f:
            words = line.split()
            if not words:
                continue
            if words[0] == "entry":
                buckets = entries.setdefault(words[1], {})
            elif words[0] == "bucket":
                current = tuple((k, int(v)) for k, v in (w.split("=") for w in words[1:]))
                buckets[current] = []
            elif words[0] == "tensor" and words[1] == "input":
                sizes = dict(current)
                dims = [int(d) if d.isdigit() else sizes[d]
                        for d in filter(None, words[4].strip("[]").split(","))]
                buckets[current].append((words[2], NUMPY_DTYPES[words[3]], dims))
    return entries


def label(dims):
    return " ".join(f"{k}={v}" for k, v in dims) or "(no bucket sizes)"


def main():
    src, entry, tmp = sys.argv[1:4]
    exact, tol, rest = rc.parse_tolerance(sys.argv[4:])
    only, int_high = [], None
    i = 0
    while i < len(rest):
        if rest[i] == "--bucket":
            only.append(tuple((k, int(v)) for k, v in (d.split("=") for d in rest[i + 1].split(","))))
        elif rest[i] == "--int-high":
            int_high = int(rest[i + 1])
        else:
            sys.exit(f"check_example.py: unknown argument '{rest[i]}'")
        i += 2
    os.makedirs(tmp, exist_ok=True)
    lpx, predicted = rc.compile_program(src, tmp)
    entries = program_inputs(lpx, tmp)
    if entry not in entries:
        sys.exit(f"{entry}: no such entry in {src} (entries: {', '.join(entries)})")
    buckets = entries[entry]
    for b in only:
        if b not in buckets:
            sys.exit(f"{entry}: no bucket {label(b)} in {src} "
                     f"(buckets: {', '.join(map(label, buckets))})")
    specs = []
    for dims, inputs in buckets.items():
        if only and dims not in only:
            continue
        # ENTRY@DIM=N: run_and_compare checks that the inputs select it.
        specs.append(entry + "".join(f"@{k}={v}" for k, v in dims) + ":" +
                     ",".join(f"{n}={t}x{'x'.join(map(str, s))}" for n, t, s in inputs))
    rc.run_and_compare(src, lpx, predicted, tmp, specs, exact, tol, int_high)
    print(f"{entry}: {len(specs)} of {len(buckets)} buckets as the reference, cycles as predicted")


if __name__ == "__main__":
    main()

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
                        [--int-high H] [--scaled-weights]
--bucket limits the run to the listed buckets (the test says why); integer
inputs are drawn from [0, H) with --int-high (ids into a table of H rows),
unit-normal values truncated otherwise. --scaled-weights draws the
parameters as an initialised network's (positive batch-norm variances,
weights with std 1/sqrt(fan-in); run_and_compare.py's docstring gives each
role's distribution) and gives both sides the same file; without it both
draw lpurun's --random-weights, which suit a few layers but make NaN in
batch norm (half of the running variances are negative).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scheduler", "Inputs"))
import run_and_compare as rc  # noqa: E402

NUMPY_DTYPES = {"f16": "float16", "f32": "float32", "i32": "int32", "i16": "int16",
                "i8": "int8", "bool": "bool"}


def main():
    src, entry, tmp = sys.argv[1:4]
    exact, tol, rest = rc.parse_tolerance(sys.argv[4:])
    only, int_high, scaled = [], None, False
    i = 0
    while i < len(rest):
        if rest[i] == "--scaled-weights":
            scaled = True
            i += 1
            continue
        if rest[i] == "--bucket":
            only.append(tuple((k, int(v)) for k, v in (d.split("=") for d in rest[i + 1].split(","))))
        elif rest[i] == "--int-high":
            int_high = int(rest[i + 1])
        else:
            sys.exit(f"check_example.py: unknown argument '{rest[i]}'")
        i += 2
    os.makedirs(tmp, exist_ok=True)
    # Only the entry and buckets checked are compiled (lpuc --entry, --bucket),
    # and lpuc refuses an entry or bucket the file does not have.
    select = ["--entry", entry]
    for b in only:
        select += ["--bucket", ",".join(f"{k}={v}" for k, v in b)]
    lpx, predicted = rc.compile_program(src, tmp, select)
    entries, params = rc.program_tensors(lpx, tmp)
    buckets = entries[entry]
    weights = rc.write_scaled_weights(params, f"{tmp}/weights.safetensors") if scaled else None
    specs = []
    for dims, inputs in buckets.items():
        # ENTRY@DIM=N: run_and_compare checks that the inputs select it.
        specs.append(entry + "".join(f"@{k}={v}" for k, v in dims) + ":" +
                     ",".join(f"{n}={NUMPY_DTYPES[t]}x{'x'.join(map(str, s))}" for n, t, s in inputs))
    rc.run_and_compare(src, lpx, predicted, tmp, specs, exact, tol, int_high, weights=weights)
    print(f"{entry}: {len(specs)} bucket{'s' if len(specs) != 1 else ''} as the reference, "
          "cycles as predicted")


if __name__ == "__main__":
    main()

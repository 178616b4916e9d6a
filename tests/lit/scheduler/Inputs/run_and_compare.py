"""Compiles a .lpu, runs every listed entry on the simulator and in the
reference interpreter with the same random inputs and weights, and checks:
  - the outputs agree: bit for bit (--exact), or within
    |sim - ref| <= atol + rtol * |ref| + ulps * ulp(ref in the result type)
                                       + f16_ulps * ulp(ref in f16);
  - the simulator's cycle count equals lpuc's prediction (--report --json)
    for the bucket lpurun ran (and, with ENTRY@DIM=N, that it is that one).

Tolerances (docs/scheduler.md gives each op's and says why):
  - matmul and conv2d, the default when no tolerance is given: atol 2e-3,
    f16-ulps 2. The MXM adds the K products in ascending k in fp32 and the
    interpreter uses sgemm's blocked order, so the fp32 sums may differ in
    their last bits, and the f16 rounding of the result (and what is
    computed from it, even when widened to f32 after) by one step; the
    absolute term covers sums that cancel to near zero, where the fp32
    order error of K products of size ~1 dominates the tiny ulp.
  - sums across lanes ("Reductions"): atol 1e-4, rtol 1e-5, ulps 1.
  - softmax ("Softmax"): atol 1e-6, rtol 1e-4, ulps 1.
  - elementwise work, max/min, data movement: --exact.

Weights: by default both sides draw them with `lpurun --random-weights`
(docs/tensor-files.md: every float uniform in +-1/sqrt(fan-in), fan-in the
product of all dimensions but the last). That keeps one matmul's outputs
near unit size, but a deep network needs more: its batch-norm variances
must be positive (a negative one makes rsqrt NaN) and a convolution
weight [O, C, K, K]'s fan-in is C*K*K, not O*C*K. --scaled-weights writes
TMPDIR/weights.safetensors instead, drawn as an initialised network's (the
parameter roles are std.nn's, by the last part of the name), and gives it
to both sides with --weights:
  - `gamma`, `running_var` (BatchNorm2d, LayerNorm): uniform in [0.5, 1.5];
  - `beta`, `running_mean`: uniform in [-0.1, 0.1];
  - other floats of rank 4 (conv2d weights [O, C, K, K]): normal with std
    1/sqrt(C*K*K); of rank 2, 3 or more than 4 (matmul weights [.., I, O]):
    std 1/sqrt(product of all dimensions but the last). A layer's outputs
    then have its input's mean square as their variance; relu halves it
    and a residual add sums both paths', so a deep network's activations
    neither vanish nor grow past f16's range (ResNet-50's logits: rms 5);
  - other floats of rank 0 or 1 (biases): uniform in +-1/sqrt(size);
  - integers uniform in [-8, 8], bools fair coins (as lpurun's).
Each parameter has its own stream (seeded by WEIGHTS_SEED and its name),
so adding one does not change the others.

With --lpuc-flag F (repeatable) lpuc compiles with F. With --same-as F
(repeatable) the source is also compiled with F in place of the
--lpuc-flag flags and run
on the same inputs and weights, and both programs' outputs must agree bit
for bit (a layout change that only moves bits, such as --pack-params,
against the default: the matmul's arithmetic order is the same on both).
With --chip FILE both compile for and the simulator runs on that chip
description (the reference interpreter needs none). With --int-range LO,HI
integer inputs are drawn from [LO, HI) (ids past a table's ends, say).

usage: run_and_compare.py LPU TMPDIR [--exact] [--atol A] [--rtol R] [--ulps U]
                          [--f16-ulps U] [--lpuc-flag F]... [--same-as F]
                          [--scaled-weights] [--chip FILE] [--int-range LO,HI]
                          ENTRY[@DIM=N...][:NAME=SHAPE[,NAME=SHAPE...]] ...
SHAPE is dtype x dims, e.g. float16x4x320; @DIM=N names the bucket the
inputs must select. tests/lit/e2e/Inputs/check_example.py drives the same
comparison over every bucket of an entry, inputs derived from the program.
"""
import json
import math
import subprocess
import sys
import zlib

import numpy as np

TOLERANCE_FLAGS = ("--atol", "--rtol", "--ulps", "--f16-ulps")
MATMUL_TOLERANCE = {"atol": 2e-3, "rtol": 0.0, "ulps": 0.0, "f16_ulps": 2.0}
# The same inputs for the same spec list, whichever test runs them.
SEED = 11
# The weights both sides use (lpurun --random-weights).
WEIGHTS_SEED = "5"


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def compile_program(src, tmp, flags=(), name="prog"):
    """Writes TMP/NAME.lpx and returns (its path, lpuc's --report --json)."""
    lpx = f"{tmp}/{name}.lpx"
    report = json.loads(run(["lpuc", src, "-o", lpx, "--report", "--json"] + list(flags)))
    return lpx, report


def program_tensors(lpx, tmp):
    """From the program's text form (`tensor ROLE NAME DTYPE [DIMS] ...`):
    ({entry: {bucket dims: [(name, dtype, sizes)]}} of the inputs, sizes
    concrete for the bucket; [(name, dtype, dims)] of the parameters, each
    once, every entry's, whole when chips hold slices of them). Dtypes as
    the program names them (f16, i32, ...)."""
    text = f"{tmp}/prog.lpuasm"
    run(["lpurun", lpx, "--emit=text", "-o", text])
    entries, params, buckets, current = {}, {}, None, None
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
            elif words[0] == "tensor" and words[1] in ("input", "param"):
                sizes = dict(current)
                dims = [int(d) if d.isdigit() else sizes[d]
                        for d in filter(None, words[4].strip("[]").split(","))]
                if words[1] == "input":
                    buckets[current].append((words[2], words[3], dims))
                else:
                    # A chip's slice of the weight (`shard AXIS,START,FULL`):
                    # the weights file holds the whole weight.
                    if "shard" in words:
                        axis, _, full = (int(v) for v in words[words.index("shard") + 1].split(","))
                        dims[axis] = full
                    params[words[2]] = (words[3], dims)
    return entries, [(n, t, d) for n, (t, d) in params.items()]


SAFETENSORS_DTYPES = {"f16": "F16", "bf16": "BF16", "f32": "F32", "i32": "I32", "i16": "I16",
                      "i8": "I8", "bool": "BOOL"}


def scaled_parameter(name, dtype, dims):
    """One parameter drawn as the docstring's --scaled-weights says, as
    the bytes of its dtype."""
    rng = np.random.default_rng([int(WEIGHTS_SEED), zlib.crc32(name.encode())])
    role = name.rsplit(".", 1)[-1]
    if dtype == "bool":
        return rng.integers(0, 2, dims).astype(np.bool_).tobytes()
    if dtype.startswith("i"):
        return rng.integers(-8, 9, dims).astype(f"int{dtype[1:]}").tobytes()
    if role in ("gamma", "running_var"):
        x = rng.uniform(0.5, 1.5, dims)
    elif role in ("beta", "running_mean"):
        x = rng.uniform(-0.1, 0.1, dims)
    elif len(dims) >= 2:
        fan_in = math.prod(dims[1:] if len(dims) == 4 else dims[:-1])
        x = rng.standard_normal(dims) / math.sqrt(max(fan_in, 1))
    else:
        bound = 1 / math.sqrt(max(math.prod(dims), 1))
        x = rng.uniform(-bound, bound, dims)
    if dtype == "bf16":
        # Round to nearest even: bf16 is the high half of an f32.
        bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16).tobytes()
    return x.astype({"f16": np.float16, "f32": np.float32}[dtype]).tobytes()


def write_scaled_weights(params, path):
    """Writes every (name, dtype, dims) parameter, drawn by
    scaled_parameter, to a .safetensors file at path; returns path."""
    header, blobs, offset = {}, [], 0
    for name, dtype, dims in params:
        blob = scaled_parameter(name, dtype, dims)
        header[name] = {"dtype": SAFETENSORS_DTYPES[dtype], "shape": dims,
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for blob in blobs:
            f.write(blob)
    return path


def parse_spec(spec):
    """ENTRY[@DIM=N...][:NAME=SHAPE,...] -> (entry, {dim: n}, [(name, dtype, dims)])."""
    head, _, inputs = spec.partition(":")
    entry, *dims = head.split("@")
    want = {k: int(v) for k, v in (d.split("=") for d in dims)}
    shapes = []
    for item in filter(None, inputs.split(",")):
        name, shape = item.split("=")
        dtype, *sizes = shape.split("x")
        shapes.append((name, dtype, [int(d) for d in sizes if d]))
    return entry, want, shapes


def compare(what, a, b, exact, tol):
    """Exits with the first difference; returns how the outputs agree."""
    if a.shape != b.shape or a.dtype != b.dtype:
        sys.exit(f"{what}: simulator gives {a.dtype}{a.shape}, reference {b.dtype}{b.shape}")
    if exact:
        if a.tobytes() != b.tobytes():
            bad = np.argwhere(a != b)
            sys.exit(f"{what}: {len(bad)} elements differ, first at {bad[0]}: "
                     f"{a[tuple(bad[0])]} vs {b[tuple(bad[0])]}")
        return "bit-exact"
    if not np.isfinite(b).all() or not np.isfinite(a).all():
        sys.exit(f"{what}: non-finite values")
    af, bf = a.astype(np.float64), b.astype(np.float64)
    ulp = np.spacing(np.abs(b)).astype(np.float64)
    bound = tol["atol"] + tol["rtol"] * np.abs(bf) + tol["ulps"] * ulp
    if tol["f16_ulps"]:
        # (Only then: an f32 result past f16's range has no f16 ulp.)
        bound = bound + tol["f16_ulps"] * np.spacing(np.abs(b).astype(np.float16)).astype(np.float64)
    over = np.abs(af - bf) > bound
    if over.any():
        i = tuple(np.argwhere(over)[0])
        sys.exit(f"{what}: {over.sum()} elements outside the tolerance, first at {i}: "
                 f"{af[i]} vs {bf[i]}")
    return "within tolerance"


def random_input(rng, dtype, dims, int_high=None):
    """Unit-normal values in the input's type; integers uniform in
    [0, int_high) instead when int_high is given (ids into a table), or in
    [lo, hi) when it is a pair."""
    if int_high is not None and np.issubdtype(np.dtype(dtype), np.integer):
        lo, hi = int_high if isinstance(int_high, tuple) else (0, int_high)
        return rng.integers(lo, hi, dims).astype(dtype)
    return rng.standard_normal(dims).astype(dtype)


def run_and_compare(src, lpx, predicted, tmp, specs, exact=False, tol=None, int_high=None,
                    same_as=None, weights=None, chip=()):
    """Runs each spec on both sides and checks outputs and cycles; prints
    `ENTRY (DIMS): bit-exact|within tolerance, N cycles as predicted`.
    same_as: another program (its path) whose outputs on the same inputs
    must equal the simulator's bit for bit (`, bit-exact as the other`).
    weights: a .safetensors file both sides read (write_scaled_weights);
    without it, lpurun's random weights from WEIGHTS_SEED."""
    tol = tol or MATMUL_TOLERANCE
    weight_flags = ["--weights", weights] if weights else ["--random-weights", WEIGHTS_SEED]
    rng = np.random.default_rng(SEED)
    for spec in specs:
        entry, want, shapes = parse_spec(spec)
        flags = []
        for name, dtype, dims in shapes:
            x = random_input(rng, dtype, dims, int_high)
            np.save(f"{tmp}/{entry}_{name}.npy", x)
            flags.append(f"--input={name}={tmp}/{entry}_{name}.npy")
        sim = run(["lpurun", lpx, "--entry", entry, *weight_flags,
                   f"--output=out={tmp}/{entry}_sim.npy", "--report=json"] + list(chip) + flags)
        run(["lpurun", "--reference", src, "--entry", entry, *weight_flags,
             f"--output=out={tmp}/{entry}_ref.npy"] + flags)
        report = json.loads(sim[sim.index("{"):])
        cycles = report["cycles"]
        # The bucket lpurun chose (the smallest that holds the inputs);
        # lpurun names its sizes in declaration order, the JSON report by name.
        dims = report["bucket_dims"]
        ran = {k: int(v) for k, v in (kv.split("=") for kv in dims.split())}
        if any(ran.get(k) != v for k, v in want.items()):
            sys.exit(f"{spec}: the inputs selected bucket {dims}")
        bucket = [b for b in predicted["buckets"] if b["entry"] == entry and b["bucket"] == ran]
        assert len(bucket) == 1, bucket
        if cycles != bucket[0]["cycles"]:
            sys.exit(f"{entry} ({dims}): simulated {cycles} cycles, "
                     f"lpuc predicted {bucket[0]['cycles']}")
        how = compare(f"{entry} ({dims})", np.load(f"{tmp}/{entry}_sim.npy"),
                      np.load(f"{tmp}/{entry}_ref.npy"), exact, tol)
        if same_as:
            run(["lpurun", same_as, "--entry", entry, *weight_flags,
                 f"--output=out={tmp}/{entry}_other.npy"] + list(chip) + flags)
            compare(f"{entry} ({dims}) against the other program",
                    np.load(f"{tmp}/{entry}_sim.npy"), np.load(f"{tmp}/{entry}_other.npy"),
                    True, tol)
            how += ", bit-exact as the other"
        print(f"{entry} ({dims}): {how}, {cycles} cycles as predicted", flush=True)


def parse_tolerance(args, lpuc_flags=None):
    """Takes --exact and the tolerance flags out of args: (exact, tolerance,
    the other arguments in order). With `lpuc_flags` (a dict), --lpuc-flag,
    --same-as, --scaled-weights, --chip and --int-range too, into its
    "flags" (a list), "same_as", "scaled_weights" (True), "chip" (the flags
    that name it) and "int_range" (a pair)."""
    exact, given, rest = False, {}, []
    i = 0
    while i < len(args):
        if args[i] == "--exact":
            exact = True
        elif lpuc_flags is not None and args[i] == "--lpuc-flag":
            lpuc_flags.setdefault("flags", []).append(args[i + 1])
            i += 1
        elif lpuc_flags is not None and args[i] == "--int-range":
            lo, hi = args[i + 1].split(",")
            lpuc_flags["int_range"] = (int(lo), int(hi))
            i += 1
        elif lpuc_flags is not None and args[i] == "--chip":
            lpuc_flags["chip"] = ["--chip", args[i + 1]]
            i += 1
        elif lpuc_flags is not None and args[i] == "--same-as":
            lpuc_flags.setdefault("same_as", []).append(args[i + 1])
            i += 1
        elif lpuc_flags is not None and args[i] == "--scaled-weights":
            lpuc_flags["scaled_weights"] = True
        elif args[i] in TOLERANCE_FLAGS:
            given[args[i][2:].replace("-", "_")] = float(args[i + 1])
            i += 1
        else:
            rest.append(args[i])
        i += 1
    zero = {k: 0.0 for k in MATMUL_TOLERANCE}
    tol = {**zero, **given} if given else MATMUL_TOLERANCE
    return exact, tol, rest


def main():
    src, tmp = sys.argv[1], sys.argv[2]
    lpuc = {}
    exact, tol, specs = parse_tolerance(sys.argv[3:], lpuc)
    chip = lpuc.get("chip", [])
    lpx, predicted = compile_program(src, tmp, lpuc.get("flags", []) + chip)
    other = None
    if "same_as" in lpuc:
        other, _ = compile_program(src, tmp, lpuc["same_as"] + chip, "other")
    weights = None
    if lpuc.get("scaled_weights"):
        weights = write_scaled_weights(program_tensors(lpx, tmp)[1], f"{tmp}/weights.safetensors")
    run_and_compare(src, lpx, predicted, tmp, specs, exact, tol, lpuc.get("int_range"),
                    same_as=other, weights=weights, chip=chip)


if __name__ == "__main__":
    main()

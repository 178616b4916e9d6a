"""An ONNX model through lpu-import, end to end, against PyTorch.

usage: compare.py MODELDIR KIND ENTRY WORKDIR [--bucket DIM=a,b,...]...
                  [--atol A] [--rtol R]
                  [--ref-atol A] [--ref-rtol R] [--ref-f16-ulps U] [--ref-exact]
                  [--ids-in-range]

MODELDIR holds what `export_models.py KIND MODELDIR` wrote (KIND.onnx, the
KIND.json manifest, each case's inputs and PyTorch's fp32 output). Then:
  1. lpu-import MODELDIR/KIND.onnx -o WORKDIR/KIND.lpu --entry ENTRY
     [--bucket ...] [--ids-in-range]: exit 0, and the .lpu and the
     weights at the default path, WORKDIR/KIND.safetensors;
  2. lpuc WORKDIR/KIND.lpu -o WORKDIR/prog.lpx --report --json --entry
     ENTRY: the program and the cycles it predicts for every bucket;
  3. for every case of the manifest (with --bucket, every size listed must
     have one, and only those run): lpurun on the simulator and lpurun
     --reference on the .lpu, both with --weights WORKDIR/KIND.safetensors
     and the case's inputs (named after the ONNX inputs, characters outside
     [A-Za-z0-9_] as '_'), writing the entry's output `out` as .npy;
  4. checks: the simulator ran the case's bucket (its symbolic sizes), in
     exactly the cycles lpuc predicted for it; both outputs are f32 of
     PyTorch's shape and finite; each is within
       |x - torch| <= atol + rtol * |torch|                (--atol, --rtol)
     of PyTorch's output; and the simulator is within
       |sim - ref| <= ref-atol + ref-rtol * |ref| + ref-f16-ulps * ulp_f16(ref)
     of the reference interpreter (run_and_compare.py's form; default its
     matmul tolerance, atol 2e-3 and 2 f16 ulps; --ref-exact: bit for bit).
Prints `KIND (LABEL): sim and reference within tolerance of PyTorch, N
cycles as predicted` per case, and on stderr the largest differences seen
(for tightening the tolerances). On a failure exits non-zero naming the
worst element (the one furthest past its bound) and both values.

The tolerances against PyTorch are the test's: PyTorch computes in fp32 on
the same f16-representable weights and inputs, the lpu side stores every
activation in f16, so the difference is what f16 activations cost
(export_models.py --f16-error estimates it per model; the tests quote it).
"""
import json
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scheduler", "Inputs"))
import run_and_compare as rc  # noqa: E402


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def check(what, got, want, bound_fn, got_name, want_name):
    """Exits naming the worst element when |got - want| exceeds the bound
    anywhere; returns the largest |got - want|."""
    if got.shape != want.shape:
        sys.exit(f"{what}: {got_name} gives shape {list(got.shape)}, {want_name} {list(want.shape)}")
    g, w = got.astype(np.float64), want.astype(np.float64)
    diff = np.abs(g - w)
    bound = bound_fn(want)
    over = diff > bound
    if over.any():
        i = tuple(int(v) for v in np.unravel_index(np.argmax(diff - bound), diff.shape))
        sys.exit(f"{what}: {int(over.sum())} of {diff.size} elements outside the tolerance, "
                 f"worst at {list(i)}: {got_name} {g[i]!r} vs {want_name} {w[i]!r} "
                 f"(|difference| {diff[i]:.6g}, bound {bound[i]:.6g})")
    return float(diff.max()) if diff.size else 0.0


def parse_args(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    modeldir, kind, entry, work = argv[:4]
    opts = {"atol": 0.0, "rtol": 0.0, "ref_atol": None, "ref_rtol": None, "ref_f16_ulps": None,
            "ref_exact": False, "buckets": [], "import_args": []}
    i = 4
    while i < len(argv):
        a = argv[i]
        if a == "--ref-exact":
            opts["ref_exact"] = True
            i += 1
            continue
        if a == "--ids-in-range":
            opts["import_args"].append(a)
            i += 1
            continue
        if i + 1 >= len(argv):
            sys.exit(f"compare.py: {a} needs a value")
        if a == "--bucket":
            opts["buckets"].append(argv[i + 1])
        elif a in ("--atol", "--rtol", "--ref-atol", "--ref-rtol", "--ref-f16-ulps"):
            opts[a[2:].replace("-", "_")] = float(argv[i + 1])
        else:
            sys.exit(f"compare.py: unknown argument '{a}'")
        i += 2
    if opts["atol"] == 0.0 and opts["rtol"] == 0.0:
        sys.exit("compare.py: give the tolerance against PyTorch (--atol, --rtol): the test says why")
    ref = [opts[k] for k in ("ref_atol", "ref_rtol", "ref_f16_ulps")]
    if all(v is None for v in ref):
        opts["ref_atol"] = rc.MATMUL_TOLERANCE["atol"]
        opts["ref_f16_ulps"] = rc.MATMUL_TOLERANCE["f16_ulps"]
    for k in ("ref_atol", "ref_rtol", "ref_f16_ulps"):
        opts[k] = opts[k] or 0.0
    return modeldir, kind, entry, work, opts


def selected_cases(manifest, buckets):
    """The manifest's cases --bucket selects: every size listed must have a
    case (a test never passes by checking nothing); without --bucket, all."""
    if not buckets:
        return manifest["cases"]
    sizes = {}
    for b in buckets:
        dim, _, values = b.partition("=")
        sizes[dim] = [int(v) for v in values.split(",")]
    cases = [c for c in manifest["cases"]
             if all(c["bucket"].get(d) in vs for d, vs in sizes.items())]
    for dim, values in sizes.items():
        for v in values:
            if not any(c["bucket"].get(dim) == v for c in cases):
                sys.exit(f"compare.py: {manifest['kind']} has no saved case for {dim}={v} "
                         f"(cases: {', '.join(c['label'] for c in manifest['cases'])})")
    return cases


def main():
    modeldir, kind, entry, work, opts = parse_args(sys.argv[1:])
    with open(os.path.join(modeldir, f"{kind}.json")) as f:
        manifest = json.load(f)
    cases = selected_cases(manifest, opts["buckets"])
    os.makedirs(work, exist_ok=True)

    src, weights = f"{work}/{kind}.lpu", f"{work}/{kind}.safetensors"
    cmd = ["lpu-import", os.path.join(modeldir, manifest["onnx"]), "-o", src, "--entry", entry]
    for b in opts["buckets"]:
        cmd += ["--bucket", b]
    cmd += opts["import_args"]
    rc.run(cmd)
    for path in (src, weights):
        if not os.path.isfile(path):
            sys.exit(f"compare.py: lpu-import exited 0 but wrote no {path}")

    lpx, predicted = rc.compile_program(src, work, ["--entry", entry])

    def torch_bound(want):
        return opts["atol"] + opts["rtol"] * np.abs(want.astype(np.float64))

    def ref_bound(want):
        w = want.astype(np.float64)
        bound = opts["ref_atol"] + opts["ref_rtol"] * np.abs(w)
        if opts["ref_f16_ulps"]:
            bound = bound + opts["ref_f16_ulps"] * np.spacing(
                np.abs(want).astype(np.float16)).astype(np.float64)
        return bound

    for case in cases:
        label, tag = case["label"], case["label"].replace("=", "")
        what = f"{kind} ({label})"
        flags = [f"--input={sanitize(n)}={os.path.join(modeldir, case['inputs'][n])}"
                 for n in manifest["inputs"]]
        sim_out, ref_out = f"{work}/{kind}.{tag}.sim.npy", f"{work}/{kind}.{tag}.ref.npy"
        sim = rc.run(["lpurun", lpx, "--entry", entry, "--weights", weights,
                      f"--output=out={sim_out}", "--report=json"] + flags)
        rc.run(["lpurun", "--reference", src, "--entry", entry, "--weights", weights,
                f"--output=out={ref_out}"] + flags)

        report = json.loads(sim[sim.index("{"):])
        cycles = report["cycles"]
        ran = {k: int(v) for k, v in (kv.split("=") for kv in report["bucket_dims"].split())}
        # The case's symbolic sizes select the bucket: its inputs fill it
        # exactly (a bucket of the same size), no padding.
        for dim, size in case["bucket"].items():
            if ran.get(sanitize(dim)) != size:
                sys.exit(f"{what}: the simulator ran bucket '{report['bucket_dims']}', "
                         f"not {dim}={size}")
        bucket = [b for b in predicted["buckets"] if b["entry"] == entry and b["bucket"] == ran]
        if len(bucket) != 1:
            sys.exit(f"{what}: lpuc predicted {len(bucket)} buckets of entry {entry} "
                     f"at '{report['bucket_dims']}'")
        if cycles != bucket[0]["cycles"]:
            sys.exit(f"{what}: simulated {cycles} cycles, lpuc predicted {bucket[0]['cycles']}")

        want = np.load(os.path.join(modeldir, case["output"]))
        s, r = np.load(sim_out), np.load(ref_out)
        for name, x in (("simulator", s), ("reference", r)):
            if x.dtype != np.float32:
                sys.exit(f"{what}: the {name} gives {x.dtype}, not float32 (a float output is f32)")
            if not np.isfinite(x).all():
                sys.exit(f"{what}: the {name} gives non-finite values")
        d_sim = check(f"{what} simulator against PyTorch", s, want, torch_bound, "sim", "torch")
        d_ref = check(f"{what} reference against PyTorch", r, want, torch_bound, "ref", "torch")
        if opts["ref_exact"]:
            if s.tobytes() != r.tobytes():
                bad = np.argwhere(s != r)
                sys.exit(f"{what}: {len(bad)} elements of the simulator's differ from the "
                         f"reference's, first at {list(bad[0])}: {s[tuple(bad[0])]!r} vs "
                         f"{r[tuple(bad[0])]!r}")
            d_sr = 0.0
        else:
            d_sr = check(f"{what} simulator against the reference", s, r, ref_bound, "sim", "ref")
        print(f"{what}: max |sim - torch| {d_sim:.4g}, |ref - torch| {d_ref:.4g}, "
              f"|sim - ref| {d_sr:.4g} (|torch| up to {float(np.abs(want).max()):.4g})",
              file=sys.stderr)
        print(f"{what}: sim and reference within tolerance of PyTorch, {cycles} cycles as predicted",
              flush=True)


if __name__ == "__main__":
    main()

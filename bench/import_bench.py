"""lpu-import's cost and what it makes, for bench/import_bench.sh.

For each model: export it from PyTorch (tests/lit/import/Inputs/
export_models.py; not timed), then time `lpu-import` (wall and CPU seconds
and peak resident memory of the child, from wait4: the decode, the
translation, the layout and the front end's check of every bucket), and
compile the import with `lpuc --report --json`: parameters (`--stats`) and
predicted cycles per bucket, next to the hand-written example of the same
network where there is one (examples/resnet50.lpu's N=1 bucket).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPORT = os.path.join(ROOT, "tests", "lit", "import", "Inputs", "export_models.py")

# kind -> (entry, buckets for lpu-import, hand-written counterpart or None)
MODELS = {
    "resnet50": ("classify", [], ("examples/resnet50.lpu", ["--bucket", "N=1"])),
    "resnet50_bn": ("classify", [], ("examples/resnet50.lpu", ["--bucket", "N=1"])),
    "bert": ("encode", ["--bucket", "S=64,128"], None),
}


def timed(cmd):
    with tempfile.TemporaryFile() as out_f, tempfile.TemporaryFile() as err_f:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out_f, stderr=err_f)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        code = os.waitstatus_to_exitcode(status)
        out_f.seek(0)
        err_f.seek(0)
        out, err = out_f.read().decode(), err_f.read().decode(errors="replace")
    if code != 0:
        sys.exit(f"import_bench.py: {' '.join(cmd)} exited {code}:\n{err}")
    return out, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def report(lpuc, path, extra=()):
    out = subprocess.run([lpuc, path, "--report", "--json", *extra], check=True,
                         capture_output=True, text=True).stdout
    return {" ".join(f"{k}={v}" for k, v in b["bucket"].items()) or "-": b["cycles"]
            for b in json.loads(out)["buckets"]}


def params(lpuc, path, extra=()):
    out = subprocess.run([lpuc, path, "--stats", "--json", *extra], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["entries"][0]["buckets"][0]["params"]


def main():
    bindir = sys.argv[1]
    kinds = list(MODELS)
    if len(sys.argv) > 3 and sys.argv[2] == "--models":
        kinds = sys.argv[3].split(",")
    lpuc, importer = os.path.join(bindir, "lpuc"), os.path.join(bindir, "lpu-import")
    print(f"lpu-import on models exported from PyTorch ({os.cpu_count()} cores; "
          "the export is not timed)")
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            entry, buckets, hand = MODELS[kind]
            print(f"  exporting {kind}...", file=sys.stderr, flush=True)
            subprocess.run(["/usr/bin/python3", EXPORT, kind, tmp], check=True,
                           capture_output=True)
            onnx = os.path.join(tmp, kind + ".onnx")
            src = os.path.join(tmp, kind + ".lpu")
            _, wall, cpu, peak = timed([importer, onnx, "-o", src, "--entry", entry, *buckets])
            size = os.path.getsize(onnx) / 1e6
            print(f"{kind}: {size:.0f} MB of ONNX imported in {wall:.2f} s wall, {cpu:.2f} s CPU, "
                  f"{peak:.0f} MB peak; {params(lpuc, src):,} parameters")
            cycles = report(lpuc, src)
            theirs = {}
            if hand:
                path, extra = os.path.join(ROOT, hand[0]), hand[1]
                theirs = report(lpuc, path, extra)
                print(f"  hand-written {hand[0]}: {params(lpuc, path, extra):,} parameters")
            for bucket, c in cycles.items():
                line = f"  {bucket}: {c:,} cycles predicted"
                if theirs:
                    (hb, hc), = theirs.items()
                    line += f"; hand-written ({hb}) {hc:,}, ratio {c / hc:.3f}"
                print(line)


main()

#!/usr/bin/env python3
"""Programs across chips: for each model and chip count, lpuc --report --json
(one compilation) and the figures a user of a multi-chip system asks first:
predicted latency, the pipelined interval and inferences per second when
requests stream through the stages, link traffic, compile wall time and
peak memory. Then tensor parallelism (--partition tensor): latency and
speedup over one chip, against a multi-chip physical bound (each chip's
share of the MXM work at the f16 peak, and the busiest link's vectors at 21
cycles each). Figures, not pass/fail.

usage: multichip_bench.py LPUC [--only NAME,...] [--timeout SECONDS] [--memory-gb GB]
(--only tensor / --only hybrid / --only scale: that table only; scale
compiles and simulates Llama-2-13B and -70B shapes, minutes each)
"""
import argparse
import json
import math
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (name, file, lpuc flags, chip counts)
CASES = [
    ("bert-base S=128", "examples/bert.lpu", ["--entry", "pooled", "--bucket", "S=128"], ["1", "2", "4", "8"]),
    ("bert-base S=512", "examples/bert.lpu", ["--entry", "pooled", "--bucket", "S=512"], ["auto", "4"]),
    ("bert-base B=8 S=128", "examples/bert.lpu", ["--entry", "encode"], ["auto", "4"]),
    ("gpt2 S=64", "examples/gpt2.lpu", ["--bucket", "S=64"], ["auto", "2", "4"]),
    ("gpt2 S=256", "examples/gpt2.lpu", ["--bucket", "S=256"], ["auto", "4"]),
    ("bert-large S=128", "examples/bert_large.lpu", ["--bucket", "S=128"], ["auto", "8"]),
    ("deep mlp 128 blocks", "bench/deep.lpu", [], ["auto", "8", "32", "128"]),
]

# Tensor parallel: (name, file, lpuc flags, chip counts)
TENSOR_CASES = [
    ("bert-base layer S=128", "bench/bert_layer.lpu", [], ["1", "2", "4", "8"]),
    ("bert-base S=128", "examples/bert.lpu", ["--entry", "pooled", "--bucket", "S=128"], ["1", "2", "4", "8"]),
    # GPT-2 needs 2 chips: its speedup is over 2.
    ("gpt2 S=64", "examples/gpt2.lpu", ["--bucket", "S=64"], ["2", "4", "8"]),
]

# Hybrid (--partition hybrid: tensor within each node of 8 chips, pipeline
# across nodes) beside the other kinds: (name, file, lpuc flags,
# [(partition, chips)])
HYBRID_CASES = [
    ("bert-large S=128", "examples/bert_large.lpu", ["--bucket", "S=128"],
     [("pipeline", "auto"), ("tensor", "8"), ("hybrid", "16"), ("hybrid", "24")]),
    # One Llama-2-13B-shaped layer (D=5120, FFN 13824, 40 heads) on a node:
    # what each stage of the 13B model costs the compiler.
    ("llama2-13b 1 layer", "bench/llama.lpu", ["--entry", "llama2_13b_layer"], [("tensor", "8")]),
]

# Scale, timing-only: Llama-2-shaped decoders in f16 (hybrid), the 13B on
# the fewest nodes that hold it (--chips auto), the 70B on a 1,024-chip
# system, compiled and then simulated without weights or data:
# (name, file, lpuc flags, --chips)
SCALE_CASES = [
    ("llama2-13b S=128", "bench/llama.lpu", ["--entry", "llama2_13b", "--partition", "hybrid"], "auto"),
    ("llama2-70b S=128", "bench/llama.lpu", ["--entry", "llama2_70b", "--partition", "hybrid"], "1024"),
]

MACS_PER_CYCLE = 102400  # groqchip1: 4 planes of 320 x 320 at a quarter rate in f16
LANES = 320
LINK_CYCLES = 21


def ir_values(text):
    """Each value's dtype and shape in IR text, by name."""
    values = {}
    for m in re.finditer(r"(%\d+) = (\w+) ([^\n]*?): (\w+)\[([\d, ]*)\]", text):
        shape = [int(d) for d in m.group(5).split(",") if d.strip()]
        values[m.group(1)] = (m.group(2), m.group(3), m.group(4), shape)
    return values


def macs(text):
    """The matmuls' multiply-accumulates of IR text."""
    values = ir_values(text)
    total = 0
    for op, rest, _, shape in values.values():
        if op == "matmul":
            lhs = rest.split(",")[0].strip()
            total += math.prod(shape) * values[lhs][3][-1]
    return total


def busiest_link(text):
    """The most 320-lane stream vectors any one directed link carries."""
    per_link = {}
    for m in re.finditer(r"transfer %\d+ \{from = (\d+), to = (\d+)\} : (\w+)\[([\d, ]*)\]", text):
        shape = [int(d) for d in m.group(4).split(",") if d.strip()]
        rows = math.prod(shape[:-1])
        streams = 2 if m.group(3) in ("f16", "bf16", "i16") else 4 if m.group(3) in ("f32", "i32") else 1
        key = (m.group(1), m.group(2))
        # Rows of a full vector or more whose last vector is at most half
        # full go with the next rows' last vectors side by side
        # (docs/partitioning.md, "Packed tails"; the tensor partition's
        # chips are one lockstep group): a group of lanes // tail rows
        # sends one vector of tails.
        tail = shape[-1] % LANES
        vectors = rows * math.ceil(shape[-1] / LANES)
        if tail and 2 * tail <= LANES and shape[-1] >= LANES:
            group = LANES // tail
            vectors = rows * (shape[-1] // LANES) + math.ceil(rows / group)
        per_link[key] = per_link.get(key, 0) + vectors * streams
    return max(per_link.values(), default=0)


def limited(gb):
    """A preexec_fn capping the child's address space at `gb` GB (None: no cap)."""
    if not gb:
        return None
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (int(gb * 2**30), int(gb * 2**30)))


def run(lpuc, path, flags, chips, timeout, extra=(), memory_gb=None):
    """The report (or None), an error line, wall seconds and the child's own
    peak resident kilobytes."""
    cmd = [lpuc, os.path.join(ROOT, path), "--report", "--json", "--chips", chips] + flags + list(extra)
    code, out, wall, rss = timed(cmd, timeout, memory_gb)
    if code != 0:
        return None, out, wall, rss
    return json.loads(out), "", wall, rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lpuc")
    ap.add_argument("--only", default="")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--memory-gb", type=float, default=16,
                    help="address-space cap of the scale table's runs (the target: 16 GB)")
    args = ap.parse_args()
    only = [s for s in args.only.split(",") if s]
    print(f"# lpuc --report --json on {os.cpu_count()} cores; clock from the chip file")
    print(f"{'model':22} {'chips':>5} {'topology':>12} {'cycles':>10} {'latency us':>11} "
          f"{'interval':>10} {'inf/s':>9} {'link MB':>8} {'compile s':>9} {'peak MB':>8}")
    for name, path, flags, counts in CASES:
        if only and not any(o in name for o in only):
            continue
        for chips in counts:
            report, err, wall, rss = run(args.lpuc, path, flags, chips, args.timeout)
            if report is None:
                print(f"{name:22} {chips:>5}  {err}")
                continue
            clock = report["clock_mhz"]
            for b in report["buckets"]:
                used = len(b.get("chips", [])) or 1
                interval = b.get("pipelined_interval", b["cycles"]) or b["cycles"]
                link = sum(c["link_bytes_sent"] for c in b.get("chips", [])) / 1e6
                print(f"{name:22} {used:>5} {b.get('topology', 'single'):>12} {b['cycles']:>10} "
                      f"{b['cycles'] / clock:>11.1f} {interval:>10} {clock * 1e6 / interval:>9.0f} "
                      f"{link:>8.2f} {wall:>9.1f} {rss / 1024:>8.0f}")
            sys.stdout.flush()
    tensor(args, [o for o in only if o != "tensor"] if "tensor" in only else only)
    hybrid(args, [o for o in only if o != "hybrid"] if "hybrid" in only else only)
    scale(args, [o for o in only if o != "scale"] if "scale" in only else only)


def timed(cmd, timeout, memory_gb=None):
    """Exit code, stdout (or the first error line), wall seconds and the
    child's own peak resident KB (os.wait4; output to files, so that
    waiting cannot block on a full pipe)."""
    with tempfile.TemporaryFile() as out_f, tempfile.TemporaryFile() as err_f:
        start = time.time()
        proc = subprocess.Popen(cmd, stdout=out_f, stderr=err_f, preexec_fn=limited(memory_gb))
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        timer.cancel()
        out_f.seek(0)
        err_f.seek(0)
        out, err = out_f.read().decode(), err_f.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    first = next((l for l in err.splitlines() if "error" in l), err[:200] or "killed")
    return code, out if code == 0 else first.strip(), time.time() - start, usage.ru_maxrss


def scale(args, only):
    print()
    print(f"# timing-only at scale: lpuc --chips as listed, then lpurun --timing-only on every core, "
          f"each within {args.memory_gb:g} GB of address space")
    print(f"{'model':18} {'chips':>5} {'scheduled':>9} {'cycles':>10} {'latency us':>10} "
          f"{'interval':>9} {'compile s':>9} {'peak GB':>7} {'program MB':>10} {'simulate s':>10} "
          f"{'peak GB':>7} {'as predicted':>12}")
    lpurun = os.path.join(os.path.dirname(args.lpuc), "lpurun")
    for name, path, flags, chips in SCALE_CASES:
        if only and not any(o in name for o in only):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            program = os.path.join(tmp, "p.lpx")
            report, err, wall, rss = run(args.lpuc, path, flags, chips, args.timeout, ["-o", program],
                                         args.memory_gb)
            if report is None:
                print(f"{name:18}  {err}")
                continue
            b = report["buckets"][0]
            size = os.path.getsize(program) / 1e6
            code, out, sim_wall, sim_rss = timed(
                [lpurun, program, "--timing-only", "--threads", str(os.cpu_count() or 1),
                 "--report", "json"], args.timeout, args.memory_gb)
            simulated = json.loads(out)["cycles"] if code == 0 else None
            print(f"{name:18} {len(b['chips']):>5} {b.get('scheduled_chips', 1):>9} {b['cycles']:>10} "
                  f"{b['cycles'] / report['clock_mhz']:>10.0f} {b.get('pipelined_interval') or b['cycles']:>9} "
                  f"{wall:>9.0f} {rss / 1024 / 1024:>7.1f} {size:>10.0f} {sim_wall:>10.0f} "
                  f"{sim_rss / 1024 / 1024:>7.1f} "
                  f"{('yes' if simulated == b['cycles'] else f'no: {simulated}') if code == 0 else out:>12}")
            sys.stdout.flush()


def hybrid(args, only):
    print()
    print("# --partition hybrid beside pipeline and tensor; interval: the longest stage's span")
    print(f"{'model':22} {'partition':>9} {'chips':>5} {'topology':>12} {'cycles':>10} "
          f"{'latency us':>11} {'interval':>10} {'inf/s':>8} {'scheduled':>9} {'compile s':>9} "
          f"{'peak MB':>8}")
    for name, path, flags, runs in HYBRID_CASES:
        if only and not any(o in name for o in only):
            continue
        for kind, chips in runs:
            report, err, wall, rss = run(args.lpuc, path, flags, chips, args.timeout,
                                         ["--partition", kind])
            if report is None:
                print(f"{name:22} {kind:>9} {chips:>5}  {err}")
                continue
            clock = report["clock_mhz"]
            for b in report["buckets"]:
                used = len(b.get("chips", [])) or 1
                interval = b.get("pipelined_interval") or b["cycles"]
                print(f"{name:22} {kind:>9} {used:>5} {b.get('topology', 'single'):>12} "
                      f"{b['cycles']:>10} {b['cycles'] / clock:>11.1f} {interval:>10} "
                      f"{clock * 1e6 / interval:>8.0f} {b.get('scheduled_chips', 1):>9} "
                      f"{wall:>9.1f} {rss / 1024:>8.0f}")
            sys.stdout.flush()


def tensor(args, only):
    print()
    print("# --partition tensor; bound: max(MXM MACs / chips / 102,400, busiest link's vectors x 21)")
    print(f"{'model':22} {'chips':>5} {'cycles':>9} {'latency us':>11} {'speedup':>8} "
          f"{'mxm bound':>9} {'link bound':>10} {'ratio':>6} {'link MB':>8} {'compile s':>9}")
    for name, path, flags, counts in TENSOR_CASES:
        if only and not any(o in name for o in only):
            continue
        ir = subprocess.run([args.lpuc, os.path.join(ROOT, path), "--emit=ir"] + flags,
                            capture_output=True, text=True)
        if ir.returncode != 0:
            # Too big for one chip (E0600): a pipeline's stages hold every
            # matmul once.
            ir = subprocess.run([args.lpuc, os.path.join(ROOT, path), "--emit=ir", "--chips", counts[0],
                                 "--partition", "pipeline"] + flags, capture_output=True, text=True)
        total = macs(ir.stdout)
        one = None
        for chips in counts:
            extra = ["--partition", "tensor"] if chips != "1" else []
            report, err, wall, _ = run(args.lpuc, path, flags, chips, args.timeout, extra)
            if report is None:
                print(f"{name:22} {chips:>5}  {err}")
                continue
            b = report["buckets"][0]
            link_vectors = 0
            if chips != "1":
                pir = subprocess.run([args.lpuc, os.path.join(ROOT, path), "--emit=ir", "--chips", chips,
                                      "--partition", "tensor"] + flags, capture_output=True, text=True)
                link_vectors = busiest_link(pir.stdout)
            mxm = total / int(chips) / MACS_PER_CYCLE
            link = link_vectors * LINK_CYCLES
            bound = max(mxm, link)
            one = one or b["cycles"]
            lbytes = sum(c["link_bytes_sent"] for c in b.get("chips", [])) / 1e6
            print(f"{name:22} {chips:>5} {b['cycles']:>9} {b['cycles'] / report['clock_mhz']:>11.1f} "
                  f"{one / b['cycles']:>8.2f} {mxm:>9.0f} {link:>10.0f} {b['cycles'] / bound:>6.2f} "
                  f"{lbytes:>8.2f} {wall:>9.1f}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Compile time and schedule quality of every example, then BERT-base and
ResNet-50 next to the figures Groq published. Figures, not pass/fail.

usage: compile_bench.py LPUC [--examples a,b,...] [--timeout SECONDS] [--chip NAME]

Each example is compiled once, `lpuc FILE -o X.lpx --report --json`: the
wall and CPU seconds and the peak resident memory are those of that process
(the report adds only the printing of a few numbers to `lpuc FILE -o X.lpx`).
An example that does not compile prints its exit code and the first line of
its diagnostics; one that runs past the timeout is killed and printed as
such; the bench goes on.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Groq's own compiler on its own models: build times from its published
# material, in minutes (about 15 for BERT-base, about 18 for ResNet-50).
GROQ_COMPILE_MINUTES = {"bert": 15, "resnet50": 18}
# ResNet-50 at batch 1 on the first TSP: 20,400 images per second (Abts et
# al., "Think Fast: A Tensor Streaming Processor for Accelerating Deep
# Learning Workloads", ISCA 2020).
ISCA_RESNET50_IPS = 20400


class Outcome:
    """One example's compilation: timings and the report, or why not."""

    def __init__(self, name, wall, cpu, peak_mb, report=None, failure=None):
        self.name, self.wall, self.cpu, self.peak_mb = name, wall, cpu, peak_mb
        self.report, self.failure = report, failure


def compile_example(lpuc, path, chip, timeout, tmp, select=()):
    name = os.path.splitext(os.path.basename(path))[0]
    print(f"  compiling {name} {' '.join(select)}...", file=sys.stderr, flush=True)
    cmd = [lpuc, path, "-o", os.path.join(tmp, name + ".lpx"), "--report", "--json",
           "--chip", chip] + list(select)
    # The child's own rusage (os.wait4): its CPU time and peak resident set
    # (ResNet-50 at N=8 once took 5.9 GB). Output goes to files, so that
    # waiting cannot block on a full pipe; a timer kills a child past the
    # timeout.
    with tempfile.TemporaryFile() as out_f, tempfile.TemporaryFile() as err_f:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out_f, stderr=err_f)
        killed = threading.Event()
        timer = threading.Timer(timeout, lambda: (killed.set(), proc.kill()))
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        timer.cancel()
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out_f.seek(0)
        err_f.seek(0)
        out, err = out_f.read().decode(), err_f.read().decode(errors="replace")
    cpu = usage.ru_utime + usage.ru_stime
    peak_mb = usage.ru_maxrss / 1024  # Linux: kilobytes
    # The timer may fire just after the child ended on its own: only a
    # child that died of the timer's SIGKILL timed out.
    if killed.is_set() and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
        return Outcome(name, wall, cpu, peak_mb, failure=f"timed out after {timeout:g} s, killed")
    if proc.returncode != 0:
        first = next((line for line in err.splitlines() if line.strip()), "(no diagnostics)")
        return Outcome(name, wall, cpu, peak_mb, failure=f"exit {proc.returncode}: " +
                       first.replace(ROOT + "/", "").replace(tmp + "/", ""))
    return Outcome(name, wall, cpu, peak_mb, report=json.loads(out))


def bucket_label(bucket):
    return " ".join(f"{k}={v}" for k, v in bucket.items()) or "-"


def print_examples(outcomes, title="per entry and bucket",
                   what="the whole file's compilation"):
    print(f"== Compile time and schedule quality, {title}")
    print(f"(wall / CPU seconds and peak resident MB of {what}; cycles, bound and physical "
          "bound (docs/scheduler.md) from lpuc --report --json; MXM = busy cycles over cycles x planes)")
    head = (f"{'example':<12} {'wall s':>8} {'cpu s':>8} {'peak MB':>8}  {'entry':<10} {'bucket':<10} "
            f"{'cycles':>11} {'time us':>10} {'bound':>11} {'ratio':>6} {'physical':>9} {'ratio':>6} "
            f"{'MXM %':>6}  bound by; physical bound by")
    print(head)
    for o in outcomes:
        lead = f"{o.name:<12} {o.wall:>8.2f} {o.cpu:>8.2f} {o.peak_mb:>8.0f}"
        if o.failure:
            print(f"{lead}  {o.failure}")
            continue
        for i, b in enumerate(o.report["buckets"]):
            mxm = 100 * b["utilisation"]["mxm"]
            print(f"{lead if i == 0 else ' ' * len(lead)}  {b['entry']:<10} "
                  f"{bucket_label(b['bucket']):<10} {b['cycles']:>11} {b['time_us']:>10.1f} "
                  f"{b['lower_bound']:>11} {b['ratio']:>6.2f} {b['physical_bound']:>9} "
                  f"{b['physical_ratio']:>6.2f} {mxm:>6.1f}  "
                  f"{b['lower_bound_reason']}; {b['physical_resource']}")


# bert.lpu's pooled entry at B=1 and S=128: the model Groq's figure is for,
# without the file's other buckets (S=512, encode B=8).
BERT_S128 = ("--entry", "pooled", "--bucket", "S=128")


def print_groq_compile(rows):
    """rows: (label, Outcome or None, Groq's minutes)."""
    print()
    print("== Compile time next to Groq's published build times")
    print(f"{'model':<47} {'lpuc wall':>10} {'lpuc cpu':>10} {'peak MB':>8} {'Groq (published)':>17}")
    for label, o, minutes in rows:
        groq = f"~{minutes} min"
        if o is None:
            print(f"{label:<47} {'not run (--examples)':>30} {groq:>17}")
            continue
        print(f"{label:<47} {o.wall:>8.1f} s {o.cpu:>8.1f} s {o.peak_mb:>8.0f} {groq:>17}")
        if o.failure:
            # The time then says how far lpuc got before it stopped.
            print(f"{'':<6}did not compile: {o.failure}")


def print_resnet_throughput(o):
    print()
    print("== ResNet-50, batch 1, predicted throughput next to the real chip")
    if o is None:
        print("resnet50: not run (--examples)")
    elif o.failure:
        code = re.search(r"E\d{4}", o.failure)
        print(f"resnet50: no prediction, it did not compile "
              f"({code.group(0) if code else o.failure.split(':')[0]}, see above)")
    if o is None or o.failure:
        print(f"ISCA 2020 (TSP, batch 1): {ISCA_RESNET50_IPS:,} images/s")
        return
    clock = o.report["clock_mhz"] * 1e6
    b = next(b for b in o.report["buckets"] if b["bucket"].get("N") == 1)
    ips = clock / b["cycles"]
    print(f"lpuc on {o.report['chip']}: {b['cycles']} cycles at {o.report['clock_mhz']:g} MHz "
          f"= {ips:,.0f} images/s (latency {b['time_us']:.1f} us)")
    print(f"ISCA 2020 (TSP, batch 1): {ISCA_RESNET50_IPS:,} images/s; "
          f"predicted / published = {ips / ISCA_RESNET50_IPS:.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lpuc")
    ap.add_argument("--examples", help="comma-separated names from examples/ (default: all)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per compile (600)")
    ap.add_argument("--chip", default="groqchip1")
    args = ap.parse_args()
    known = sorted(f[:-4] for f in os.listdir(os.path.join(ROOT, "examples")) if f.endswith(".lpu"))
    names = args.examples.split(",") if args.examples else known
    unknown = [n for n in names if n not in known]
    if unknown:
        sys.exit(f"compile_bench: no example {', '.join(unknown)} (known: {', '.join(known)})")
    print(f"chip {args.chip}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}, timeout {args.timeout:g} s per compile")
    with tempfile.TemporaryDirectory() as tmp:
        outcomes = [compile_example(args.lpuc, os.path.join(ROOT, "examples", n + ".lpu"),
                                    args.chip, args.timeout, tmp) for n in names]
        by_name = {o.name: o for o in outcomes}
        bert = (compile_example(args.lpuc, os.path.join(ROOT, "examples", "bert.lpu"), args.chip,
                                args.timeout, tmp, BERT_S128)
                if "bert" in names else None)
        print_examples(outcomes)
        if bert:
            print()
            print_examples([bert], "BERT-base's one-chip bucket", " ".join(BERT_S128))
        print_groq_compile([
            ("BERT-base (bert.lpu, entry pooled, B=1 S=128)", bert, GROQ_COMPILE_MINUTES["bert"]),
            ("ResNet-50 (resnet50.lpu, buckets N=1 and 8)", by_name.get("resnet50"),
             GROQ_COMPILE_MINUTES["resnet50"])])
        print_resnet_throughput(by_name.get("resnet50"))


main()

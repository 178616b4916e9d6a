#!/usr/bin/env python3
"""A batch of lpu-smith programs through the differential harness: a fixed
seed range (the CI test) or an open-ended campaign (scripts/fuzz-models.sh).

    smith_campaign.py [--seeds A:B | --count N | --seconds S] [--first SEED]
                      [--features LIST] [--out DIR] [--reduce] [--bin DIR]
                      [--timeout S] [--quiet]

Prints one line per failure as it is found, then a summary: programs and
programs per hour, the count of each outcome, the E08xx refusals by code
and by message kind, the known bugs matched, and each distinct failure (by
its signature: kind, tool and message without numbers) with its program.
With --out DIR every failing program is saved there as
KIND-SEED.lpu (with the harness's verdict in KIND-SEED.txt), and with
--reduce the first program of each distinct failure is reduced
(smith_reduce.py) to KIND-SEED.reduced.lpu. Exits 1 when any program
failed (known bugs included), else 0.
"""
import collections
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lpu_smith  # noqa: E402
import smith_check  # noqa: E402


def main(argv):
    import argparse
    p = argparse.ArgumentParser(description="a batch or campaign of lpu-smith programs")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--seeds", help="A:B, the seeds A .. B-1")
    g.add_argument("--count", type=int)
    g.add_argument("--seconds", type=float)
    p.add_argument("--first", type=int, default=None,
                   help="the first seed of --count/--seconds (default: from the clock)")
    p.add_argument("--features", default="default")
    p.add_argument("--out")
    p.add_argument("--reduce", action="store_true")
    p.add_argument("--reduce-seconds", type=float, default=300)
    p.add_argument("--bin", default=None, help="the tools (default: lpuc on PATH, else build/bin)")
    p.add_argument("--typecheck-only", action="store_true",
                   help="only the type checker: every program must pass it")
    p.add_argument("--compile-only", action="store_true",
                   help="only lpuc (checker, lowering, -o): crashes, hangs, refusals")
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--vary-flags", action="store_true",
                   help="compile each program with one of smith_check.FLAG_MIX (by seed)")
    p.add_argument("--memory-limit", type=float, default=smith_check.MEMORY_LIMIT / 2 ** 30,
                   help="GiB of address space per tool run, 0 for none (ASan needs none)")
    p.add_argument("--json", help="also write the summary as JSON to this file")
    a = p.parse_args(argv)
    feats = lpu_smith.parse_features(a.features)
    # Absolute: the harness runs each tool from a work directory of its own.
    a.bin = os.path.abspath(a.bin or smith_check.default_bindir())
    smith_check.MEMORY_LIMIT = int(a.memory_limit * 2 ** 30)
    if a.seeds:
        lo, hi = (int(x) for x in a.seeds.split(":"))
        seeds = iter(range(lo, hi))
    else:
        first = a.first if a.first is not None else int(time.time()) % 1_000_000 * 1000
        seeds = iter(range(first, first + (a.count if a.count is not None else 10 ** 12)))
    deadline = time.time() + a.seconds if a.seconds else None
    if a.out:
        os.makedirs(a.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="smith-")
    kinds, codes, messages, tags = (collections.Counter() for _ in range(4))
    distinct = collections.OrderedDict()   # signature -> [(seed, path, outcome)]
    start, n = time.time(), 0
    # `kill PID` ends a campaign as Ctrl-C does: with its summary.
    import signal
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        for seed in seeds:
            if deadline and time.time() >= deadline:
                break
            src = os.path.join(tmp, f"s{seed}.lpu")
            text = lpu_smith.generate(seed, feats)
            if a.vary_flags and smith_check.FLAG_MIX[seed % len(smith_check.FLAG_MIX)]:
                # Kept in the program, so its reproduction and reduction use them.
                text = (f"// lpuc-flags: {' '.join(smith_check.FLAG_MIX[seed % len(smith_check.FLAG_MIX)])}\n"
                        + text)
            with open(src, "w") as f:
                f.write(text)
            if a.typecheck_only:
                o = smith_check.typecheck(src, a.bin, a.timeout)
            else:
                o = smith_check.check(src, os.path.join(tmp, "work"), a.bin, a.timeout, seed,
                                      compile_only=a.compile_only)
            n += 1
            kinds[o.kind] += 1
            for t in o.tags:
                tags[t] += 1
            if o.kind == "refused":
                codes[o.code] += 1
                messages[f"{o.code} {smith_check.message_kind(o.message)}"] += 1
            if o.failed:
                sig = o.signature()
                known = f" [known: {', '.join(o.tags)}]" if o.tags else ""
                saved = src
                if a.out:
                    saved = os.path.join(a.out, f"{o.kind}-{seed}.lpu")
                    shutil.copy(src, saved)
                    with open(saved[:-4] + ".txt", "w") as f:
                        f.write(json.dumps(o.as_dict(), indent=1) + "\n")
                first_of_kind = sig not in distinct
                distinct.setdefault(sig, []).append((seed, saved, o))
                if not a.quiet:
                    print(f"seed {seed}: {o.kind}{known}: {o.detail}", flush=True)
                if a.reduce and a.out and first_of_kind:
                    import smith_reduce
                    out = saved[:-4] + ".reduced.lpu"
                    smith_reduce.reduce_file(saved, out, a.bin, a.timeout, seed,
                                             a.reduce_seconds, verbose=False)
                    if not a.quiet:
                        print(f"  reduced: {out}", flush=True)
            os.unlink(src)
    except KeyboardInterrupt:
        pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    elapsed = max(time.time() - start, 1e-9)
    print(f"programs: {n} in {elapsed:.0f} s ({n * 3600 / elapsed:.0f} programs/hour), "
          f"features: {a.features}")
    print("outcomes: " + ", ".join(f"{k} {v}" for k, v in kinds.most_common()))
    if codes:
        print("refusals by code: " + ", ".join(f"{k} {v}" for k, v in codes.most_common()))
        print("refusals by message kind:")
        for k, v in messages.most_common():
            print(f"  {v:6d}  {k}")
    if tags:
        print("known bugs matched: " + ", ".join(f"{k} {v}" for k, v in tags.most_common()))
    failed = sum(len(v) for v in distinct.values())
    print(f"failures: {failed} ({len(distinct)} distinct)")
    for sig, hits in distinct.items():
        seed, saved, o = hits[0]
        known = f" [known: {', '.join(o.tags)}]" if o.tags else ""
        print(f"  {len(hits):4d} x {o.kind}{known}: {o.detail[:200]}")
        print(f"         first: seed {seed}" + (f", {saved}" if a.out else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"programs": n, "seconds": elapsed, "outcomes": dict(kinds),
                       "refusals": dict(codes), "refusal_kinds": dict(messages), "known": dict(tags),
                       "failures": [{"signature": s, "count": len(h), "seeds": [x[0] for x in h],
                                     "outcome": h[0][2].as_dict()} for s, h in distinct.items()]},
                      f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

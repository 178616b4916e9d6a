"""Decode steps with a KV cache kept as state (docs/generation.md), predicted
by lpuc --report --json on groqchip1 (the simulator counts the same
cycles): for each model, the chips, one decode step's cycles and time,
tokens/s for one sequence at the chip's clock, the physical bound of the
step (docs/scheduler.md, "The physical bound") with its resource and the
ratio, the compile seconds, and the published figure for the real chips
where there is one.

- GPT-2 small (examples/gpt2_decode.lpu, a 128-position cache) on three
  chips, a pipeline;
- Llama-2-7B's shape (bench/llama_decode.lpu: 32 layers, D = 4096, 32
  heads, FFN 11008, vocabulary 32,000, f16, a 4,096-position cache): two
  layers on 32 chips, and the whole model on CHIPS chips, each a hybrid
  partition (a layer is larger than a chip), next to Groq's 750 tokens/s
  for Llama-2-7B. Neither compiles yet: a chip's share of the caches
  does not fit beside its weights (docs/generation.md, "Not done yet");
  the bench prints lpuc's refusal.

usage: decode_bench.py LPUC [--only NAME,...] [--chips N]
"""
import argparse
import json
import os
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (name, file, flags, published tokens/s or None)
MODELS = [
    ("gpt2 decode", "examples/gpt2_decode.lpu", ["--entry", "decode", "--chips", "3", "--partition", "pipeline"],
     None),
    ("llama2-7b 2 layers", "bench/llama_decode.lpu",
     ["--entry", "llama2_7b_2layers", "--chips", "32", "--partition", "hybrid"], None),
    ("llama2-7b", "bench/llama_decode.lpu", ["--entry", "llama2_7b", "--chips", "{chips}", "--partition", "hybrid"],
     750),
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("lpuc")
    parser.add_argument("--only", default="")
    parser.add_argument("--chips", default="72", help="chips for the whole Llama-2-7B (default: a rack, 72)")
    args = parser.parse_args()
    only = [o for o in args.only.split(",") if o]
    print(f"{'model':<20} {'chips':>5} {'cycles':>11} {'us':>9} {'tokens/s':>9} "
          f"{'physical':>10} {'ratio':>6}  {'bound by':<16} {'compile s':>9}  published")
    for name, path, flags, published in MODELS:
        if only and name not in only:
            continue
        flags = [f.format(chips=args.chips) for f in flags]
        start = time.monotonic()
        r = subprocess.run([args.lpuc, os.path.join(ROOT, path), "--report", "--json", *flags],
                           capture_output=True, text=True)
        seconds = time.monotonic() - start
        if r.returncode != 0:
            first = r.stderr.strip().splitlines()[0] if r.stderr.strip() else f"exit {r.returncode}"
            print(f"{name:<20} does not compile: {first}")
            continue
        out = json.loads(r.stdout)
        b = out["buckets"][0]
        cycles = b["cycles"]
        chips = len(b.get("chips", [])) or 1
        tokens = out["clock_mhz"] * 1e6 / cycles
        pub = f"{published} tokens/s (Groq)" if published else ""
        print(f"{name:<20} {chips:>5} {cycles:>11,} {b['time_us']:>9.1f} {tokens:>9.1f} "
              f"{b['physical_bound']:>10,} {b['physical_ratio']:>6.2f}  {b['physical_resource']:<16} "
              f"{seconds:>9.1f}  {pub}")


if __name__ == "__main__":
    main()

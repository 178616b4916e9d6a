"""Decode steps with a KV cache kept as state (docs/generation.md), predicted
by lpuc --report --json on groqchip1 (the simulator counts the same
cycles): for each model, the chips, one decode step's cycles and time,
tokens/s for one sequence at the chip's clock, the physical bound of the
step (docs/scheduler.md, "The physical bound") with its resource and the
ratio, the compile seconds and peak memory, and the published figure for
the real chips where there is one.

- GPT-2 small (examples/gpt2_decode.lpu, a 128-position cache) on three
  chips, a pipeline;
- Llama-2-7B's shape (bench/llama_decode.lpu: 32 layers, D = 4096, 32
  heads, FFN 11008, vocabulary 32,000, f16, a 4,096-position cache): one
  layer on a node's 8 chips (tensor parallel, the cache split by heads),
  two layers with the embedding and the head on as many nodes as they
  need, and the whole model on as many nodes as it needs (`--chips auto`,
  12 nodes, about three layers a node, their weights packed to fit) and
  on 18 (two layers a node, stored in rows, faster), hybrid: each layer
  over a node, the layers
  pipelined over nodes; at most about 100 s and 12 GiB (the middle
  nodes share schedules, docs/partitioning.md), next to Groq's 750
  tokens/s. When the whole model does not compile (a machine with less
  memory) the bench estimates it from the first two:
  the two-layer program plus 30 more layers at one layer's cycles (a
  decode step runs the layers one after another).
- Llama-2-70B's shape (80 layers, D = 8192, 64 query and 8 key-value
  heads, FFN 28672) in int8, weights and activations (bench/
  llama_decode.lpu's W8: activations quantized per tensor, weights per
  column, the MXM's int8 rate), a 4,096-position f16 cache, on as many
  nodes as it needs; next to Groq's 300 tokens/s on 576 chips.

usage: decode_bench.py LPUC [--only NAME,...]
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (name, file, flags, published tokens/s or None)
MODELS = [
    ("gpt2 decode", "examples/gpt2_decode.lpu", ["--entry", "decode", "--chips", "3", "--partition", "pipeline"],
     None),
    ("llama2-7b layer", "bench/llama_decode.lpu",
     ["--entry", "llama2_7b_layer", "--chips", "8", "--partition", "tensor"], None),
    ("llama2-7b 2 layers", "bench/llama_decode.lpu",
     ["--entry", "llama2_7b_2layers", "--chips", "auto", "--partition", "hybrid"], None),
    ("llama2-7b", "bench/llama_decode.lpu", ["--entry", "llama2_7b", "--chips", "auto", "--partition", "hybrid"],
     750),
    ("llama2-7b 18 nodes", "bench/llama_decode.lpu",
     ["--entry", "llama2_7b", "--chips", "144", "--partition", "hybrid"], 750),
    ("llama2-70b int8", "bench/llama_decode.lpu",
     ["--entry", "llama2_70b_w8", "--chips", "auto", "--partition", "hybrid"], 300),
]
DEFAULT = ["gpt2 decode", "llama2-7b layer", "llama2-7b 2 layers", "llama2-7b", "llama2-7b 18 nodes",
           "llama2-70b int8"]


def compile_report(lpuc, path, flags):
    """lpuc's --report --json for one entry, its seconds and peak memory
    (GiB), or its first error line."""
    start = time.monotonic()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen([lpuc, os.path.join(ROOT, path), "--report", "--json", *flags], stdout=out, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    seconds = time.monotonic() - start
    peak = usage.ru_maxrss / 2**20  # KiB to GiB
    if p.returncode != 0:
        lines = stderr.strip().splitlines()
        first = lines[0] if lines else f"exit {p.returncode}" + (" (killed: out of memory?)" if p.returncode < 0 else "")
        return None, seconds, peak, first
    return json.loads(stdout), seconds, peak, None


def row(name, chips, cycles, us, clock, physical, resource, seconds, peak, published):
    tokens = clock * 1e6 / cycles
    pub = f"{published} tokens/s (Groq)" if published else ""
    print(f"{name:<22} {chips:>5} {cycles:>11,} {us:>9.1f} {tokens:>9.1f} {physical:>10,} "
          f"{cycles / physical:>6.2f}  {resource:<16} {seconds:>9.1f} {peak:>6.1f}  {pub}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("lpuc")
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    only = [o for o in args.only.split(",") if o] or DEFAULT
    print(f"{'model':<22} {'chips':>5} {'cycles':>11} {'us':>9} {'tokens/s':>9} "
          f"{'physical':>10} {'ratio':>6}  {'bound by':<16} {'compile s':>9} {'GiB':>6}  published")
    got = {}
    clock = 900
    for name, path, flags, published in MODELS:
        if name not in only:
            continue
        out, seconds, peak, error = compile_report(args.lpuc, path, flags)
        if error:
            print(f"{name:<22} does not compile: {error} ({seconds:.0f} s, {peak:.1f} GiB)")
            continue
        b = out["buckets"][0]
        clock = out["clock_mhz"]
        chips = len(b.get("chips", [])) or 1
        got[name] = b
        row(name, chips, b["cycles"], b["time_us"], clock, b["physical_bound"], b["physical_resource"], seconds,
            peak, published)
    layer, two = got.get("llama2-7b layer"), got.get("llama2-7b 2 layers")
    if layer and two and "llama2-7b" not in got:
        cycles = two["cycles"] + 30 * layer["cycles"]
        physical = two["physical_bound"] + 30 * layer["physical_bound"]
        chips = 8 * ((32 + 1) // 2 + 1)  # two layers a node, and the embedding's node
        row("llama2-7b (estimate)", chips, cycles, cycles / clock, clock, physical, "weight loads", 0, 0, 750)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Checks a run of Inputs/c2c_pair.lpuasm against the timing rules of
docs/isa.md, with the figures of the chip file:
  c2c_pair_check.py timing CHIP PROGRAM REPORT   (REPORT: lpurun --report=text)
  c2c_pair_check.py trace CHIP TRACE             (TRACE: lpurun --trace)
Prints one line per check for FileCheck; an assertion names what is wrong."""
import json
import re
import sys


def chip_figures(path):
    figures, latency = {}, {}
    for line in open(path):
        words = line.split("#")[0].split()
        if len(words) == 2 and words[1].isdigit():
            figures[words[0]] = int(words[1])
        elif len(words) == 5 and words[0] == "timing" and words[2] == "*":
            latency[words[1]] = int(words[3])
    return figures, latency


def nops_before(program, chip, queue, op):
    """The issue cycle of the first `op` of a queue (one nop, if any, before it)."""
    text = program.split(f"\nchip {chip}\n")[1].split("\nchip ")[0]
    body = text.split(f"queue {queue}\n")[1].split("\nqueue ")[0]
    m = re.match(r"\s*nop (\d+)\n\s*" + op, body)
    return int(m.group(1)) if m else 0


mode, chip = sys.argv[1], sys.argv[2]
f, lat = chip_figures(chip)
streams = 2  # f16
wire = streams * f["c2c_cycles_per_vector"]

if mode == "timing":
    program = open(sys.argv[3]).read()
    report = open(sys.argv[4]).read()
    # Slice s at position s + 2, the western links at 1 (docs/isa.md): a read
    # of slice s in cycle t is at the links in t + latency + s + 1.
    read0, read1 = nops_before(program, 0, "mem0", "read"), nops_before(program, 0, "mem1", "read")
    first_send = read0 + lat["read"] + 1
    assert read1 + lat["read"] + 2 == first_send, "the two halves of a row reach the link apart"
    assert nops_before(program, 0, "c2c0", "send") == first_send
    sends = [first_send, first_send + wire]  # back to back: the link is free again
    assert f"repeat 1 {wire}" in program
    arrivals = [s + wire + f["c2c_hop_cycles"] for s in sends]
    recv = nops_before(program, 1, "c2c6", "recv")
    assert recv == arrivals[0], f"recv at {recv}, the first row arrives at {arrivals[0]}"
    print("chip 1 receives each row in the cycle it arrives")
    # Received onto e0, e1 at the links; slice 0 one position east, slice 1 two.
    last_write = arrivals[-1] + lat["recv"] + 2
    cycles = last_write + lat["write"] + 1
    got = int(re.search(r"cycles: (\d+)", report).group(1))
    assert got == cycles, f"lpurun counts {got} cycles, the rules give {cycles}"
    print("cycles as the timing rules give")
elif mode == "trace":
    events = json.load(open(sys.argv[3]))["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    print("processes:", ", ".join(processes[p] for p in sorted(processes)))
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    for name in ("send", "recv"):
        on = sorted({(processes[e["pid"]], threads[(e["pid"], e["tid"])])
                     for e in events if e["ph"] == "X" and e["name"] == name})
        print(name, "on", on)
    sends = {e["args"]["sent"]: e for e in events if e["ph"] == "X" and e["name"] == "send"}
    recvs = [e for e in events if e["ph"] == "X" and e["name"] == "recv"]
    for r in recvs:
        s = sends[r["args"]["sent"]]
        assert s["ts"] == r["args"]["sent"]
        assert s["args"]["arrival"] == r["args"]["arrival"] == s["ts"] + wire + f["c2c_hop_cycles"]
        assert r["ts"] >= r["args"]["arrival"], "received before it arrived"
        assert s["args"]["to"] == f"chip {r['pid']} {r['args']['link']}"
        assert r["args"]["from"] == f"chip {s['pid']} {s['args']['link']}"
    print(len(recvs), "recv(s), each at or after its send's arrival")
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts.keys() == ends.keys()
    for i, s in starts.items():
        e = ends[i]
        assert s["ts"] in sends and sends[s["ts"]]["pid"] == s["pid"] and e["bp"] == "e"
        assert any(r["pid"] == e["pid"] and r["tid"] == e["tid"] and r["ts"] == e["ts"] for r in recvs)
    print(len(starts), "arrow(s) from a send to its recv")
    wires = [e for e in events if e["ph"] == "X" and threads[(e["pid"], e["tid"])].startswith("link ")]
    assert all(w["dur"] == wire and w["ts"] in sends for w in wires)
    print("link tracks:", sorted({(processes[w["pid"]], threads[(w["pid"], w["tid"])]) for w in wires}),
          len(wires), "value(s) on the wire")

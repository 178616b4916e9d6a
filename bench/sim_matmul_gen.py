#!/usr/bin/env python3
"""Writes the text form of an lpu program that multiplies A [M,K] by B [K,N]
(f16, or i8 with --dtype i8) into C [M,N] (f32, or i32) on one groqchip1,
tiled over the four MXM planes.

Used by bench/sim_matmul.sh (4096^3) and by the lit tests (small sizes, with
numpy as the reference). The schedule is computed here cycle by cycle, the
way a compiler would: every MEM read is issued so that its vector reaches the
MXM plane in the cycle the matmul consumes it, and every port, stream and
issue slot is checked before the program is written. Runs of regular
instructions are emitted as one instruction plus `repeat n d`.

Tensors (one block per 320 columns, so that each fits in a MEM slice):
  inputs  A0..A{kt-1}  f16 [M, 320]   columns 320t.. of A
          B0..B{nt-1}  f16 [K, 320]   columns 320j.. of B
  outputs C0..C{nt-1}  f32 [M, 320]   columns 320j.. of C
"""
import argparse
import sys
from collections import defaultdict

LANES = 320
MEM_VECTORS = 8192
WEST_SLICES = 44
WIDTH = 93               # positions across the chip: 88 slices + 5
READ_LAT, MM_LAT, ACC_LAT, IW_LAT = 2, 24, 2, 40
MM_ISSUE = 4             # f16 matmuls issue every 4 cycles on one queue
ISSUE = {"mm": MM_ISSUE}


def slice_pos(s):
    return s + 3 if s >= WEST_SLICES else s + 2


def plane_pos(p):
    return 0 if p < 2 else WIDTH - 1


class Schedule:
    def __init__(self):
        self.events = defaultdict(list)    # queue -> [(cycle, fmt, addr)]
        self.reads = {}                    # (slice, cycle) -> who
        self.writes = {}
        self.streams = {}                  # (stream, cycle) -> who
        self.last = 0

    def _port(self, table, s, c, who):
        if (s, c) in table:
            raise SystemExit(f"port conflict on slice {s} cycle {c}: {who} and {table[(s, c)]}")
        table[(s, c)] = who

    def _stream(self, st, c, who):
        if (st, c) in self.streams:
            raise SystemExit(f"stream conflict {st} cycle {c}: {who} and {self.streams[(st, c)]}")
        self.streams[(st, c)] = who

    def add(self, queue, cycle, fmt, addr=0):
        assert cycle >= 0, (queue, cycle, fmt)
        self.events[queue].append((cycle, fmt, addr))
        self.last = max(self.last, cycle)

    def read_to(self, queue, slice_, addr, stream, pos, arrive):
        """A MEM read whose vector is at position `pos` in cycle `arrive`."""
        c = arrive - READ_LAT - abs(slice_pos(slice_) - pos)
        self._port(self.reads, slice_, c, queue)
        self._stream(stream, c + READ_LAT, queue)
        self.add(queue, c, f"read s{slice_} {{A}} -> {stream}", addr)

    def write_from(self, queue, slice_, addr, stream, src_pos, emitted):
        c = emitted + abs(slice_pos(slice_) - src_pos)
        self._port(self.writes, slice_, c, queue)
        self.add(queue, c, f"write {stream} s{slice_} {{A}}", addr)

    def emit(self, out):
        for queue in sorted(self.events, key=lambda q: (q.rstrip("0123456789"), int(q.lstrip("abcdefghijklmnopqrstuvwxyz")))):
            evs = sorted(self.events[queue])
            out.append(f"queue {queue}")
            nxt = 0  # first cycle the queue may issue again
            i = 0
            while i < len(evs):
                c0, fmt, a0 = evs[i]
                j = i + 1
                d = step = None
                while j < len(evs) and evs[j][1] == fmt:
                    dc, da = evs[j][0] - evs[j - 1][0], evs[j][2] - evs[j - 1][2]
                    if d is None:
                        d, step = dc, da
                    elif (dc, da) != (d, step):
                        break
                    j += 1
                op = fmt.split()[0]
                interval = ISSUE.get(op, 1)
                if j - i > 1 and d < interval:
                    j = i + 1
                if c0 < nxt:
                    raise SystemExit(f"queue {queue}: cycle {c0} before {nxt}")
                if c0 > nxt:
                    out.append(f"  nop {c0 - nxt}")
                step_text = "" if j - i == 1 or step == 0 else (f"+{step}" if step > 0 else f"{step}")
                prefix = "@" if "read" in fmt or "write" in fmt else "a"
                out.append("  " + fmt.replace("{A}", f"{prefix}{a0}{step_text}"))
                if j - i > 1:
                    out.append(f"  repeat {j - i - 1} {d}")
                last = evs[j - 1][0]
                nxt = last + interval
                i = j


def generate(m, k, n, dt="f16"):
    w = 2 if dt == "f16" else 1
    acc_dt = "f32" if dt == "f16" else "i32"
    # int8 matmuls may issue every cycle; the schedule still spaces them 4
    # apart (one A vector per cycle is all two MEM ports can feed 4 planes).
    ISSUE["mm"] = MM_ISSUE if dt == "f16" else 1
    kt, nt = -(-k // LANES), -(-n // LANES)
    if m > 4096:
        raise SystemExit("M must be at most 4096 (accumulator rows per plane)")
    blocks = MEM_VECTORS // max(m, k)  # tensor blocks per slice group
    if blocks < 1:
        raise SystemExit("M and K must be at most 8192")

    def place(base, idx, width):
        group = idx // blocks
        return [base + width * group + b for b in range(width)], (idx % blocks) * max(m, k)

    a_place = [place(0, t, w) for t in range(kt)]
    b_place = [place(0 + w * (-(-kt // blocks)), j, w) for j in range(nt)]
    c_place = [place(WEST_SLICES, j, 4) for j in range(nt)]
    used_west = w * (-(-kt // blocks)) + w * (-(-nt // blocks))
    if used_west > WEST_SLICES or 4 * (-(-nt // blocks)) > WEST_SLICES:
        raise SystemExit("does not fit in SRAM")

    s = Schedule()
    # Per plane: matmul queue, weight-load queue, streams. West planes sit at
    # position 0 and take westward streams; east planes the opposite.
    mxq = {0: ("mxm0", "mxm1"), 1: ("mxm2", "mxm3"), 2: ("mxm6", "mxm7"), 3: ("mxm8", "mxm9")}
    act = {0: ("w0", "w1"), 1: ("w4", "w5"), 2: ("e8", "e9"), 3: ("e12", "e13")}
    wts = {0: ("w2", "w3"), 1: ("w6", "w7"), 2: ("e10", "e11"), 3: ("e14", "e15")}
    out_st = {0: "e0", 1: "e4", 2: "w8", 3: "w12"}
    mm_off = {0: 0, 1: 2, 2: 1, 3: 3}
    rows_k = [min(LANES, k - LANES * t) for t in range(kt)]

    def stream(name, i):
        return f"{name[0]}{int(name[1:]) + i}"

    def mem_queue(slice_, idx):
        # Any MEM queue of a hemisphere may drive any slice of it: one queue
        # per (purpose, plane, byte) keeps each queue's work regular.
        return f"mem{(WEST_SLICES if slice_ >= WEST_SLICES else 0) + idx}"

    def dist(slice_, p):
        return abs(slice_pos(slice_) - plane_pos(p))

    def choose(planes, period, slices_of, sign, choices):
        """Offsets (one per plane) such that no MEM slice gets two accesses
        in one cycle: plane p touches slice s at offset + sign*dist (mod
        period)."""
        import itertools
        for combo in itertools.permutations(choices, len(planes)):
            used = set()
            ok = True
            for p, o in zip(planes, combo):
                for sl in slices_of(p):
                    key = (sl, (o + sign * dist(sl, p)) % period)
                    if key in used:
                        ok = False
                    used.add(key)
            if ok:
                return dict(zip(planes, combo))
        raise SystemExit("no conflict-free offsets")

    LW_PERIOD = 8

    def load_weights(planes, rnd, t, start):
        """lw of the k-tile t rows of B_j into each plane, from `start`."""
        offs = choose(planes, LW_PERIOD, lambda p: b_place[4 * rnd + p][0], -1, range(LW_PERIOD))
        for p in planes:
            slices, base = b_place[4 * rnd + p]
            for r in range(rows_k[t]):
                c = start + LW_PERIOD * r + offs[p]
                for b in range(w):
                    s.read_to(mem_queue(slices[b], 8 + 2 * p + b), slices[b], base + LANES * t + r,
                              wts[p][b], plane_pos(p), c)
                s.add(mxq[p][1], c, f"lw {dt} p{p} {wts[p][0]}")
        return start + LW_PERIOD * rows_k[t] + LW_PERIOD

    cycle = 200
    rounds = -(-nt // 4)
    for rnd in range(rounds):
        planes = [p for p in range(4) if 4 * rnd + p < nt]
        # Weights of the first k-tile, loaded before the matmul phase.
        ready = load_weights(planes, rnd, 0, cycle)
        for t in range(kt):
            install = ready + 4
            for p in planes:
                s.add(mxq[p][0], install, f"iw p{p}")
            start = install + IW_LAT + 4
            slices, base = a_place[t]
            offs = choose(planes, MM_ISSUE, lambda p: slices, -1, range(MM_ISSUE))
            for p in planes:
                for i in range(m):
                    c = start + MM_ISSUE * i + offs[p]
                    for b in range(w):
                        s.read_to(mem_queue(slices[b], 2 * p + b), slices[b], base + i, act[p][b],
                                  plane_pos(p), c)
                    s.add(mxq[p][0], c, f"mm {dt} p{p} {act[p][0]} {{A}}", i)
            end = start + MM_ISSUE * m + 4
            ready = end
            if t + 1 < kt:
                # Double buffering: the next k-tile's weights load while
                # this one multiplies.
                ready = max(ready, load_weights(planes, rnd, t + 1, start + 1))
            cycle = max(end, ready)
        # Read the accumulators out into C.
        start = cycle + MM_LAT + 4
        offs = choose(planes, 4, lambda p: c_place[4 * rnd + p][0], 1, range(4))
        for p in planes:
            slices, base = c_place[4 * rnd + p]
            for i in range(m):
                c = start + 4 * i + offs[p]
                s.add(mxq[p][0], c, f"acc {acc_dt} p{p} {{A}} -> {out_st[p]}", i)
                for b in range(4):
                    s.write_from(mem_queue(slices[b], 4 * p + b), slices[b], base + i, stream(out_st[p], b),
                                 plane_pos(p), c + ACC_LAT)
        cycle = start + 4 * m + 200

    out = ["lpu-program 1", "target groqchip1", "topology single 1", "entry matmul",
           f"bucket"]
    for t in range(kt):
        sl, base = a_place[t]
        out.append(f"tensor input A{t} {dt} [{m},{LANES}] chip 0 slices {','.join(map(str, sl))} addr {base}")
    for j in range(nt):
        sl, base = b_place[j]
        out.append(f"tensor input B{j} {dt} [{k},{LANES}] chip 0 slices {','.join(map(str, sl))} addr {base}")
    for j in range(nt):
        sl, base = c_place[j]
        out.append(f"tensor output C{j} {acc_dt} [{m},{LANES}] chip 0 slices {','.join(map(str, sl))} addr {base}")
    out.append("chip 0")
    s.emit(out)
    return "\n".join(out) + "\n"


def write_tile_inputs(A, B, directory):
    """Saves A and B as the program's per-tile .npy inputs (zero-padded to
    whole tiles) and returns the lpurun flags that pass them, with an
    --output flag for each C tile (read back with read_tile_outputs)."""
    import numpy as np
    (m, k), n = A.shape, B.shape[1]
    kt, nt = -(-k // LANES), -(-n // LANES)
    Ap = np.zeros((m, kt * LANES), A.dtype); Ap[:, :k] = A
    Bp = np.zeros((k, nt * LANES), B.dtype); Bp[:, :n] = B
    args = []
    for t in range(kt):
        np.save(f"{directory}/A{t}.npy", Ap[:, LANES * t:LANES * (t + 1)])
        args.append(f"--input=A{t}={directory}/A{t}.npy")
    for j in range(nt):
        np.save(f"{directory}/B{j}.npy", Bp[:, LANES * j:LANES * (j + 1)])
        args.append(f"--input=B{j}={directory}/B{j}.npy")
        args.append(f"--output=C{j}={directory}/C{j}.npy")
    return args


def read_tile_outputs(directory, n):
    """C [M, N] from the C tiles lpurun wrote, padding columns dropped."""
    import numpy as np
    nt = -(-n // LANES)
    return np.concatenate([np.load(f"{directory}/C{j}.npy") for j in range(nt)], axis=1)[:, :n]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("m", type=int)
    ap.add_argument("k", type=int)
    ap.add_argument("n", type=int)
    ap.add_argument("-o", default="-")
    ap.add_argument("--dtype", choices=["f16", "i8"], default="f16")
    args = ap.parse_args()
    text = generate(args.m, args.k, args.n, args.dtype)
    if args.o == "-":
        sys.stdout.write(text)
    else:
        with open(args.o, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()

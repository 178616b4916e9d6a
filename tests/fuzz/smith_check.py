#!/usr/bin/env python3
"""The differential harness of lpu-smith: one .lpu program compiled by lpuc,
run on the simulator and in the reference interpreter with the same random
inputs and weights, every bucket of its entry; the outcome is one of

  pass         outputs agree (within the tolerance below), cycles as predicted
  refused      lpuc refused it with a documented E08xx code ("this form is
               not supported on the chip"; each cause has its own code,
               docs/diagnostics.md): not a failure, counted by code and by
               message kind
  nonfinite    the reference's output is not finite: the generator's bounds
               failed, not the toolchain (counted, not a failure)
  fragile      outputs differ, but a comparison, argmax or float-to-int cast
               reads a value the chip may round differently (matmul, sums,
               softmax): an ulp flips a whole element; not a failure
and the failures
  crash        a signal, a sanitizer report, an exit status other than 0/1,
               or exit 1 without a diagnostic (any tool)
  hang         a tool used more CPU than the timeout (or ten times that of
               wall time: a loaded machine is no hang)
  mismatch     outputs differ beyond the tolerance
  cycles       simulated cycles != lpuc's prediction (or another bucket ran)
  sim-refused  lpurun refused (exit 1) a program lpuc wrote: a simulator
               violation, a load error
  ref-refused  the reference interpreter refused a program the checker took
  lowering     lpuc --emit=ir (checker and lowering) failed with an E07xx or
               an -o compile failed with a code other than a refusal (E08xx
               but the scheduler's internal errors, INTERNAL_E08)
  frontend     the type checker rejected the program: a generator bug

The comparison reuses tests/lit/scheduler/Inputs/run_and_compare.py (its
compare(), random_input(), SEED and WEIGHTS_SEED, and each op's tolerance as
its tests give it, parsed by its parse_tolerance()). Which tolerance applies
comes from the program's IR (lpuc --emit=ir), not its text, so a reduced
program is judged by the same rule: an output no rounding op (matmul,
conv2d, float sums and means, softmax) reaches must be bit-exact; otherwise
each kind of rounding op reaching it adds its tolerance, scaled by the
longest chain of rounding ops and by the amplifying ops (exp, pow, log,
sqrt, rsqrt, div, a product of two rounded values) after one, plus the f16
rounding of the largest output value once per rounding op (a rounded
intermediate cancelled in a difference).

Known bugs (open today, fixed elsewhere) are tagged from the program and
outcome (KNOWN_BUGS), so a campaign can count them apart from new findings.

usage: smith_check.py FILE.lpu [--tmp DIR] [--bin DIR] [--timeout S] [--json]
"""
import json
import math
import os
import re
import signal
import subprocess
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "lit", "scheduler", "Inputs"))
import run_and_compare as rc  # noqa: E402

FAILURES = ("crash", "hang", "mismatch", "cycles", "sim-refused", "ref-refused", "lowering",
            "frontend")
# Each rounding op's tolerance as its tests give it to run_and_compare.py
# (docs/scheduler.md says why): matmul and conv2d the default, sums across
# lanes (tests/lit/scheduler/reduce.test), softmax (softmax.test).
OP_TOLERANCE_FLAGS = {
    "contraction": [],
    "reduction": ["--atol", "1e-4", "--rtol", "1e-5", "--ulps", "1", "--f16-ulps", "1"],
    "softmax": ["--atol", "1e-6", "--rtol", "1e-4", "--ulps", "1", "--f16-ulps", "1"],
}
ROUNDING_KIND = {"matmul": "contraction", "conv2d": "contraction", "reduce_sum": "reduction",
                 "reduce_mean": "reduction", "softmax": "softmax"}
AMPLIFYING = {"exp", "pow", "log", "sqrt", "rsqrt", "div", "rem"}
FRAGILE = {"eq", "ne", "lt", "le", "gt", "ge", "argmax"}
# Bytes of address space per tool run; 0 for none (ASan's shadow memory
# needs terabytes of address space: --memory-limit 0 there).
MEMORY_LIMIT = 4 << 30
WALL_FACTOR = 10          # wall-clock limit per tool run, in CPU limits
INT_INPUTS = (-2, 64)     # integer inputs (gather ids: some outside the table, clamped)
NUMPY_DTYPES = {"f16": "float16", "f32": "float32", "i32": "int32", "i16": "int16",
                "i8": "int8", "bool": "bool"}
SANITIZER = re.compile(r"(AddressSanitizer|UndefinedBehaviorSanitizer|LeakSanitizer|runtime error:)")
DIAGNOSTIC = re.compile(r"error(\[E\d{4}\])?:")
CODE = re.compile(r"error\[(E\d{4})\]: (.*)")
# The E08xx codes that are lpuc's bugs, not refusals (frontend/Diagnostics.def):
# a legalisation rewrite the verifier rejects, a schedule the encoder rejects.
INTERNAL_E08 = ("E0824", "E0825")


def is_refusal(code):
    """Whether an error code is the scheduler refusing a form it cannot run."""
    return code.startswith("E08") and code not in INTERNAL_E08


def tolerance_of(kind):
    return rc.parse_tolerance(OP_TOLERANCE_FLAGS[kind])[1]


class Outcome:
    def __init__(self, kind, detail="", tool="", code="", message=""):
        self.kind, self.detail, self.tool = kind, detail, tool
        self.code, self.message = code, message   # for refusals: E08xx and its kind
        self.tags = []                            # known bugs it matches
        self.severity = None                      # mismatches: max |diff| / max |ref|

    @property
    def failed(self):
        return self.kind in FAILURES

    def signature(self):
        """What makes two failures the same: kind, tool and the message
        without numbers or names."""
        text = re.sub(r"\b\d+\b|'[^']*'|\S+\.(lpu|lpx|npy)", "#", self.detail.split("\n")[0])
        return f"{self.kind}|{self.tool}|{self.code}|{text[:120]}"

    def as_dict(self):
        return {"kind": self.kind, "tool": self.tool, "code": self.code, "message": self.message,
                "detail": self.detail, "tags": self.tags, "severity": self.severity}


def limits(cpu_seconds):
    """A tool past MEMORY_LIMIT gets bad_alloc (a crash), not the machine's
    OOM killer, which could pick someone else's process; one past
    cpu_seconds of CPU gets SIGXCPU (a hang). CPU time, not wall time: on a
    loaded machine a compile of a second of CPU can take a minute."""
    import resource

    def apply():
        if MEMORY_LIMIT:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        cpu = int(math.ceil(cpu_seconds))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    return apply


def run_tool(cmd, timeout, tool):
    """(CompletedProcess, None) or (None, Outcome) for a crash or hang:
    `timeout` seconds of CPU, or WALL_FACTOR times that of wall time."""
    before = children_cpu()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout * WALL_FACTOR,
                           errors="replace", preexec_fn=limits(timeout))
    except subprocess.TimeoutExpired:
        return None, Outcome("hang", f"{tool} ran past {timeout * WALL_FACTOR:.0f} s", tool)
    err = r.stderr
    if r.returncode == -signal.SIGXCPU or (r.returncode == -signal.SIGKILL and
                                           children_cpu() - before >= timeout):
        return None, Outcome("hang", f"{tool} used more than {timeout:.0f} s of CPU", tool)
    if r.returncode < 0:
        return None, Outcome("crash", f"{tool} killed by signal {-r.returncode}: {last_lines(err)}", tool)
    if SANITIZER.search(err):
        return None, Outcome("crash", f"{tool}: sanitizer report: {first_match(err, SANITIZER)}", tool)
    if r.returncode not in (0, 1):
        return None, Outcome("crash", f"{tool} exited {r.returncode}: {last_lines(err)}", tool)
    if r.returncode == 1 and not DIAGNOSTIC.search(err + r.stdout):
        return None, Outcome("crash", f"{tool} exited 1 without a diagnostic: {last_lines(err)}", tool)
    return r, None


def children_cpu():
    """CPU seconds of the children waited for so far."""
    import resource
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def last_lines(text, n=2):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return " / ".join(lines[-n:])[:300]


def first_match(text, pattern):
    for line in text.splitlines():
        if pattern.search(line):
            return line.strip()[:300]
    return ""


def first_error(text):
    """(code, message) of the first coded diagnostic, else ("", first error line)."""
    for line in text.splitlines():
        m = CODE.search(line)
        if m:
            return m.group(1), m.group(2).strip()
    for line in text.splitlines():
        if DIAGNOSTIC.search(line):
            return "", line.strip()
    return "", ""


def message_kind(message):
    """A refusal's message without its numbers: the op and the form refused
    (its code says which cause)."""
    m = re.match(r"cannot compile '([^']+)' onto the chip yet ?(.*)", message)
    if m:
        why = re.sub(r"\d+", "#", m.group(2)).strip(" :()")
        return f"{m.group(1)}: {why}"
    return re.sub(r"\d+", "#", message)[:100]


def widen_bf16(a):
    """A bf16 array (lpurun writes it as 2-byte records) as the f32 values
    it holds exactly; any other array as it is."""
    if a.dtype.kind == "V" and a.dtype.itemsize == 2:
        # view() of a 0-d array cannot change the dtype: go through 1-d.
        bits = a.reshape(-1).view(np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32).reshape(a.shape)
    return a


# ---- the IR ----------------------------------------------------------------
IR_OP = re.compile(r"^\s*%(\w+) = (\w+)\s*([^{:]*?)\s*(\{.*\})?\s*:\s*(\w+)\[([^\]]*)\]")
IR_RET = re.compile(r"^\s*return\s+([^{]*)")
IR_FUNC = re.compile(r"^func @(\w+)(?:<([^>]*)>)? \{")


class IrOp:
    def __init__(self, name, op, operands, attrs, dtype, dims):
        self.name, self.op, self.operands, self.attrs = name, op, operands, attrs or ""
        self.dtype, self.dims = dtype, dims


def parse_ir(text):
    """[(entry, {size: n}, {value: IrOp}, [returned values])] from lpuc --emit=ir."""
    funcs, cur = [], None
    for line in text.splitlines():
        m = IR_FUNC.match(line)
        if m:
            bucket = {}
            if m.group(2):
                for kv in m.group(2).split(","):
                    k, v = kv.split("=")
                    bucket[k.strip()] = int(v)
            cur = (m.group(1), bucket, {}, [])
            funcs.append(cur)
            continue
        if cur is None:
            continue
        m = IR_OP.match(line)
        if m:
            operands = [o.strip().lstrip("%") for o in m.group(3).split(",") if o.strip()]
            dims = [int(d) for d in m.group(6).split(",") if d.strip()]
            cur[2][m.group(1)] = IrOp(m.group(1), m.group(2), operands, m.group(4), m.group(5), dims)
            continue
        m = IR_RET.match(line)
        if m:
            cur[3].extend(o.strip().lstrip("%") for o in m.group(1).split(",") if o.strip())
    return funcs


def inputs_of(ops):
    out = []
    for op in ops.values():
        if op.op == "input":
            name = re.search(r'name = "([^"]*)"', op.attrs).group(1)
            out.append((name, op.dtype, op.dims))
    return out


def analyse(ops, value):
    """How `value` may differ between the chip and the reference:
    (rounding kinds reaching it, longest chain of rounding ops, amplifying
    ops after one, fragile: a comparison or argmax or float-to-int reads a
    rounded value)."""
    memo = {}

    def walk(v):
        if v in memo:
            return memo[v]
        op = ops[v]
        kinds, chain, amp, fragile = set(), 0, 0, False
        for o in op.operands:
            k, c, a, f = walk(o)
            kinds |= k
            chain, amp, fragile = max(chain, c), max(amp, a), fragile or f
        rounded = chain > 0
        kind = ROUNDING_KIND.get(op.op)
        if kind and not (kind == "reduction" and op.dtype.startswith("i")):
            kinds.add(kind)
            chain += 1
        if rounded:
            if op.op in AMPLIFYING:
                amp += 1
            elif op.op == "mul" and sum(walk(o)[1] > 0 for o in op.operands) == 2:
                amp += 1
            if op.op in FRAGILE:
                fragile = True
            if op.op == "convert" and op.dtype in ("i8", "i16", "i32", "bool"):
                src = ops[op.operands[0]]
                fragile = fragile or src.dtype in ("f16", "bf16", "f32")
        memo[v] = (kinds, chain, amp, fragile)
        return memo[v]

    sys.setrecursionlimit(10000)
    return walk(value)


def output_tolerance(kinds, chain, amp, ref):
    """None for bit-exact, else a run_and_compare tolerance dict."""
    if not chain:
        return None
    scale = chain * 2 ** min(amp, 4)
    tol = {k: 0.0 for k in rc.MATMUL_TOLERANCE}
    for kind in kinds:
        for k, v in tolerance_of(kind).items():
            tol[k] += v * scale
    finite = ref[np.isfinite(ref)] if ref.dtype.kind == "f" else ref
    if finite.size:
        # One f16 rounding of the largest value, per rounding op.
        tol["atol"] += scale * float(np.max(np.abs(finite.astype(np.float64)))) * 2.0 ** -11
    return tol


# ---- known bugs ---------------------------------------------------------------
def users_of(ops):
    users = {}
    for op in ops.values():
        for o in op.operands:
            users.setdefault(o, []).append(op)
    return users


ELEMENTWISE = {"add", "sub", "mul", "div", "maximum", "minimum", "pow", "rem", "select",
               "neg", "abs", "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "exp", "log",
               "sqrt", "rsqrt", "convert", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not"}


def conv_group_operands(ops, one_channel=False):
    """Yields (value, operand's op) for each operand the elementwise work
    after a conv2d's or pool's result reads (of one-channel ones only with
    one_channel), other than the values of that chain itself."""
    users = users_of(ops)
    for op in ops.values():
        if op.op not in ("conv2d", "max_pool2d", "avg_pool2d"):
            continue
        if one_channel and op.dims[1] != 1:
            continue
        todo, seen = [op.name], set()
        while todo:
            v = todo.pop()
            for u in users.get(v, []):
                if u.op not in ELEMENTWISE or u.name in seen:
                    continue
                seen.add(u.name)
                todo.append(u.name)
                for o in u.operands:
                    if o != v and o not in seen:
                        yield o, ops[o]


def conv_odd_operand(ops):
    """A conv2d's or pool's result, through elementwise work, meets an
    operand that is not a [1, C, 1, 1] broadcast or a constant."""
    for _, src in conv_group_operands(ops):
        if src.op == "constant":
            continue
        if src.op == "broadcast":
            inner = ops[src.operands[0]]
            if inner.op != "constant" and not (len(inner.dims) == 4 and inner.dims[0] == 1 and
                                               inner.dims[2:] == [1, 1]):
                return True
        elif len(src.dims) == 4 and src.op not in ("conv2d", "max_pool2d", "avg_pool2d"):
            return True
    return False


def conv_one_channel(ops):
    """A one-channel conv2d's or pool's result, through elementwise work,
    meets a [1, 1, 1, 1] operand that is not a constant."""
    for _, src in conv_group_operands(ops, one_channel=True):
        if src.op == "broadcast" and ops[src.operands[0]].op != "constant" and \
                ops[src.operands[0]].dims == [1, 1, 1, 1]:
            return True
    return False


def reaches(ops, start, pred):
    users = users_of(ops)
    todo, seen = list(start), set()
    while todo:
        v = todo.pop()
        for u in users.get(v, []):
            if u.name in seen:
                continue
            seen.add(u.name)
            if pred(u):
                return True
            todo.append(u.name)
    return False


def grouped_conv_chain(ops):
    grouped = [op.name for op in ops.values() if op.op == "conv2d" and
               re.search(r"groups = ([2-9]|\d\d)", op.attrs)]
    return bool(grouped) and reaches(ops, grouped, lambda u: u.op == "conv2d")


def scores_elementwise(ops):
    """A softmax whose operand is elementwise work on a matmul's result."""
    for op in ops.values():
        if op.op != "softmax":
            continue
        todo = [(op.operands[0], False)]
        while todo:
            v, through = todo.pop()
            src = ops[v]
            if src.op == "matmul":
                if through:
                    return True
                continue
            if src.op in ELEMENTWISE - {"convert"}:
                todo += [(o, True) for o in src.operands]
            elif src.op in ("convert", "broadcast", "reshape"):
                todo += [(o, through) for o in src.operands]
    return False


KNOWN_BUGS = [
    # (tag, outcome kinds, test(outcome, source, ops))
    ("conv-odd-operand", ("mismatch", "sim-refused", "crash", "cycles", "hang"),
     lambda o, s, ops: conv_odd_operand(ops)),
    ("conv-one-channel", ("mismatch", "sim-refused", "crash", "cycles", "hang"),
     lambda o, s, ops: conv_one_channel(ops)),
    ("grouped-conv-chain", ("mismatch", "sim-refused", "crash", "cycles", "refused"),
     lambda o, s, ops: grouped_conv_chain(ops)),
    ("scores-elementwise", ("sim-refused", "mismatch", "crash"),
     lambda o, s, ops: scores_elementwise(ops)),
    ("name-out", FAILURES + ("refused",),
     lambda o, s, ops: re.search(r"\b(param out|out):", s) is not None),
    ("bool-literal-args", FAILURES + ("refused",),
     lambda o, s, ops: re.search(r"[(,]\s*(true|false)\s*[,)]", s) is not None),
    # By code (frontend/Diagnostics.def): E0814 an operand stored packed,
    # E0809 an axis not last, E0811 a gather not of rows, E0820 no cycle
    # for one vector's work.
    ("f32-matmul", ("refused",), lambda o, s, ops: o.code == "E0814" and "bf16" in o.message),
    ("any-axis", ("refused",), lambda o, s, ops: o.code in ("E0809", "E0811")),
    ("mem-port-twice", ("refused",), lambda o, s, ops: o.code == "E0820" and
     "MEM port twice" in o.message),
    # Found by lpu-smith, open (tests/fuzz/README.md).
    ("bool-maximum", ("lowering",), lambda o, s, ops: re.search(
        r"cannot compile '(maximum|minimum)\(.*': operand type bool", o.message) is not None),
]


def tag_known(outcome, source, ops):
    for tag, kinds, test in KNOWN_BUGS:
        if outcome.kind in kinds:
            try:
                if test(outcome, source, ops):
                    outcome.tags.append(tag)
            except (KeyError, IndexError):
                pass
    return outcome


# ---- one program ---------------------------------------------------------------
# lpuc flags a campaign may compile with (--vary-flags): other schedules
# of the same program must agree with the reference just as well.
FLAG_MIX = [[], ["--no-tune"], ["--pack-params=always"], ["--heuristics=none"],
            ["--pack-params=striped"]]


def check(src, tmp, bindir, timeout=60, seed=None, lpuc_flags=(), compile_only=False):
    """The Outcome of one program (see the docstring). The inputs are drawn
    from run_and_compare's SEED and `seed` (by default the program's
    `// lpu-smith seed N` line, else 0); lpuc compiles with lpuc_flags
    (by default the program's `// lpuc-flags: ...` line, else none).
    compile_only stops after lpuc -o: crashes, hangs and refusals only."""
    os.makedirs(tmp, exist_ok=True)
    lpuc, lpurun = os.path.join(bindir, "lpuc"), os.path.join(bindir, "lpurun")
    with open(src) as f:
        source = f.read()
    if seed is None:
        m = re.search(r"// lpu-smith seed (\d+)", source)
        seed = int(m.group(1)) if m else 0
    if not lpuc_flags:
        m = re.search(r"// lpuc-flags: (.*)", source)
        lpuc_flags = m.group(1).split() if m else []
    r, bad = run_tool([lpuc, src, "--emit=ir"], timeout, "lpuc --emit=ir")
    if bad:
        return bad
    if r.returncode != 0:
        code, msg = first_error(r.stderr)
        kind = "lowering" if code.startswith("E07") else "frontend"
        return tag_known(Outcome(kind, f"lpuc --emit=ir: {code} {msg}", "lpuc --emit=ir", code, msg),
                         source, {})
    funcs = parse_ir(r.stdout)
    if not funcs:
        return Outcome("lowering", "lpuc --emit=ir printed no function", "lpuc --emit=ir")
    ops_all = {}
    for f in funcs:
        ops_all.update({f"{f[0]}.{len(ops_all)}.{k}": v for k, v in f[2].items()})
    last_ops = funcs[0][2]

    lpx = os.path.join(tmp, "prog.lpx")
    if os.path.exists(lpx):
        os.unlink(lpx)
    r, bad = run_tool([lpuc, src, "-o", lpx, "--report", "--json", *lpuc_flags], timeout, "lpuc -o")
    if bad:
        return tag_known(bad, source, last_ops)
    refused = None
    predicted = None
    if r.returncode != 0:
        code, msg = first_error(r.stderr)
        if not is_refusal(code):
            return tag_known(Outcome("lowering", f"lpuc -o: {code} {msg}", "lpuc -o", code, msg),
                             source, last_ops)
        refused = Outcome("refused", f"{code} {msg}", "lpuc -o", code, msg)
    else:
        try:
            predicted = json.loads(r.stdout)
        except ValueError:
            return Outcome("crash", f"lpuc --report --json printed no JSON: {r.stdout[:200]}", "lpuc -o")

    if compile_only:
        return tag_known(refused, source, last_ops) if refused else Outcome("pass")
    weights = ["--random-weights", rc.WEIGHTS_SEED]
    result = None
    for entry, bucket, ops, returned in funcs:
        flags = []
        for name, dtype, dims in inputs_of(ops):
            # A stream per input (as run_and_compare's scaled weights): the
            # reducer deleting one input leaves the others' values alone.
            rng = np.random.default_rng([rc.SEED, seed, zlib.crc32(name.encode())])
            x = rc.random_input(rng, NUMPY_DTYPES[dtype], dims, INT_INPUTS)
            path = os.path.join(tmp, f"in_{name}.npy")
            np.save(path, x)
            flags.append(f"--input={name}={path}")
        where = f"{entry} ({' '.join(f'{k}={v}' for k, v in bucket.items()) or 'no bucket'})"
        ref_out = os.path.join(tmp, "ref.npy")
        r, bad = run_tool([lpurun, "--reference", src, "--entry", entry, *weights, "--threads", "1",
                           f"--output=out={ref_out}"] + flags, timeout, "lpurun --reference")
        if bad:
            return tag_known(bad, source, ops)
        if r.returncode != 0:
            code, msg = first_error(r.stderr)
            return tag_known(Outcome("ref-refused", f"{where}: {code} {msg}".strip(),
                                     "lpurun --reference", code, msg), source, ops)
        if refused:
            continue
        sim_out = os.path.join(tmp, "sim.npy")
        r, bad = run_tool([lpurun, lpx, "--entry", entry, *weights, f"--output=out={sim_out}",
                           "--report=json"] + flags, timeout, "lpurun")
        if bad:
            return tag_known(bad, source, ops)
        if r.returncode != 0:
            code, msg = first_error(r.stderr)
            return tag_known(Outcome("sim-refused", f"{where}: {msg or last_lines(r.stderr)}",
                                     "lpurun", code, msg), source, ops)
        try:
            report = json.loads(r.stdout[r.stdout.index("{"):])
        except ValueError:
            return Outcome("crash", f"lpurun --report=json printed no JSON: {r.stdout[:200]}", "lpurun")
        ran = {k: int(v) for k, v in (kv.split("=") for kv in report.get("bucket_dims", "").split())}
        if ran != bucket:
            return Outcome("cycles", f"{where}: the inputs selected bucket {report.get('bucket_dims')}",
                           "lpurun")
        want = [b for b in predicted["buckets"] if b["entry"] == entry and b["bucket"] == bucket]
        if len(want) != 1:
            return Outcome("cycles", f"{where}: lpuc's report has {len(want)} such buckets", "lpuc -o")
        if report["cycles"] != want[0]["cycles"]:
            return tag_known(Outcome("cycles", f"{where}: simulated {report['cycles']} cycles, lpuc "
                                     f"predicted {want[0]['cycles']}", "lpurun"), source, ops)
        sim, ref = widen_bf16(np.load(sim_out)), widen_bf16(np.load(ref_out))
        kinds, chain, amp, fragile = analyse(ops, returned[0])
        exact = chain == 0
        if ref.dtype.kind == "f" and not np.isfinite(ref).all() and sim.shape == ref.shape:
            # The generator's bounds failed; the finite elements still count
            # when the output must be bit-exact.
            finite = np.isfinite(ref)
            if exact and sim.dtype == ref.dtype and sim[finite].tobytes() != ref[finite].tobytes():
                sim, ref = sim[finite], ref[finite]
            else:
                result = result or Outcome("nonfinite", f"{where}: the reference's output is not finite")
                continue
        tol = output_tolerance(kinds, chain, amp, ref) if not exact else rc.MATMUL_TOLERANCE
        try:
            rc.compare(where, sim, ref, exact, tol)
        except SystemExit as e:
            o = Outcome("fragile" if fragile else "mismatch",
                        f"{e} ({'bit-exact expected' if exact else 'tolerance ' + ', '.join(f'{k} {v:.3g}' for k, v in tol.items() if v)})",
                        "lpurun")
            if sim.shape == ref.shape and sim.size and ref.dtype.kind in "fiu":
                d = np.abs(sim.astype(np.float64) - ref.astype(np.float64))
                top = float(np.nanmax(np.abs(ref.astype(np.float64)))) if ref.size else 0.0
                o.severity = float(np.nanmax(d)) / max(top, 1e-30)
            return tag_known(o, source, ops)
    if refused:
        return tag_known(refused, source, last_ops)
    return result or Outcome("pass")


def default_bindir():
    """The tools on PATH (as lit sets it), else the source tree's build/bin."""
    import shutil
    found = shutil.which("lpuc")
    if found and os.path.exists(os.path.join(os.path.dirname(found), "lpurun")):
        return os.path.dirname(os.path.abspath(found))
    return os.path.join(ROOT, "build", "bin")


def typecheck(src, bindir, timeout=60):
    """Only the type checker (lpuc FILE): pass, frontend (a generator bug)
    or a crash or hang."""
    r, bad = run_tool([os.path.join(bindir, "lpuc"), src], timeout, "lpuc")
    if bad:
        return bad
    if r.returncode != 0:
        code, msg = first_error(r.stderr)
        return Outcome("frontend", f"lpuc: {code} {msg}", "lpuc", code, msg)
    return Outcome("pass")


def main(argv):
    global MEMORY_LIMIT
    import argparse
    import tempfile
    p = argparse.ArgumentParser(description="lpu-smith's differential check of one program")
    p.add_argument("file")
    p.add_argument("--tmp")
    p.add_argument("--bin", default=None)
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--json", action="store_true")
    p.add_argument("--memory-limit", type=float, default=MEMORY_LIMIT / 2 ** 30,
                   help="GiB of address space per tool (0: none, as under AddressSanitizer)")
    a = p.parse_args(argv)
    MEMORY_LIMIT = int(a.memory_limit * 2 ** 30)
    with tempfile.TemporaryDirectory(prefix="smith-") as scratch:
        o = check(a.file, a.tmp or scratch, a.bin or default_bindir(), a.timeout)
    if a.json:
        print(json.dumps(o.as_dict()))
    else:
        tags = f" [known: {', '.join(o.tags)}]" if o.tags else ""
        print(f"{o.kind}{tags}: {o.detail}" if o.detail else o.kind)
    return 1 if o.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

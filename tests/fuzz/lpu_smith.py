#!/usr/bin/env python3
"""lpu-smith: random well-typed .lpu programs, for differential testing of
lpuc + lpurun (the chip) against lpurun --reference (the golden model).

NNSmith's approach (Liu et al., ASPLOS 2023): each built-in has a light
specification, its shape rule (which operands it takes, which shapes they
may have, the result's shape) written once in OPS below; a program is a
random graph grown op by op, each op drawing operands from the values made
so far (or a new input or weight of a shape the rule asks for), so every
program type-checks by construction. Values stay finite: each value carries
a bound on its magnitude (inputs are unit-normal, weights within
1/sqrt(fan-in), docs/tensor-files.md), ops that could overflow or meet a
domain edge get operands that cannot (exp of a bounded value, log and rsqrt
of abs(x) plus a margin, division by abs(y) + 1), and a value whose bound
grows past SQUASH_ABOVE is scaled by a power of two (exact) or tanh.

Values that went through an op whose result the chip may round differently
from the reference (matmul, conv2d, sums, means, softmax) are `inexact`:
comparisons, argmax and float-to-int casts never read them, since a one-ulp
difference there would flip a whole element (tests/fuzz/smith_check.py
checks the same rule on the IR).

Deterministic per seed and feature set. Usage:
    lpu_smith.py SEED [--features LIST] [-o FILE]
LIST: `default` (the CI mix), `all`, or comma-separated names, each `+NAME`
or `-NAME` against the default (FEATURES below lists them).
"""
import math
import random
import sys

# Feature switches; tests/fuzz/README.md says why the ones off by default
# are off.
FEATURES = {
    # On by default.
    "elementwise": True,   # unary and binary elementwise, broadcasting operands
    "casts": True,         # f16 <-> f32, float <-> i32 (exact values only)
    "select": True,        # comparisons and select (exact values only)
    "reduce": True,        # sum/mean/max/min over random axes, keep or not
    "argmax": True,        # argmax over the last axis (exact values only)
    "softmax": True,       # softmax over the last axis
    "layernorm": True,     # std.nn.LayerNorm and an inline f32 norm
    "matmul": True,        # x @ W, nn.Linear, activation @ activation
    "conv": True,          # conv2d: stride, padding, dilation, groups
    "pool": True,          # max_pool2d, avg_pool2d
    "layout": True,        # reshape, transpose, slices, indices, concat, split, broadcast_to
    "gather": True,        # gather(table, ids, axis = 0)
    "constants": True,     # iota, zeros, ones, full
    "attention": True,     # q k^T / sqrt(E), softmax, @ v
    "buckets": True,       # a leading size B in a bucket set
    "generics": True,      # helper fns generic in dtype, pack or sizes
    "loops": True,         # for loops over a var, arrays of nn.Linear
    "bf16": True,          # f32 -> bf16 casts, elementwise work in bf16
    # Forms that once hit bugs, kept as switches for their reproducers.
    "conv-odd-operand": True,      # an operand not [1, C, 1, 1] on a conv's or pool's fused elementwise work
    "grouped-conv-chain": True,    # a grouped conv feeding a conv
    "conv-one-channel": True,      # a [1, 1, 1, 1] operand on a one-channel conv's or pool's work
    "scores-elementwise": True,    # elementwise work between attention scores and softmax
    "name-out": True,              # an input or parameter named `out`
    "bool-literal-args": True,     # bool literals as call arguments
    "f32-matmul": True,            # f32 and bf16 matmuls
    "any-axis": True,              # gather, softmax and argmax on other axes than the usual
    # Off: not valid .lpu (the checker refuses it, E0309) or a known refusal.
    "bool-maximum": False,         # maximum of bools (through a generic helper)
    "wide-conv": False,            # conv2d/pools of rows wider than one vector
}
# Switches that write programs the language refuses: `all` leaves them off,
# only naming them turns them on.
INVALID_FEATURES = {"bool-maximum"}
SQUASH_ABOVE = 16.0     # a value bounded above this is scaled or squashed first
EXP_ARG_MAX = 4.0       # exp only of values bounded by this
MAX_ELEMENTS = 24576    # elements of any one value (programs compile in well under a second)
INPUT_BOUND = 6.0       # unit-normal inputs: |x| <= 6 in practice
SMALL_DIMS = [1, 2, 3, 4, 5, 7, 8, 12, 16, 31, 32, 64]
LANE_DIMS = [10, 33, 100, 128, 256, 320, 330, 640, 700]


def parse_features(spec):
    feats = dict(FEATURES)
    if spec in (None, "", "default"):
        return feats
    if spec == "all":
        return {k: k not in INVALID_FEATURES for k in feats}
    for item in spec.split(","):
        item = item.strip()
        if not item or item == "default":
            continue
        on = not item.startswith("-")
        name = item.lstrip("+-")
        if name == "all":
            feats = {k: on and k not in INVALID_FEATURES for k in feats}
            continue
        if name not in feats:
            raise SystemExit(f"lpu_smith: unknown feature '{name}' (known: {', '.join(feats)})")
        feats[name] = on
    return feats


def dim_text(d):
    return "B" if d == "B" else str(d)


def type_text(dtype, shape):
    if not shape:
        return dtype
    return f"{dtype}[{', '.join(dim_text(d) for d in shape)}]"


def is_float(dtype):
    return dtype in ("f16", "f32", "bf16")


def lit(x):
    """A float literal as the language writes it (digits on both sides)."""
    s = repr(float(x))
    if "e" in s or "E" in s:
        m, e = s.lower().split("e")
        if "." not in m:
            m += ".0"
        s = f"{m}e{int(e)}"
    return s


class Val:
    """A value of the program: its name, type, a bound on its magnitude,
    and what it went through (for the rules of the generator)."""

    def __init__(self, name, dtype, shape, mag, exact=True, **flags):
        self.name, self.dtype, self.shape = name, dtype, tuple(shape)
        self.mag, self.exact = float(mag), exact
        self.conv = flags.get("conv", False)        # a conv's or pool's result, or elementwise work on one
        self.grouped = flags.get("grouped", False)  # a grouped conv's result, or work on one
        self.uses = 0

    @property
    def rank(self):
        return len(self.shape)


class Program:
    def __init__(self, seed, features):
        self.rng = random.Random(seed)
        self.seed = seed
        self.f = features
        self.params = []       # (name, type text)
        self.inputs = []       # Val
        self.lines = []        # body statements
        self.helpers = []      # top-level fn texts
        self.values = []       # Val, in order
        self.counter = 0
        self.imports_nn = False
        self.bucket = None     # the bucket sizes of B, when B is used
        self.bvalue = 1        # B's largest size (for element counts)
        self.out_taken = False  # the name `out` is given once at most

    # ---- names and sizes -------------------------------------------------
    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def size(self, d):
        return self.bvalue if d == "B" else d

    def elements(self, shape):
        return math.prod(self.size(d) for d in shape) if shape else 1

    def pick_dim(self, lanes=False):
        r = self.rng
        if lanes and r.random() < 0.5:
            return r.choice(LANE_DIMS)
        return r.choice(SMALL_DIMS)

    def random_shape(self, rank, lead_b=None):
        r = self.rng
        for _ in range(20):
            shape = [self.pick_dim(lanes=(i == rank - 1)) for i in range(rank)]
            if lead_b is None:
                lead_b = self.bucket is not None and rank >= 2 and r.random() < 0.8
            if lead_b and rank >= 1:
                shape[0] = "B"
            if self.elements(shape) <= MAX_ELEMENTS:
                return tuple(shape)
        return tuple(["B"] + [4] * (rank - 1)) if lead_b else tuple([4] * rank)

    # ---- values ------------------------------------------------------------
    def add(self, expr, dtype, shape, mag, exact, **flags):
        name = self.fresh("v")
        # Annotated: the type checker compares it, and the reducer reads it.
        self.lines.append(f"let {name}: {type_text(dtype, shape)} = {expr}")
        v = Val(name, dtype, shape, mag, exact, **flags)
        self.values.append(v)
        return v

    def use(self, v):
        v.uses += 1
        return v.name

    def new_input(self, dtype, shape):
        if dtype == "bf16":
            # .npy has no bf16: a weight instead, or, with a bucketed size
            # (which a weight cannot have), an f32 input cast.
            if all(isinstance(d, int) for d in shape):
                return self.new_param(dtype, shape)
            x = self.new_input("f32", shape)
            return self.add(f"bf16({self.use(x)})", dtype, shape, x.mag, True)
        name = self.fresh("x")
        if self.f["name-out"] and not self.out_taken and self.rng.random() < 0.02:
            name, self.out_taken = "out", True
        bound = 64.0 if dtype == "i32" else (1.0 if dtype == "bool" else INPUT_BOUND)
        v = Val(name, dtype, shape, bound, True)
        self.inputs.append(v)
        self.values.append(v)
        return v

    def new_param(self, dtype, shape, prefix="w"):
        name = self.fresh(prefix)
        if self.f["name-out"] and not self.out_taken and self.rng.random() < 0.02:
            name, self.out_taken = "out", True
        self.params.append((name, type_text(dtype, shape)))
        # lpurun --random-weights: uniform within 1/sqrt(product of all dims but the last).
        fan_in = math.prod(shape[:-1]) if len(shape) > 1 else 1
        v = Val(name, dtype, shape, 1.0 / math.sqrt(max(fan_in, 1)), True)
        return v

    def new_model_param(self, type_text_, prefix):
        name = self.fresh(prefix)
        self.params.append((name, type_text_))
        return name

    def pick(self, pred, fresh_bias=0.7):
        """A value satisfying pred, preferring ones not used yet."""
        cands = [v for v in self.values if pred(v)]
        if not cands:
            return None
        unused = [v for v in cands if v.uses == 0]
        if unused and self.rng.random() < fresh_bias:
            return self.rng.choice(unused)
        return self.rng.choice(cands[-8:])

    def operand(self, dtype, shape, exact=False):
        """An existing value of exactly this type, else a new input."""
        v = self.pick(lambda v: v.dtype == dtype and v.shape == tuple(shape) and (v.exact or not exact))
        if v is None or self.rng.random() < 0.25:
            v = self.new_input(dtype, shape)
        return v

    def tame(self, v, limit=SQUASH_ABOVE):
        """v itself, or v scaled or squashed below limit (a new value)."""
        if v.mag <= limit or not is_float(v.dtype):
            return v
        if self.rng.random() < 0.3:
            return self.add(f"tanh({self.use(v)})", v.dtype, v.shape, 1.0, v.exact,
                            conv=v.conv, grouped=v.grouped)
        k = 2 ** math.ceil(math.log2(v.mag / 4.0))
        return self.add(f"{self.use(v)} * {lit(1.0 / k)}", v.dtype, v.shape, v.mag / k, v.exact,
                        conv=v.conv, grouped=v.grouped)

    # ---- the ops (shape rules) -------------------------------------------
    def start_value(self):
        r = self.rng
        rank = r.choice([1, 2, 2, 2, 3, 3, 4])
        dtype = r.choice(["f16", "f16", "f16", "f32"])
        return self.new_input(dtype, self.random_shape(rank))

    def any_float(self, exact=False, rank=None):
        v = self.pick(lambda v: is_float(v.dtype) and (v.exact or not exact) and
                      (rank is None or v.rank in rank))
        return v

    def op_unary(self):
        v = self.any_float()
        if v is None:
            return None
        r = self.rng
        op = r.choice(["relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "abs", "neg",
                       "exp", "log", "sqrt", "rsqrt"])
        fl = dict(conv=v.conv, grouped=v.grouped)
        if op == "exp":
            v = self.tame(v, EXP_ARG_MAX)
            return self.add(f"exp({self.use(v)})", v.dtype, v.shape, math.exp(v.mag), v.exact, **fl)
        if op == "log":
            return self.add(f"log(abs({self.use(v)}) + 1.0)", v.dtype, v.shape,
                            math.log(v.mag + 1) + 1, v.exact, **fl)
        if op == "sqrt":
            return self.add(f"sqrt(abs({self.use(v)}))", v.dtype, v.shape, math.sqrt(v.mag) + 1,
                            v.exact, **fl)
        if op == "rsqrt":
            return self.add(f"rsqrt(abs({self.use(v)}) + 0.5)", v.dtype, v.shape, 1.5, v.exact, **fl)
        if op == "neg":
            return self.add(f"-{self.use(v)}", v.dtype, v.shape, v.mag, v.exact, **fl)
        mag = {"sigmoid": 1.0, "tanh": 1.0}.get(op, v.mag + 1)
        return self.add(f"{op}({self.use(v)})", v.dtype, v.shape, mag, v.exact, **fl)

    def broadcast_operand_shape(self, shape, conv):
        """A shape that broadcasts to `shape` (only literal 1s broadcast)."""
        r = self.rng
        rank = len(shape)
        if conv and rank == 4 and not self.f["conv-odd-operand"]:
            return (1, shape[1], 1, 1)
        choices = []
        if rank == 4:
            choices += [(1, shape[1], 1, 1), (shape[1], 1, 1), (shape[2], shape[3]),
                        (shape[3],), (1, 1, shape[2], 1), (shape[1], shape[2], shape[3])]
        k = r.randint(1, rank) if rank else 0
        suffix = list(shape[rank - k:])
        for i in range(len(suffix)):
            if r.random() < 0.4:
                suffix[i] = 1
        choices.append(tuple(suffix))
        if rank:
            choices.append((1,))
        choices = [c for c in choices if len(c) <= rank] or [()]
        shp = r.choice(choices)
        return tuple(1 if d == "B" else d for d in shp)

    def op_binary(self):
        r = self.rng
        v = self.pick(lambda v: v.dtype in ("f16", "f32", "bf16", "i32"))
        if v is None:
            return None
        fl = dict(conv=v.conv, grouped=v.grouped)
        ops = ["+", "-", "*", "maximum", "minimum"] + (["/"] if is_float(v.dtype) else [])
        op = r.choice(ops)
        how = r.random()
        if v.conv and not self.f["conv-odd-operand"] and how >= 0.55:
            how = 0.4  # [1, C, 1, 1] or a number only
        if v.conv and v.rank == 4 and v.shape[1] == 1 and not self.f["conv-one-channel"]:
            how = 0.0  # a number only
        if how < 0.25:
            # A compile-time number.
            c = r.choice([0.5, 1.5, -2.0, 3.0, 0.25, -0.75]) if is_float(v.dtype) else r.choice([1, 2, -3, 7])
            ctext = lit(c) if is_float(v.dtype) else str(c)
            if op == "/":
                op = "*"
            u_text, u_mag, u_exact = ctext, abs(c), True
        else:
            if how < 0.55:
                if v.conv and v.rank == 4 and not self.f["conv-odd-operand"]:
                    shp = (1, v.shape[1], 1, 1)
                    u = self.new_param(v.dtype, shp, "b") if r.random() < 0.8 else self.new_input(v.dtype, shp)
                else:
                    shp = self.broadcast_operand_shape(v.shape, v.conv)
                    u = self.new_param(v.dtype, shp, "b") if r.random() < 0.6 else self.new_input(v.dtype, shp)
            else:
                u = self.operand(v.dtype, v.shape)
                if u.conv and v.rank == 4 and not self.f["conv-odd-operand"]:
                    # v would be the odd operand of u's conv work.
                    u = self.new_param(v.dtype, (1, v.shape[1], 1, 1), "b")
                fl = dict(conv=v.conv or u.conv, grouped=v.grouped or u.grouped)
            if v.dtype != "i32":
                u = self.tame(u)
            u_text, u_mag, u_exact = self.use(u), u.mag, u.exact
        if v.dtype != "i32":
            v = self.tame(v)
        vt = self.use(v)
        exact = v.exact and u_exact
        if op in ("maximum", "minimum"):
            return self.add(f"{op}({vt}, {u_text})", v.dtype, v.shape, max(v.mag, u_mag), exact, **fl)
        if op == "/":
            return self.add(f"{vt} / (abs({u_text}) + 1.0)", v.dtype, v.shape, v.mag, exact, **fl)
        if v.dtype == "i32" and op == "*":
            # Keep products of ids small.
            return self.add(f"{vt} * 3", v.dtype, v.shape, v.mag * 3, exact, **fl)
        mag = v.mag * u_mag if op == "*" else v.mag + u_mag
        return self.add(f"{vt} {op} {u_text}", v.dtype, v.shape, mag, exact, **fl)

    def op_cast(self):
        r = self.rng
        v = self.pick(lambda v: v.dtype in ("f16", "f32", "bf16", "i32", "bool"))
        if v is None:
            return None
        fl = dict(conv=v.conv, grouped=v.grouped)
        if v.dtype == "f16":
            if v.exact and r.random() < 0.25:
                return self.add(f"i32({self.use(v)} * 4.0)", "i32", v.shape, v.mag * 4 + 1, True)
            return self.add(f"f32({self.use(v)})", "f32", v.shape, v.mag, v.exact, **fl)
        if v.dtype == "f32":
            v = self.tame(v, 1000.0)
            if self.f["bf16"] and r.random() < 0.3:
                return self.add(f"bf16({self.use(v)})", "bf16", v.shape, v.mag, v.exact, **fl)
            return self.add(f"f16({self.use(v)})", "f16", v.shape, v.mag, v.exact, **fl)
        if v.dtype == "bf16":
            return self.add(f"f32({self.use(v)})", "f32", v.shape, v.mag, v.exact, **fl)
        if v.dtype == "bool":
            return self.add(f"f16({self.use(v)})", "f16", v.shape, 1.0, v.exact)
        return self.add(f"f16({self.use(v)})", "f16", v.shape, min(v.mag, 65504), v.exact)

    def op_select(self):
        r = self.rng
        v = self.pick(lambda v: v.dtype in ("f16", "f32") and v.exact)
        if v is None:
            return None
        cmp = r.choice(["<", "<=", ">", ">=", "==", "!="])
        c = r.choice(["0.0", "0.5", "-1.0"])
        vt = self.use(v)
        if r.random() < 0.3:
            return self.add(f"{vt} {cmp} {c}", "bool", v.shape, 1.0, True)
        other = self.operand(v.dtype, v.shape)
        if r.random() < 0.4:
            cond = self.add(f"{vt} {cmp} {c}", "bool", v.shape, 1.0, True)
            ct = self.use(cond)
        else:
            ct = f"{vt} {cmp} {c}"
        return self.add(f"select({ct}, {vt}, {self.use(other)})", v.dtype, v.shape,
                        max(v.mag, other.mag), other.exact)

    def op_reduce(self):
        r = self.rng
        v = self.pick(lambda v: v.dtype in ("f16", "f32") and v.rank >= 1)
        if v is None:
            return None
        op = r.choice(["sum", "mean", "max", "min"])
        rank = v.rank
        style = r.random()
        keep = r.random() < 0.5
        if style < 0.15 and "B" not in v.shape:
            axes = list(range(rank))
            axis_text = ""
        elif style < 0.3 and rank >= 2:
            axes = sorted(r.sample(range(rank), 2))
            axis_text = f", axis = [{', '.join(str(a) for a in axes)}]"
        else:
            a = r.randrange(rank)
            if r.random() < 0.4:
                a = rank - 1
            axes = [a]
            text_a = a - rank if r.random() < 0.4 else a
            axis_text = f", axis = {text_a}"
        if not axis_text:
            keep = False
        keep_text = ", keep = true" if keep else ""
        shape = [1 if i in axes else d for i, d in enumerate(v.shape) if keep or i not in axes]
        n = math.prod(self.size(v.shape[i]) for i in axes)
        vv = v
        if op == "sum":
            vv = self.tame(v, SQUASH_ABOVE / max(1.0, math.sqrt(n)) if v.dtype == "f16" else SQUASH_ABOVE)
            mag, exact = vv.mag * n, False
        elif op == "mean":
            mag, exact = v.mag, False
        else:
            mag, exact = v.mag, v.exact
        return self.add(f"{op}({self.use(vv)}{axis_text}{keep_text})", v.dtype, shape, mag, exact)

    def op_argmax(self):
        r = self.rng
        v = self.pick(lambda v: v.dtype in ("f16", "f32") and v.rank >= 1 and v.exact)
        if v is None:
            return None
        axis = v.rank - 1
        if self.f["any-axis"] and r.random() < 0.5:
            axis = r.randrange(v.rank)
        shape = [d for i, d in enumerate(v.shape) if i != axis]
        a = self.add(f"argmax({self.use(v)}, axis = {axis})", "i32", shape, self.size(v.shape[axis]), True)
        if r.random() < 0.7:
            return self.add(f"f16({self.use(a)})", "f16", shape, a.mag, True)
        return a

    def op_softmax(self):
        r = self.rng
        v = self.any_float()
        if v is None or v.rank < 1:
            return None
        axis = -1
        if self.f["any-axis"] and r.random() < 0.5 and v.rank >= 2:
            axis = r.randrange(v.rank - 1)
        vt = self.use(self.tame(v, 1000.0))
        if r.random() < 0.5 and v.dtype == "f16":
            e = self.add(f"softmax(f32({vt}), axis = {axis})", "f32", v.shape, 1.0, False)
            if r.random() < 0.5:
                return self.add(f"f16({self.use(e)})", "f16", v.shape, 1.0, False)
            return e
        return self.add(f"softmax({vt}, axis = {axis})", v.dtype, v.shape, 1.0, False)

    def op_layernorm(self):
        r = self.rng
        v = self.pick(lambda v: v.dtype == "f16" and v.rank >= 1)
        if v is None:
            return None
        if v.shape[-1] == "B":
            return None
        D = v.shape[-1]
        mag = math.sqrt(D) + 2
        if r.random() < 0.6:
            self.imports_nn = True
            ln = self.new_model_param(f"nn.LayerNorm<{D}>", "ln")
            return self.add(f"{ln}({self.use(v)})", "f16", v.shape, mag, False)
        # Inline, in f32, with a mean and a variance of the last axis.
        vt = self.use(v)
        xf = self.add(f"f32({vt})", "f32", v.shape, v.mag, v.exact)
        mu = self.add(f"mean({self.use(xf)}, axis = -1, keep = true)", "f32",
                      v.shape[:-1] + (1,), v.mag, False)
        c = self.add(f"{self.use(xf)} - {self.use(mu)}", "f32", v.shape, 2 * v.mag, False)
        var = self.add(f"mean({c.name} * {self.use(c)}, axis = -1, keep = true)", "f32",
                       v.shape[:-1] + (1,), 4 * v.mag * v.mag, False)
        return self.add(f"{c.name} * rsqrt({self.use(var)} + 1e-5)", "f32", v.shape, mag, False)

    def op_linear(self):
        r = self.rng
        dt = "f16"
        if self.f["f32-matmul"] and r.random() < 0.3:
            dt = "f32"
        v = self.pick(lambda v: v.dtype == dt and v.rank >= 1 and v.shape[-1] != "B")
        if v is None:
            return None
        v = self.tame(v)
        K = v.shape[-1]
        N = self.pick_dim(lanes=True)
        if self.elements(v.shape[:-1] + (N,)) > MAX_ELEMENTS:
            N = r.choice([4, 8, 16])
        if self.elements(v.shape[:-1] + (N,)) > MAX_ELEMENTS or K * N > 4 * MAX_ELEMENTS:
            return None
        shape = v.shape[:-1] + (N,)
        mag = v.mag * math.sqrt(K) + 1
        if dt == "f16" and r.random() < 0.35 and v.rank >= 1:
            self.imports_nn = True
            lin = self.new_model_param(f"nn.Linear<{K}, {N}>", "fc")
            return self.add(f"{lin}({self.use(v)})", dt, shape, mag + 1, False)
        w = self.new_param(dt, (K, N))
        return self.add(f"{self.use(v)} @ {w.name}", dt, shape, mag, False)

    def op_matmul2(self):
        """Two activations: [.., M, K] @ [.., K, N], the second often a transpose."""
        r = self.rng
        v = self.pick(lambda v: v.dtype == "f16" and v.rank >= 2 and v.shape[-1] != "B"
                      and v.shape[-2] != "B")
        if v is None:
            return None
        v = self.tame(v, 4.0)
        K = v.shape[-1]
        N = self.pick_dim(lanes=r.random() < 0.3)
        batch = v.shape[:-2]
        shape = batch + (v.shape[-2], N)
        if self.elements(shape) > MAX_ELEMENTS or self.elements(batch + (K, N)) > MAX_ELEMENTS:
            return None
        rank = v.rank
        if r.random() < 0.5:
            u = self.tame(self.operand("f16", batch + (N, K)), 4.0)
            perm = list(range(rank - 2)) + [rank - 1, rank - 2]
            ut = f"transpose({self.use(u)}, [{', '.join(map(str, perm))}])"
        else:
            u = self.tame(self.operand("f16", batch + (K, N)), 4.0)
            ut = self.use(u)
        return self.add(f"{self.use(v)} @ {ut}", "f16", shape, v.mag * u.mag * K, False)

    def image(self):
        """An f16 [N, C, H, W] value to convolve or pool."""
        r = self.rng
        v = self.pick(lambda v: v.dtype == "f16" and v.rank == 4 and v.shape[1] != "B"
                      and v.shape[2] != "B" and v.shape[3] != "B")
        if v is None or r.random() < 0.3:
            N = "B" if self.bucket is not None and r.random() < 0.7 else r.choice([1, 1, 2])
            C = r.choice([1, 2, 3, 4, 6, 8, 16])
            H = r.choice([3, 4, 5, 7, 8, 12, 16, 28])
            W = r.choice([3, 4, 5, 7, 8, 12, 16, 28, 40])
            if self.f["wide-conv"] and r.random() < 0.2:
                W = 330
            if self.elements((N, C, H, W)) > MAX_ELEMENTS:
                return None
            v = self.new_input("f16", (N, C, H, W))
        return v

    def op_conv(self):
        r = self.rng
        v = self.image()
        if v is None:
            return None
        if v.grouped and not self.f["grouped-conv-chain"]:
            return None
        v = self.tame(v)
        N, C, H, W = v.shape
        for _ in range(10):
            K = r.choice([1, 1, 2, 3, 3, 5])
            s = r.choice([1, 1, 2, 3])
            d = r.choice([1, 1, 1, 2])
            p = r.randint(0, K)
            gs = [g for g in (1, 2, 3, 4, C) if C % g == 0]
            g = r.choice(gs) if r.random() < 0.3 else 1
            O = r.choice([1, 2, 4, 8, 16]) * g
            Ho = (H + 2 * p - d * (K - 1) - 1) // s + 1
            Wo = (W + 2 * p - d * (K - 1) - 1) // s + 1
            if Ho < 1 or Wo < 1 or self.elements((N, O, Ho, Wo)) > MAX_ELEMENTS:
                continue
            w = self.new_param("f16", (O, C // g, K, K))
            args = [self.use(v), w.name]
            if s != 1 or r.random() < 0.2:
                args.append(f"stride = {s}")
            if p != 0 or r.random() < 0.2:
                args.append(f"padding = {p}")
            if d != 1:
                args.append(f"dilation = {d}")
            if g != 1:
                args.append(f"groups = {g}")
            # |w| <= 1/sqrt(O * C/g * K): the sum of C/g*K*K terms.
            mag = v.mag * (C // g) * K * K / math.sqrt(O * (C // g) * K) + 1
            out = self.add(f"conv2d({', '.join(args)})", "f16", (N, O, Ho, Wo), mag, False,
                           conv=True, grouped=g > 1)
            if r.random() < 0.5 and (O > 1 or self.f["conv-one-channel"]):
                b = self.new_param("f16", (O,), "b")
                return self.add(f"{self.use(out)} + reshape({b.name}, [1, {O}, 1, 1])", "f16",
                                out.shape, mag + 1, False, conv=True, grouped=g > 1)
            return out
        return None

    def op_pool(self):
        r = self.rng
        v = self.image()
        if v is None:
            return None
        N, C, H, W = v.shape
        op = r.choice(["max_pool2d", "avg_pool2d"])
        for _ in range(10):
            k = r.choice([1, 2, 2, 3])
            s = r.choice([None, 1, 2])
            p = r.randint(0, k // 2)
            ss = s or k
            Ho = (H + 2 * p - k) // ss + 1
            Wo = (W + 2 * p - k) // ss + 1
            if Ho < 1 or Wo < 1:
                continue
            args = [self.use(v), f"kernel = {k}"]
            if s:
                args.append(f"stride = {s}")
            if p:
                args.append(f"padding = {p}")
            # A pool's result is a channels-last activation as a conv's is,
            # with the same rule for its fused elementwise work.
            return self.add(f"{op}({', '.join(args)})", "f16", (N, C, Ho, Wo), v.mag, v.exact,
                            conv=True, grouped=v.grouped)
        return None

    def op_reshape(self):
        r = self.rng
        v = self.pick(lambda v: v.rank >= 1)
        if v is None:
            return None
        shape = list(v.shape)
        fixed = [i for i, d in enumerate(shape) if d != "B"]
        choice = r.random()
        if choice < 0.4 and len(fixed) >= 2:
            # Merge two adjacent fixed dims.
            pairs = [i for i in range(len(shape) - 1) if shape[i] != "B" and shape[i + 1] != "B"]
            if not pairs:
                return None
            i = r.choice(pairs)
            shape[i:i + 2] = [shape[i] * shape[i + 1]]
        elif choice < 0.8 and fixed:
            # Split a fixed dim into two factors.
            i = r.choice(fixed)
            n = shape[i]
            fs = [f for f in range(2, n) if n % f == 0]
            if not fs:
                shape.insert(i, 1)
            else:
                f = r.choice(fs)
                shape[i:i + 1] = [f, n // f]
            if len(shape) > 5:
                return None
        else:
            # Flatten every fixed dim after B (or all of them).
            if "B" in shape[1:]:
                return None
            if shape and shape[0] == "B":
                rest = math.prod(shape[1:]) if len(shape) > 1 else 1
                shape = ["B", rest]
            else:
                shape = [math.prod(shape)]
        dims = ", ".join(dim_text(d) for d in shape)
        return self.add(f"reshape({self.use(v)}, [{dims}])", v.dtype, shape, v.mag, v.exact)

    def op_transpose(self):
        v = self.pick(lambda v: v.rank >= 2)
        if v is None:
            return None
        perm = list(range(v.rank))
        while perm == list(range(v.rank)):
            self.rng.shuffle(perm)
        shape = [v.shape[p] for p in perm]
        return self.add(f"transpose({self.use(v)}, [{', '.join(map(str, perm))}])", v.dtype, shape,
                        v.mag, v.exact)

    def op_slice(self):
        r = self.rng
        v = self.pick(lambda v: v.rank >= 1 and any(d != "B" and d >= 2 for d in v.shape))
        if v is None:
            return None
        parts, shape = [], []
        axes = [i for i, d in enumerate(v.shape) if d != "B" and d >= 2]
        chosen = set(r.sample(axes, min(len(axes), r.choice([1, 1, 2]))))
        index_axis = None
        if r.random() < 0.25 and v.rank >= 2:
            index_axis = r.choice(sorted(chosen))
        for i, d in enumerate(v.shape):
            if i == index_axis:
                parts.append(str(r.randrange(d)))
                continue
            if i in chosen:
                a = r.randrange(d)
                b = r.randint(a + 1, d)
                if a == 0 and r.random() < 0.5:
                    parts.append(f":{b}")
                elif b == d and r.random() < 0.5:
                    parts.append(f"{a}:")
                else:
                    parts.append(f"{a}:{b}")
                shape.append(b - a)
            else:
                parts.append(":")
                shape.append(d)
        return self.add(f"{self.use(v)}[{', '.join(parts)}]", v.dtype, shape, v.mag, v.exact)

    def op_concat(self):
        r = self.rng
        v = self.pick(lambda v: v.rank >= 1 and v.dtype != "bool")
        if v is None:
            return None
        axes = [i for i, d in enumerate(v.shape) if d != "B"]
        if not axes:
            return None
        axis = r.choice(axes)
        n = r.choice([1, 2, 3, 7, 64])
        other_shape = list(v.shape)
        other_shape[axis] = n
        if self.elements(v.shape) + self.elements(other_shape) > MAX_ELEMENTS:
            return None
        u = self.operand(v.dtype, other_shape)
        shape = list(v.shape)
        shape[axis] = v.shape[axis] + n
        items = [self.use(v), self.use(u)]
        if r.random() < 0.5:
            items.reverse()
        ax = axis - v.rank if r.random() < 0.3 else axis
        return self.add(f"concat([{', '.join(items)}], axis = {ax})", v.dtype, shape,
                        max(v.mag, u.mag), v.exact and u.exact)

    def op_split(self):
        r = self.rng
        v = self.pick(lambda v: v.rank >= 1 and any(d != "B" and d >= 2 for d in v.shape))
        if v is None:
            return None
        axes = [i for i, d in enumerate(v.shape) if d != "B" and d >= 2]
        axis = r.choice(axes)
        d = v.shape[axis]
        ns = [n for n in range(2, min(d, 8) + 1) if d % n == 0]
        if not ns:
            return None
        n = r.choice(ns)
        i = r.randrange(n)
        shape = list(v.shape)
        shape[axis] = d // n
        return self.add(f"split({self.use(v)}, {n}, axis = {axis})[{i}]", v.dtype, shape, v.mag, v.exact)

    def op_broadcast_to(self):
        v = self.pick(lambda v: 1 in v.shape)
        if v is None:
            return None
        shape = [self.rng.choice([2, 3, 8, 64]) if d == 1 else d for d in v.shape]
        if self.elements(shape) > MAX_ELEMENTS:
            return None
        return self.add(f"broadcast_to({self.use(v)}, [{', '.join(dim_text(d) for d in shape)}])",
                        v.dtype, shape, v.mag, v.exact)

    def op_gather(self):
        r = self.rng
        rank = r.choice([1, 2, 2])
        ids_shape = self.random_shape(rank)
        ids_shape = tuple(min(d, 64) if d != "B" else d for d in ids_shape)
        ids = self.pick(lambda v: v.dtype == "i32" and v.shape == ids_shape and v.exact and v.mag <= 64)
        if ids is None:
            ids = self.new_input("i32", ids_shape)
        V = r.choice([3, 10, 50, 100])
        D = self.pick_dim(lanes=True)
        tshape = (V, D) if r.random() < 0.8 else (V, r.choice([2, 3]), D)
        axis = 0
        if self.f["any-axis"] and r.random() < 0.3:
            axis = r.randrange(len(tshape))
        shape = tshape[:axis] + ids_shape + tshape[axis + 1:]
        if self.elements(shape) > MAX_ELEMENTS:
            return None
        table = self.new_param("f16", tshape, "t")
        ax = "" if axis == 0 and r.random() < 0.3 else f", axis = {axis}"
        return self.add(f"gather({table.name}, {self.use(ids)}{ax})", "f16", shape, 1.0, True)

    def op_constant(self):
        r = self.rng
        kind = r.choice(["iota", "zeros", "ones", "full"])
        if kind == "iota":
            n = self.pick_dim(lanes=True)
            i = self.add(f"iota<{n}>()", "i32", (n,), n, True)
            return self.add(f"f16({self.use(i)}) * 0.0625", "f16", (n,), n / 16, True)
        shape = self.random_shape(r.choice([1, 2]), lead_b=False)
        dt = r.choice(["f16", "f32"])
        if kind == "full":
            c = r.choice([-1.5, 0.25, 2.0])
            return self.add(f"full<{type_text(dt, shape)}>({lit(c)})", dt, shape, abs(c), True)
        return self.add(f"{kind}<{type_text(dt, shape)}>()", dt, shape, 1.0, True)

    def op_attention(self):
        """softmax(q k^T / sqrt(E)) v over [.., S, E] values, optionally heads."""
        r = self.rng
        S = r.choice([4, 8, 16, 32, 64])
        E = r.choice([8, 16, 32, 64])
        H = r.choice([1, 2, 4])
        lead = ("B",) if self.bucket is not None and r.random() < 0.7 else (1,)
        D = H * E
        x = self.pick(lambda v: v.dtype == "f16" and v.shape == lead + (S, D))
        if x is None:
            x = self.new_input("f16", lead + (S, D))
        x = self.tame(x, 4.0)
        xt = self.use(x)
        qkv = []
        for role in ("q", "k", "v"):
            w = self.new_param("f16", (D, D), "w" + role)
            p = self.add(f"{xt} @ {w.name}", "f16", lead + (S, D), x.mag * math.sqrt(D), False)
            if H > 1:
                hs = self.add(f"transpose(reshape({self.use(p)}, [{dim_text(lead[0])}, {S}, {H}, {E}]), [0, 2, 1, 3])",
                              "f16", lead + (H, S, E), p.mag, False)
                qkv.append(hs)
            else:
                qkv.append(p)
        q, k, v = qkv
        rank = len(q.shape)
        perm = list(range(rank - 2)) + [rank - 1, rank - 2]
        sshape = q.shape[:-1] + (S,)
        scores = self.add(f"f32({self.use(q)} @ transpose({self.use(k)}, [{', '.join(map(str, perm))}])) / sqrt(f32({E}))",
                          "f32", sshape, 100.0, False)
        if self.f["scores-elementwise"] and r.random() < 0.7:
            how = r.choice(["scale", "mask", "causal"])
            if how == "scale":
                scores = self.add(f"{self.use(scores)} * 0.5", "f32", sshape, 50.0, False)
            elif how == "mask":
                m = self.new_param("f32", (S, S), "mask")
                scores = self.add(f"{self.use(scores)} + {m.name}", "f32", sshape, 101.0, False)
            else:
                rows = self.add(f"reshape(iota<{S}>(), [{S}, 1])", "i32", (S, 1), S, True)
                cols = self.add(f"reshape(iota<{S}>(), [1, {S}])", "i32", (1, S), S, True)
                scores = self.add(f"select({self.use(cols)} <= {self.use(rows)}, {self.use(scores)}, "
                                  f"full<f32[{S}, {S}]>(-1e9))", "f32", sshape, 1e9, False)
        p = self.add(f"f16(softmax({self.use(scores)}, axis = -1))", "f16", sshape, 1.0, False)
        ctx = self.add(f"{self.use(p)} @ {self.use(v)}", "f16", q.shape, v.mag, False)
        if H > 1:
            return self.add(f"reshape(transpose({self.use(ctx)}, [0, 2, 1, 3]), [{dim_text(lead[0])}, {S}, {D}])",
                            "f16", lead + (S, D), ctx.mag, False)
        return ctx

    def op_helper(self):
        """A call of a generic helper fn: elementwise over a pack and a dtype,
        or a sized one with a where clause and size arithmetic."""
        r = self.rng
        name = self.fresh("g")
        kind = r.choice(["pack", "sized", "halve", "branch"] +
                        (["boolarg"] if self.f["bool-literal-args"] else []))
        if kind == "boolarg":
            v = self.pick(lambda v: v.dtype == "f16" and v.rank >= 1)
            if v is None:
                return None
            self.helpers.append(f"fn {name}<..S>(x: f16[..S], flip: bool) -> f16[..S] {{\n"
                                f"  return select(flip, -x, x)\n}}")
            flag = r.choice(["true", "false"])
            return self.add(f"{name}({self.use(v)}, {flag})", "f16", v.shape, v.mag, v.exact,
                            conv=v.conv, grouped=v.grouped)
        if kind == "pack":
            v = self.pick(lambda v: is_float(v.dtype) and v.rank >= 1)
            if v is None:
                return None
            v = self.tame(v, 4.0)
            # T may be any dtype: only the arithmetic every dtype has.
            body = r.choice(["x * x + x", "maximum(x, x * 0.25)", "x - minimum(x, 0.5)",
                             "x * 2 - x * x"])
            self.helpers.append(f"fn {name}<T: dtype, ..S>(x: T[..S]) -> T[..S] {{\n"
                                f"  return {body}\n}}")
            return self.add(f"{name}({self.use(v)})", v.dtype, v.shape, v.mag * v.mag + v.mag + 1,
                            v.exact, conv=v.conv, grouped=v.grouped)
        if kind == "sized":
            v = self.pick(lambda v: v.dtype == "f16" and v.rank == 2 and v.shape[1] != "B")
            if v is None:
                return None
            self.helpers.append(f"fn {name}<N, D>(x: f16[N, D]) -> f16[N, D] {{\n"
                                f"  let m = max(x, axis = 1, keep = true)\n"
                                f"  return (x - m) * f16(1.0 / sqrt(f32(D)))\n}}")
            return self.add(f"{name}({self.use(v)})", "f16", v.shape, 2 * v.mag, v.exact,
                            conv=v.conv, grouped=v.grouped)
        if kind == "halve":
            v = self.pick(lambda v: v.rank >= 1 and v.shape[-1] != "B" and v.shape[-1] % 2 == 0 and
                          (v.dtype != "bool" or self.f["bool-maximum"]))
            if v is None:
                return None
            self.helpers.append(f"fn {name}<T: dtype, ..S, D>(x: T[..S, D]) -> T[..S, D / 2] where D % 2 == 0 {{\n"
                                f"  let parts = split(x, 2, axis = -1)\n"
                                f"  return maximum(parts[0], parts[1])\n}}")
            shape = v.shape[:-1] + (v.shape[-1] // 2,)
            return self.add(f"{name}({self.use(v)})", v.dtype, shape, v.mag, v.exact,
                            conv=v.conv, grouped=v.grouped)
        v = self.pick(lambda v: v.dtype == "f16" and v.rank >= 1 and v.shape[-1] != "B")
        if v is None:
            return None
        v = self.tame(v)
        self.helpers.append(f"fn {name}<..S, D>(x: f16[..S, D]) -> f16[..S, D] {{\n"
                            f"  var y = relu(x)\n  if D > 16 {{\n    y = x * 0.5\n  }} else if D > 4 {{\n"
                            f"    y = maximum(x, 0.0)\n  }}\n  return y\n}}")
        return self.add(f"{name}({self.use(v)})", "f16", v.shape, v.mag, v.exact,
                        conv=v.conv, grouped=v.grouped)

    def op_loop(self):
        r = self.rng
        v = self.pick(lambda v: v.dtype == "f16" and v.rank >= 1 and v.shape[-1] != "B")
        if v is None:
            return None
        v = self.tame(v, 4.0)
        n = r.randint(1, 4)
        D = v.shape[-1]
        h = self.fresh("h")
        if r.random() < 0.5 and self.elements(v.shape) <= MAX_ELEMENTS and D * D <= 4 * MAX_ELEMENTS:
            self.imports_nn = True
            arr = self.new_model_param(f"[{n}] nn.Linear<{D}, {D}>", "layers")
            step = f"tanh({arr}[i]({h}))"
            exact = False
        else:
            arr = self.new_param("f16", (n, D), "ws").name
            step = r.choice([f"tanh({h} + {arr}[i])", f"{h} * 0.5 + relu({arr}[i])",
                             f"maximum({h}, {arr}[i] * f16(i))"])
            exact = v.exact
        self.lines.append(f"var {h}: {type_text('f16', v.shape)} = {self.use(v)}")
        self.lines.append(f"for i in 0..{n} {{")
        self.lines.append(f"  {h} = {step}")
        self.lines.append("}")
        # The loop's elementwise work continues v's (a conv's, say).
        hv = Val(h, "f16", v.shape, max(v.mag, 2.0), exact, conv=v.conv, grouped=v.grouped)
        self.values.append(hv)
        return hv

    # ---- the program -------------------------------------------------------
    OPS = [  # (feature, weight, method)
        ("elementwise", 6, "op_unary"),
        ("elementwise", 8, "op_binary"),
        ("casts", 3, "op_cast"),
        ("select", 2, "op_select"),
        ("reduce", 3, "op_reduce"),
        ("argmax", 1, "op_argmax"),
        ("softmax", 2, "op_softmax"),
        ("layernorm", 2, "op_layernorm"),
        ("matmul", 4, "op_linear"),
        ("matmul", 1, "op_matmul2"),
        ("conv", 3, "op_conv"),
        ("pool", 2, "op_pool"),
        ("layout", 2, "op_reshape"),
        ("layout", 2, "op_transpose"),
        ("layout", 3, "op_slice"),
        ("layout", 2, "op_concat"),
        ("layout", 1, "op_split"),
        ("layout", 1, "op_broadcast_to"),
        ("gather", 2, "op_gather"),
        ("constants", 1, "op_constant"),
        ("attention", 1, "op_attention"),
        ("generics", 2, "op_helper"),
        ("loops", 1, "op_loop"),
    ]

    def generate(self):
        r = self.rng
        if self.f["buckets"] and r.random() < 0.4:
            sizes = sorted(r.sample([1, 2, 3, 4, 5, 8], r.choice([1, 2, 2])))
            self.bucket = sizes
            self.bvalue = max(sizes)
        ops = [(w, m) for feat, w, m in self.OPS if self.f[feat]]
        total = sum(w for w, _ in ops)
        self.start_value()
        steps = r.randint(2, 9)
        made = 0
        tries = 0
        while made < steps and tries < 60:
            tries += 1
            x = r.uniform(0, total)
            for w, m in ops:
                x -= w
                if x <= 0:
                    break
            if getattr(self, m)() is not None:
                made += 1
        # The result: the newest computed value (an input as a last resort),
        # with the values nothing read folded into it, so that no work is
        # dead: one of the same type added, another's maximum (exact) added
        # as a scalar.
        computed = [v for v in self.values if v not in self.inputs and not v.name.startswith("h")]
        out = computed[-1] if computed else self.values[-1]
        for v in computed[:-1]:
            if v.uses or v.dtype == "bool" or out.dtype == "bool":
                continue
            if v.dtype == out.dtype and v.shape == out.shape and (
                    not (out.conv or v.conv) or self.f["conv-odd-operand"]):
                out = self.add(f"{self.use(out)} + {self.use(self.tame(v))}", out.dtype, out.shape,
                               out.mag + min(v.mag, SQUASH_ABOVE), out.exact and v.exact)
            elif v.rank >= 1 and (not out.conv or self.f["conv-odd-operand"]):
                # Flattened first: a reduction over several axes at once is
                # refused on the chip today (E0800).
                expr = self.use(v)
                if v.rank > 1:
                    n = math.prod(d for d in v.shape if d != "B")
                    flat = (f"B * {n}" if n != 1 else "B") if "B" in v.shape else str(n)
                    expr = f"reshape({expr}, [{flat}])"
                expr = f"max({expr}, axis = 0)"
                m = self.add(expr, v.dtype, (), v.mag, v.exact)
                if m.dtype != out.dtype:
                    m = self.add(f"{out.dtype}({self.use(self.tame(m, 1000.0))})", out.dtype, (),
                                 m.mag, m.exact)
                m = self.tame(m)
                out = self.add(f"{self.use(out)} + {self.use(m)}", out.dtype, out.shape,
                               out.mag + m.mag, out.exact and m.exact)
            out = self.tame(out)
        return self.render(out)

    def render(self, out):
        head = [f"// lpu-smith seed {self.seed}"]
        if self.imports_nn:
            head.append("import std.nn")
        text = "\n".join(head) + "\n\n"
        for h in self.helpers:
            text += h + "\n\n"
        generic = "<B>" if self.bucket is not None and any(
            "B" in v.shape for v in self.inputs) else ""
        args = ", ".join(f"{v.name}: {type_text(v.dtype, v.shape)}" for v in self.inputs)
        text += "model M {\n"
        for name, t in self.params:
            text += f"  param {name}: {t}\n"
        text += f"  fn forward{generic}({args}) -> {type_text(out.dtype, out.shape)} {{\n"
        for line in self.lines:
            text += f"    {line}\n"
        text += f"    return {out.name}\n  }}\n}}\n"
        if generic:
            text += f"entry main = M.forward<B in {{{', '.join(map(str, self.bucket))}}}>\n"
        else:
            text += "entry main = M.forward\n"
        return text


def generate(seed, features=None):
    """The program of this seed, as .lpu text."""
    feats = features if isinstance(features, dict) else parse_features(features)
    return Program(seed, feats).generate()


def main(argv):
    import argparse
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("seed", type=int)
    p.add_argument("--features", default="default")
    p.add_argument("-o", "--output")
    a = p.parse_args(argv)
    text = generate(a.seed, parse_features(a.features))
    if a.output:
        with open(a.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])

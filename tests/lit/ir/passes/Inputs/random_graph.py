"""Differential test of the pass pipeline against NumPy.

  random_graph.py generate SEED      prints a random IR function
  random_graph.py compare A.ir B.ir  evaluates both on the same random
                                     inputs and fails unless every output
                                     agrees bit for bit (NaN with NaN)
  random_graph.py check DIR N ARGS   for seeds 1..N: generate, run
                                     `lpu-opt ARGS` on it, compare

The evaluator is independent of the passes: each op computes in float32
(or the integers' own NumPy types) and rounds the result to its dtype, the
reference interpreter's rule (docs/passes.md, fold)."""
import os
import random
import re
import subprocess
import sys

import numpy as np

NP = {"f16": np.float16, "f32": np.float32, "i8": np.int8, "i32": np.int32, "bool": np.bool_}
CONSTS = ["0.0", "-0.0", "1.0", "2.0", "0.5", "-1.5", "3.0"]
INT_CONSTS = ["0", "1", "-1", "3", "-7", "100", "127", "-128", "300"]
UNARY = {"exp": np.exp, "neg": np.negative,
         "relu": lambda v: np.where(np.isnan(v) | (v > 0), v, np.float32(0)),
         "tanh": np.tanh, "abs": np.abs, "sqrt": np.sqrt}


def first_on_ties(pick_second):
    """docs/ir.md's maximum/minimum: the first NaN operand, else the first
    operand on ties (np.maximum returns the second of 0.0 and -0.0)."""
    return lambda a, b: np.where(np.isnan(a), a, np.where(np.isnan(b) | pick_second(a, b), b, a))


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "maximum": first_on_ties(lambda a, b: b > a),
          "minimum": first_on_ties(lambda a, b: b < a)}
# docs/ir.md: integers wrap, div floors, x // 0 and x % 0 are 0 (NumPy's
# integer behaviour, with its warnings silenced).
INT_UNARY = {"neg": np.negative, "abs": np.abs, "relu": lambda v: np.where(v > 0, v, 0)}
INT_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.floor_divide,
              "rem": np.remainder, "maximum": np.maximum, "minimum": np.minimum}
INT_RANGE = {np.int8: (-128, 127), np.int32: (-2**31, 2**31 - 1)}


def generate(seed, out=sys.stdout):
    rng = random.Random(seed)
    lines = ['func @g {', '  %x = input {name = "x"} : f16[4, 6]',
             '  %y = input {name = "y"} : f16[4, 6]', '  %k = input {name = "k"} : i32[4, 6]']
    # values by type: name list
    pool = {"f16[4, 6]": ["x", "y"], "f32[4, 6]": [], "f16[6, 4]": [], "f16[24]": [],
            "bool[4, 6]": [], "i32[4, 6]": ["k"], "i8[4, 6]": []}
    n = 0

    def pick(t):
        return rng.choice(pool[t][-12:])

    def add(t, text):
        nonlocal n
        name = f"v{n}"
        n += 1
        lines.append(f"  %{name} = {text} : {t}")
        pool[t].append(name)

    for _ in range(160):
        r = rng.random()
        t = "f16[4, 6]"
        if r < 0.25:
            add_int(rng, pool, add, pick)
        elif r < 0.4:
            add(rng.choice(["f16[4, 6]", "f32[4, 6]"]), f"constant {{value = {rng.choice(CONSTS)}}}")
        elif r < 0.35:
            add(t, f"{rng.choice(list(UNARY))} %{pick(t)}")
        elif r < 0.6:
            t = rng.choice(["f16[4, 6]", "f16[4, 6]", "f32[4, 6]"]) if pool["f32[4, 6]"] else t
            add(t, f"{rng.choice(list(BINARY))} %{pick(t)}, %{pick(t)}")
        elif r < 0.7:
            if rng.random() < 0.5:
                add("f32[4, 6]", f"convert %{pick('f16[4, 6]')}")
            elif pool["f32[4, 6]"]:
                add("f16[4, 6]", f"convert %{pick('f32[4, 6]')}")
        elif r < 0.8:
            if pool["f16[6, 4]"] and rng.random() < 0.5:
                add("f16[4, 6]", f"transpose %{pick('f16[6, 4]')} {{perm = [1, 0]}}")
            else:
                add("f16[6, 4]", f"transpose %{pick('f16[4, 6]')} {{perm = [1, 0]}}")
        elif r < 0.9:
            if pool["f16[24]"] and rng.random() < 0.5:
                add("f16[4, 6]", f"reshape %{pick('f16[24]')}")
            else:
                add("f16[24]", f"reshape %{pick('f16[4, 6]')}")
        else:
            c = pick("f16[4, 6]")
            add("bool[4, 6]", f"gt %{c}, %{pick('f16[4, 6]')}")
            cond = f"v{n - 1}"
            add("f16[4, 6]", f"select %{cond}, %{pick('f16[4, 6]')}, %{pick('f16[4, 6]')}")
    outs = (pool["f16[4, 6]"][-4:] + pool["f32[4, 6]"][-2:] + pool["i32[4, 6]"][-2:] +
            pool["i8[4, 6]"][-2:])
    names = ", ".join(f'"o{i}"' for i in range(len(outs)))
    lines.append("  return " + ", ".join("%" + o for o in outs) + " {names = [" + names + "]}")
    lines.append("}")
    print("\n".join(lines), file=out)


def add_int(rng, pool, add, pick):
    t = rng.choice(["i32[4, 6]", "i8[4, 6]"])
    r = rng.random()
    if r < 0.3 or not pool[t]:
        add(t, f"constant {{value = {rng.choice(INT_CONSTS)}}}")
    elif r < 0.45:
        add(t, f"{rng.choice(list(INT_UNARY))} %{pick(t)}")
    elif r < 0.8:
        add(t, f"{rng.choice(list(INT_BINARY))} %{pick(t)}, %{pick(t)}")
    elif r < 0.9:
        other = "i8[4, 6]" if t == "i32[4, 6]" else "i32[4, 6]"
        if pool[other]:
            add(t, f"convert %{pick(other)}")
    elif r < 0.95:
        add("i32[4, 6]", f"convert %{pick('f16[4, 6]')}")
    else:
        add("f32[4, 6]", f"convert %{pick('i32[4, 6]')}")


OP = re.compile(r"^\s*(?:%([\w.]+) = )?(\w+)(.*?)(?: \{(.*)\})? : (\w+)\[([\d, ]*)\]")


def evaluate(path, inputs):
    env, outputs = {}, None
    with open(path) as f:
        for line in f:
            line = line.split(" loc(")[0].rstrip()
            s = line.strip()
            if not s or s.startswith("func") or s == "}" or s.startswith("//"):
                continue
            if s.startswith("return"):
                outputs = [env[v] for v in re.findall(r"%([\w.]+)", s.split("{")[0])]
                continue
            m = OP.match(line)
            assert m, line
            name, op, args, attrs, dtype, shape = m.groups()
            args = [env[a] for a in re.findall(r"%([\w.]+)", args)]
            dt = NP[dtype]
            shape = tuple(int(d) for d in shape.split(",") if d.strip())
            f32 = [a.astype(np.float32) if a.dtype == np.float16 else a for a in args]
            with np.errstate(all="ignore"):
                if op == "input":
                    v = inputs[re.search(r'name = "(\w+)"', attrs).group(1)]
                elif op == "constant":
                    value = re.search(r"value = ([^,}]+)", attrs).group(1)
                    value = {"true": "1", "false": "0"}.get(value, value)
                    if re.fullmatch(r"-?\d+", value):  # an integer keeps its low bits
                        v = np.full(shape, np.int64(int(value)))
                    else:
                        v = np.full(shape, np.float32(float(value)))
                elif dt in INT_RANGE and op in INT_UNARY:
                    v = INT_UNARY[op](args[0])
                elif dt in INT_RANGE and op in INT_BINARY:
                    v = INT_BINARY[op](args[0], args[1])
                elif op in UNARY:
                    v = UNARY[op](f32[0])
                elif op in BINARY:
                    v = BINARY[op](f32[0], f32[1])
                elif op == "convert" and dt in INT_RANGE and args[0].dtype.kind == "f":
                    lo, hi = INT_RANGE[dt]  # toward zero, saturating, NaN -> 0
                    v = np.nan_to_num(np.clip(np.trunc(f32[0].astype(np.float64)), lo, hi))
                elif op == "convert":
                    v = args[0]
                elif op == "transpose":
                    v = np.transpose(args[0], [int(p) for p in re.findall(r"\d+", attrs)])
                elif op == "reshape":
                    v = args[0].reshape(shape)
                elif op == "gt":
                    v = f32[0] > f32[1]
                elif op == "select":
                    v = np.where(args[0], args[1], args[2])
                else:
                    raise SystemExit(f"unknown op {op}")
                env[name] = np.asarray(v).astype(dt)
    return outputs


def compare(a, b):
    rng = np.random.default_rng(0)
    inputs = {k: (rng.standard_normal((4, 6)) * 2).astype(np.float16) for k in ("x", "y")}
    inputs["k"] = rng.integers(-300, 300, (4, 6)).astype(np.int32)
    ra, rb = evaluate(a, inputs), evaluate(b, inputs)
    assert len(ra) == len(rb)
    for i, (u, v) in enumerate(zip(ra, rb)):
        same = (np.isnan(u) & np.isnan(v)) | (u.view(np.uint8).reshape(u.shape + (-1,)) ==
                                              v.view(np.uint8).reshape(v.shape + (-1,))).all(-1)
        if u.dtype != v.dtype or u.shape != v.shape or not same.all():
            raise SystemExit(f"output {i} differs:\n{u}\n{v}")
    return len(ra)


def check(directory, count, args):
    for seed in range(1, count + 1):
        original = os.path.join(directory, f"graph{seed}.ir")
        optimized = os.path.join(directory, f"graph{seed}.opt.ir")
        with open(original, "w") as f:
            generate(seed, f)
        subprocess.run(["lpu-opt", original, "-o", optimized] + args, check=True)
        try:
            compare(original, optimized)
        except (SystemExit, AssertionError) as e:
            raise SystemExit(f"seed {seed}: {original} -> {optimized}: {e}")
    print(f"{count} graphs agree")


if __name__ == "__main__":
    if sys.argv[1] == "generate":
        generate(int(sys.argv[2]))
    elif sys.argv[1] == "compare":
        print(f"{compare(sys.argv[2], sys.argv[3])} outputs agree")
    else:
        check(sys.argv[2], int(sys.argv[3]), sys.argv[4:])

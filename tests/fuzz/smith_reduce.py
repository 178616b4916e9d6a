#!/usr/bin/env python3
"""An automatic reducer for lpu-smith's failing programs, in the manner of
C-Reduce: transformations that make a program smaller are tried one at a
time, and each is kept when the harness (smith_check.py) still reports the
same failure; passes repeat until none makes progress (or time runs out).

Transformations, in order of the size they remove:
  - delete a helper fn, a loop (its `var` and `for` block), a statement, a
    param, an import, an input of the entry's signature;
  - return an earlier value (the return type taken from its `let` type:
    lpu-smith annotates every `let`);
  - replace a value by one of its operands of the same type (every use
    renamed, the `let` deleted);
  - replace a call by its first argument (`tanh(v3)` -> `v3`), an operand
    of a binary operator by the other side;
  - shrink sizes: every occurrence of one integer made 1, 2 or half, and a
    bucket set cut to one of its sizes.
A candidate the type checker rejects is simply not interesting. "The same
failure" is the same kind, tool and message class (same(): the signal or
exit status of a crash, the code and message of a refusal).

usage: smith_reduce.py FILE.lpu [-o OUT.lpu] [--bin DIR] [--seconds S]
"""
import os
import re
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import smith_check  # noqa: E402

NAME = re.compile(r"\b(?:v|x|h|w|b|t|fc|ln|layers|ws|wq|wk|wv)\d+\b|\bout\b")
LET = re.compile(r"^(\s*)let (\w+): ([^=]+?) = (.*)$")


def failure_class(o):
    """What must stay the same while reducing."""
    d = o.detail
    if o.kind == "crash":
        m = re.search(r"(killed by signal \d+|exited \d+|without a diagnostic|sanitizer report: \S+)", d)
        return (o.kind, o.tool, m.group(1) if m else "")
    if o.kind in ("sim-refused", "ref-refused", "lowering"):
        msg = re.sub(r"\S+\.(lpx|lpu|npy)", "F", o.message or d)
        msg = re.sub(r"'[^']*'|\b\d+\b", "#", msg)
        return (o.kind, o.tool, o.code, msg[:60])
    return (o.kind, o.tool)


def split_args(text):
    """Comma-separated items at bracket depth 0."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += {"(": 1, "[": 1, "<": 1, ")": -1, "]": -1, ">": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


class Reducer:
    def __init__(self, bindir, timeout, seed, deadline, verbose):
        self.bin, self.timeout, self.seed = bindir, timeout, seed
        self.deadline, self.verbose = deadline, verbose
        self.tmp = tempfile.mkdtemp(prefix="smith-reduce-")
        self.tests = 0
        self.target = None
        self.seen = {}

    def outcome(self, text):
        path = os.path.join(self.tmp, "cand.lpu")
        with open(path, "w") as f:
            f.write(text)
        self.tests += 1
        return smith_check.check(path, os.path.join(self.tmp, "work"), self.bin, self.timeout, self.seed)

    def interesting(self, text):
        if text in self.seen:
            return self.seen[text]
        ok = False
        if time.time() < self.deadline:
            o = self.outcome(text)
            ok = failure_class(o) == self.target
        self.seen[text] = ok
        return ok

    def try_all(self, text, candidates):
        """The first interesting candidate (smaller than text), else None."""
        for c in candidates:
            if c is None or c == text or len(c) > len(text) + 40:
                continue
            if time.time() >= self.deadline:
                return None
            if self.interesting(c):
                return c
        return None

    # ---- transformations -------------------------------------------------
    @staticmethod
    def blocks(lines):
        """(start, end) line ranges that may go as a whole: a top-level fn,
        a `var` + its `for` block, a `for` block, one line."""
        out = []
        i = 0
        while i < len(lines):
            ln = lines[i]
            s = ln.strip()
            if (s.startswith("fn ") and not ln.startswith(" ")) or s.startswith("for ") or \
                    (s.startswith("var ") and i + 1 < len(lines) and lines[i + 1].strip().startswith("for ")):
                depth, j = 0, i
                while j < len(lines):
                    depth += lines[j].count("{") - lines[j].count("}")
                    if depth <= 0 and "{" in "".join(lines[i:j + 1]):
                        break
                    j += 1
                out.append((i, j + 1))
            i += 1
        for i, ln in enumerate(lines):
            s = ln.strip()
            if s.startswith(("let ", "param ", "import ", "var ")) or (
                    s.startswith("//") and not s.startswith(("// lpu-smith seed", "// lpuc-flags"))):
                out.append((i, i + 1))
        out.sort(key=lambda r: -(r[1] - r[0]))
        return out

    def dead_code(self, text):
        """Everything the result does not read, gone at once: lets, loops,
        params, inputs, helper fns, the import."""
        lines = text.split("\n")
        ret = [i for i, l in enumerate(lines) if l.startswith("    return ")]
        if not ret:
            return
        defs = {}
        for i, l in enumerate(lines):
            m = re.match(r"\s*(?:let|var) (\w+)", l)
            if m:
                defs.setdefault(m.group(1), []).append(i)
            m = re.match(r"\s+(\w+) = ", l)
            if m:
                defs.setdefault(m.group(1), []).append(i)
        live, todo = set(), [ret[-1]]
        while todo:
            i = todo.pop()
            rhs = lines[i].split("=", 1)[-1] if "=" in lines[i] else lines[i]
            for n in re.findall(r"\b[A-Za-z_]\w*\b", rhs):
                if n in defs and n not in live:
                    live.add(n)
                    todo += defs[n]
        # A loop stays with its var (its body assigns it).
        keep = set()
        for n in live:
            keep.update(defs[n])
        new = []
        for i, l in enumerate(lines):
            m = re.match(r"\s*(?:let|var) (\w+)", l)
            if m and i not in keep:
                continue
            new.append(l)
        text2 = "\n".join(new)
        # Loops whose var went: their for block goes too.
        out, skip = [], 0
        lines2 = text2.split("\n")
        for i, l in enumerate(lines2):
            if skip:
                skip += l.count("{") - l.count("}")
                continue
            m = re.match(r"\s*for \w+ in .*\{", l)
            if m and i + 1 < len(lines2):
                assigned = re.match(r"\s*(\w+) = ", lines2[i + 1])
                if assigned and assigned.group(1) not in live:
                    skip = l.count("{") - l.count("}")
                    continue
            out.append(l)
        text2 = "\n".join(out)
        # Params, inputs, helper fns, the import nothing names.
        body = text2
        lines3 = text2.split("\n")
        res = []
        for l in lines3:
            m = re.match(r"\s*param (\w+):", l)
            if m and len(re.findall(rf"\b{m.group(1)}\b", body)) <= 1:
                continue
            res.append(l)
        text2 = "\n".join(res)
        m = re.search(r"(fn forward\w*(?:<[^>]*>)?\()(.*)(\) ->)", text2)
        if m:
            args = [a for a in split_args(m.group(2))
                    if len(re.findall(rf"\b{a.split(':')[0].strip()}\b", text2)) > 1]
            text2 = text2[:m.start(2)] + ", ".join(args) + text2[m.end(2):]
        for fn in re.findall(r"^fn (\w+)", text2, re.M):
            if len(re.findall(rf"\b{fn}\b", text2)) == 1:
                ls = text2.split("\n")
                a = next(i for i, l in enumerate(ls) if l.startswith(f"fn {fn}"))
                b = next(i for i in range(a, len(ls)) if ls[i] == "}")
                text2 = "\n".join(ls[:a] + ls[b + 1:])
        if "nn." not in text2.replace("import std.nn", ""):
            text2 = text2.replace("import std.nn\n", "")
        if not re.search(r"\bB\b", text2.split("entry")[0].split("fn forward", 1)[-1].split("{", 1)[-1]) \
                and "<B>" in text2 and not re.search(r"\[[^\]]*\bB\b", text2):
            text2 = re.sub(r"fn forward<B>", "fn forward", text2)
            text2 = re.sub(r"\.forward<B in \{[^}]*\}>", ".forward", text2)
        yield text2

    def deletions(self, text):
        lines = text.split("\n")
        for a, b in self.blocks(lines):
            yield "\n".join(lines[:a] + lines[b:])

    def return_earlier(self, text):
        lines = text.split("\n")
        ret = [i for i, l in enumerate(lines) if l.strip().startswith("return ") and l.startswith("    return")]
        if not ret:
            return
        r = ret[-1]
        lets = [(i, LET.match(l)) for i, l in enumerate(lines[:r])]
        lets = [(i, m) for i, m in lets if m]
        for i, m in reversed(lets):
            name, typ = m.group(2), m.group(3).strip()
            new = list(lines)
            new[r] = re.sub(r"return \w+", f"return {name}", lines[r])
            for k in range(r, -1, -1):
                if "fn forward" in new[k]:
                    new[k] = re.sub(r"-> .* \{$", f"-> {typ} {{", new[k])
                    break
            yield "\n".join(new)

    def types(self, lines):
        t = {}
        for l in lines:
            m = LET.match(l)
            if m:
                t[m.group(2)] = m.group(3).strip()
            m = re.search(r"fn forward\w*(?:<[^>]*>)?\((.*)\) ->", l)
            if m:
                for arg in split_args(m.group(1)):
                    if ":" in arg:
                        k, v = arg.split(":", 1)
                        t[k.strip()] = v.strip()
        return t

    def operand_substitutions(self, text):
        lines = text.split("\n")
        types = self.types(lines)
        for i, l in enumerate(lines):
            m = LET.match(l)
            if not m:
                continue
            name, typ, expr = m.group(2), m.group(3).strip(), m.group(4)
            for ref in dict.fromkeys(NAME.findall(expr)):
                if types.get(ref) == typ and ref != name:
                    rest = [re.sub(rf"\b{name}\b", ref, x) for x in lines[i + 1:]]
                    yield "\n".join(lines[:i] + rest)

    def simplifications(self, text):
        lines = text.split("\n")
        for i, l in enumerate(lines):
            m = LET.match(l)
            if not m:
                continue
            ind, name, typ, expr = m.groups()
            # A call replaced by its first argument.
            for c in re.finditer(r"\b(\w+)\(", expr):
                start = c.end()
                depth, j = 1, start
                while j < len(expr) and depth:
                    depth += {"(": 1, ")": -1}.get(expr[j], 0)
                    j += 1
                inner = expr[start:j - 1]
                depth, cut = 0, len(inner)
                for k, ch in enumerate(inner):
                    depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(ch, 0)
                    if ch == "," and depth == 0:
                        cut = k
                        break
                first = inner[:cut].strip()
                new = expr[:c.start()] + first + expr[j:]
                yield "\n".join(lines[:i] + [f"{ind}let {name}: {typ} = {new}"] + lines[i + 1:])
            # A binary operator's side.
            for op in (" + ", " - ", " * ", " / ", " @ "):
                if op in expr:
                    a, b = expr.split(op, 1)
                    for side in (a, b):
                        yield "\n".join(lines[:i] + [f"{ind}let {name}: {typ} = {side}"] + lines[i + 1:])

    def input_deletions(self, text):
        m = re.search(r"(fn forward\w*(?:<[^>]*>)?\()(.*)(\) ->)", text)
        if not m:
            return
        args = split_args(m.group(2))
        for k in range(len(args)):
            rest = args[:k] + args[k + 1:]
            yield text[:m.start(2)] + ", ".join(rest) + text[m.end(2):]

    def size_shrinks(self, text):
        lines = text.split("\n")
        code = [i for i, l in enumerate(lines) if not l.lstrip().startswith("//")]
        number = r"(?<![\w.]){}(?![\w.])"
        nums = sorted({int(n) for i in code for n in re.findall(number.format(r"(\d+)"), lines[i])
                       if int(n) >= 2}, reverse=True)
        for n in nums:
            for smaller in dict.fromkeys([1, 2, n // 2]):
                if smaller < 1 or smaller >= n:
                    continue
                new = list(lines)
                for i in code:
                    new[i] = re.sub(number.format(n), str(smaller), lines[i])
                yield "\n".join(new)

    def bucket_cuts(self, text):
        """A bucket set cut to one of its sizes, the smallest first."""
        m = re.search(r"in \{([^}]*)\}", text)
        if m:
            sizes = [s.strip() for s in m.group(1).split(",")]
            if len(sizes) > 1:
                for s in sizes:
                    yield text[:m.start(1)] + s + text[m.end(1):]

    def reduce(self, text):
        o = self.outcome(text)
        self.target = failure_class(o)
        if not o.failed:
            return text, o
        passes = [self.dead_code, self.bucket_cuts, self.deletions, self.return_earlier, self.operand_substitutions,
                  self.input_deletions, self.simplifications, self.size_shrinks]
        progress = True
        while progress and time.time() < self.deadline:
            progress = False
            for p in passes:
                while time.time() < self.deadline:
                    c = self.try_all(text, p(text))
                    if c is None:
                        break
                    text = c
                    progress = True
                    if self.verbose:
                        print(f"  {p.__name__}: {len(text)} chars ({self.tests} tests)", file=sys.stderr)
        return text, o


def tidy(text):
    """Blank lines run together, trailing spaces gone."""
    text = re.sub(r"\n{3,}", "\n\n", text)
    return "\n".join(l.rstrip() for l in text.split("\n")).strip() + "\n"


def reduce_file(src, out, bindir, timeout=60, seed=0, seconds=300, verbose=True):
    """Reduces src, writes out; returns (original Outcome, reduced text)."""
    with open(src) as f:
        text = f.read()
    r = Reducer(bindir, timeout, seed, time.time() + seconds, verbose)
    try:
        reduced, o = r.reduce(text)
    finally:
        import shutil
        shutil.rmtree(r.tmp, ignore_errors=True)
    reduced = tidy(reduced)
    with open(out, "w") as f:
        f.write(f"// reduced by smith_reduce.py ({r.tests} tests): {o.kind}"
                f"{' [known: ' + ', '.join(o.tags) + ']' if o.tags else ''}\n"
                f"// {o.detail.splitlines()[0][:300] if o.detail else ''}\n" + reduced)
    return o, reduced


def main(argv):
    import argparse
    p = argparse.ArgumentParser(description="reduce a failing lpu-smith program")
    p.add_argument("file")
    p.add_argument("-o", "--output")
    p.add_argument("--bin", default=None)
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--seed", type=int, default=None,
                   help="the input seed (default: the program's `// lpu-smith seed N` line)")
    p.add_argument("--seconds", type=float, default=300)
    a = p.parse_args(argv)
    out = a.output or a.file[:-4] + ".reduced.lpu"
    o, text = reduce_file(a.file, out, a.bin or smith_check.default_bindir(), a.timeout, a.seed,
                          a.seconds)
    if not o.failed:
        print(f"{a.file}: {o.kind}, nothing to reduce")
        return 1
    print(f"{o.kind}: {o.detail.splitlines()[0] if o.detail else ''}")
    print(f"reduced to {out}:")
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

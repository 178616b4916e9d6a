"""The diagnostics coverage test (coverage.test says what it checks).

usage: coverage.test.py SRC_ROOT   (lpuc on PATH)
"""
import os
import re
import subprocess
import sys

# Codes no program lpuc accepts up to the scheduler can produce, and why.
# A code leaves this list as soon as a lit test produces it.
UNPRODUCIBLE = {
    "E0802": "every op of the IR has a lowering; the refusal guards an op added without one",
    "E0803": "the type checker gives pools, reductions, softmax, gather ids and the "
             "elementwise ops only the dtypes the chip takes (E0309, E0700)",
    "E0808": "the type checker refuses inconsistent groups (E03xx) before lowering",
    "E0809": "legalisation brings a softmax's, an argmax's or a reduction's axis last first",
    "E0813": "a transpose moves lanes through the MEM's gather first; no program found "
             "whose lane moves need more maps than a slice holds",
    "E0814": "the packing policy stores packed only what the lowerings read packed",
    "E0816": "the layout assignment gives reductions and global pools the result "
             "layout their lowering writes",
    "E0817": "the layout assignment gives a fusion group's operands its result's order",
    "E0818": "the layout assignment gives a fusion group's operands its result's rows",
    "E0819": "attention is lowered as a whole only for the shapes its K^T gather takes",
    "E0820": "the placer's limits (a MEM port twice, operand streams) have no known "
             "program left that meets them",
    "E0824": "an internal error: a legalisation rewrite the IR verifier rejects",
    "E0825": "an internal error: the encoder refusing the scheduler's instructions, or "
             "the pipeline run without a chip",
}

SUFFIXES = (".lpu", ".test", ".lpuasm", ".ir")  # tests/lit/lit.cfg.py
PREFIX_OPTION = re.compile(r"-?-check-prefix(?:es)?[= ]([A-Za-z0-9_,-]+)")
POSITIVE = r"(?:-NEXT|-SAME|-DAG|-LABEL|-EMPTY|-COUNT-\d+)?:"


def catalogue(root):
    text = open(os.path.join(root, "frontend", "Diagnostics.def")).read()
    entries = re.findall(r"^DIAG\((\w+),\s*(\w+),", text, re.M)
    codes = [c for c, _ in entries]
    assert len(codes) == len(set(codes)), "duplicate codes in the catalogue"
    return {c: severity.lower() for c, severity in entries}


def lit_tests(root):
    top = os.path.join(root, "tests", "lit")
    for dirpath, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d != "Inputs"]   # inputs of tests, not tests
        for name in sorted(files):
            if name.endswith(SUFFIXES):
                path = os.path.join(dirpath, name)
                yield os.path.relpath(path, top), open(path, errors="replace").read()


def produced(text, severities):
    """{code: severity} a test's checks expect to see produced."""
    run = [l for l in text.splitlines() if "RUN:" in l]
    prefixes = set()
    for line in run:
        for call in line.split("|")[1:] + [line]:
            if "FileCheck" not in call:
                continue
            given = PREFIX_OPTION.findall(call)
            for g in given:
                prefixes.update(p for p in g.split(",") if p)
            if not given:
                prefixes.add("CHECK")
    verify = any(re.search(r"(^|\s)-verify(\s|$)", l) for l in run)
    seen = {}
    for line in text.splitlines():
        rest = None
        for p in prefixes:
            m = re.search(r"(?<![A-Za-z0-9_-])" + re.escape(p) + POSITIVE, line)
            if m:
                rest = line[m.end():]
                break
        if rest is None and verify:
            m = re.search(r"expected-((?:error|warning)(?:-re)?\[\w+\].*)", line)
            if m:
                rest = m.group(1).replace("-re[", "[", 1)
        if rest is None:
            continue
        for severity, code in re.findall(r"\b(error|warning)\[(\w+)\]", rest):
            if severities.get(code) == severity:
                seen[code] = severity
    return seen


def main():
    root = sys.argv[1]
    severities = catalogue(root)
    covered = {}
    for name, text in lit_tests(root):
        for code in produced(text, severities):
            covered.setdefault(code, name)
    problems = []
    for code in sorted(severities):
        if code in covered and code in UNPRODUCIBLE:
            problems.append(f"{code} is listed as unproducible, but {covered[code]} produces it: "
                            "take it off the list in coverage.test.py")
        elif code not in covered and code not in UNPRODUCIBLE:
            problems.append(f"{code} is produced by no lit test: add one that triggers it "
                            f"(its {severities[code]}[{code}] in a CHECK line or an "
                            f"expected-{severities[code]}[{code}] comment), or list it as "
                            "unproducible in coverage.test.py with the reason")
    for code, why in UNPRODUCIBLE.items():
        if code not in severities:
            problems.append(f"{code} is listed as unproducible but is not in the catalogue")
        elif not why.strip():
            problems.append(f"{code} is listed as unproducible without a reason")
    for code in sorted(severities):
        out = subprocess.run(["lpuc", "--explain", code], capture_output=True, text=True)
        if out.returncode != 0 or len(out.stdout.splitlines()) < 3:
            problems.append(f"{code} has no explanation (lpuc --explain {code})")
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print(f"{len(severities)} codes: every code is explained and produced by a lit test, "
          f"but {len(UNPRODUCIBLE)} listed as unproducible")


if __name__ == "__main__":
    main()

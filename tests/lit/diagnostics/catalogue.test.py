import os
import re
import subprocess
import sys

root = sys.argv[1]
catalogue = open(os.path.join(root, "frontend", "Diagnostics.def")).read()
codes = re.findall(r"^DIAG\((\w+),", catalogue, re.M)
assert len(codes) == len(set(codes)), "duplicate codes in the catalogue"
tests = []
for dirpath, _, files in os.walk(os.path.join(root, "tests", "lit")):
    for name in files:
        if name.endswith((".lpu", ".test")):
            tests.append(open(os.path.join(dirpath, name), errors="replace").read())
corpus = "\n".join(tests)
missing_tests = [c for c in codes if not re.search(r"\[" + c + r"\]", corpus)]
missing_explain = []
for c in codes:
    out = subprocess.run(["lpuc", "--explain", c], capture_output=True, text=True)
    if out.returncode != 0 or len(out.stdout.splitlines()) < 3:
        missing_explain.append(c)
if missing_tests or missing_explain:
    print("codes without a test:", missing_tests)
    print("codes without an explanation:", missing_explain)
    sys.exit(1)
print(f"{len(codes)} codes, each tested and explained")

"""Checks the weights of lowered IR against `lpuc --emit=params`.

Usage: params_match.py IR_FILE PARAMS_FILE
Every `param` op of every function must name a weight that --emit=params
lists for that entry, with the same type, and each at most once. Prints
one line per function: `@name<bucket>: N params match`.
"""
import re
import sys

ir_text = open(sys.argv[1]).read()
params_text = open(sys.argv[2]).read()

# --emit=params: `entry NAME ...:` then `  path: type` lines.
listed = {}
entry = None
for line in params_text.splitlines():
    m = re.match(r"entry (\w+)", line)
    if m:
        entry = m.group(1)
        listed.setdefault(entry, {})
        continue
    m = re.match(r"  (\S+): (.+)$", line)
    if m:
        listed[entry][m.group(1)] = m.group(2)

failed = False
for m in re.finditer(r"^func @(\w+)(<[^>]*>)? \{\n(.*?)^\}", ir_text, re.S | re.M):
    name, bucket, body = m.group(1), m.group(2) or "", m.group(3)
    seen = set()
    count = 0
    bad = False
    for p in re.finditer(r'= param \{path = "([^"]+)"\} : (\S+\[[^\]]*\])', body):
        path, type_ = p.group(1), p.group(2)
        want = listed.get(name, {}).get(path)
        if want != type_:
            print(f"@{name}{bucket}: {path} is {type_}, --emit=params says {want}")
            bad = True
        if path in seen:
            print(f"@{name}{bucket}: {path} appears twice")
            bad = True
        seen.add(path)
        count += 1
    print(f"@{name}{bucket}: {count} params " + ("do not match" if bad else "match"))
    failed |= bad
sys.exit(1 if failed else 0)

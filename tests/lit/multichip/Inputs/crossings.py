"""Prints, for IR text on stdin, the transfers between nodes of 8 chips
(chip c is in node c // 8): 'crossing TYPE from OP xN' per type and the
op that made the value sent, sorted."""
import collections
import re
import sys

text = sys.stdin.read()
kind = {m.group(1): m.group(2) for m in re.finditer(r"(%\d+) = (\w+)", text)}
counts = collections.Counter()
for m in re.finditer(r"transfer (%\d+) \{from = (\d+), to = (\d+)\} : (\w+\[[\d, ]*\])", text):
    if int(m.group(2)) // 8 != int(m.group(3)) // 8:
        counts[(m.group(4), kind[m.group(1)])] += 1
for (t, op), n in sorted(counts.items()):
    print(f"crossing {t} from {op} x{n}")

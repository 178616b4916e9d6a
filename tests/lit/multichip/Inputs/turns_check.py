"""Reads `lpuc --report --report-ops` of a tensor-parallel program and
checks that each chip's partial sums go out in turns: the chunks of a
reduce-scatter, one per link, all have their first row ready within one
chunk's worth of rows of the earliest (in row order the last chunk's
first row would wait for every row of the chunks before it)."""
import re
import sys

CHUNK_ROWS, MM_ISSUE = int(sys.argv[1]), int(sys.argv[2])
chips, current = [], None
for line in sys.stdin:
    if re.match(r"\s+matmul ", line):
        current = []
        chips.append(current)
    m = re.match(r"\s+transfer f16\[(\d+), \d+\] .*rows (\d+)\.\.(\d+)", line)
    if m and current is not None and int(m.group(1)) == CHUNK_ROWS:
        current.append(int(m.group(2)))
sends = [firsts for firsts in chips if firsts]
if not sends:
    sys.exit("no reduce-scatter found")
for firsts in sends:
    spread = max(firsts) - min(firsts)
    if len(firsts) < 2 or spread >= CHUNK_ROWS * MM_ISSUE:
        sys.exit(f"chunks' first rows ready at {firsts}: not in turns")
print(f"in turns: {len(sends)} reduce-scatters")

"""Prints, for every bucket of every entry of a .lpu file, the cycles lpuc
predicts with one set of flags against another:

    cycles_compare.py FILE --flags A... --against B...

one line per bucket, `ENTRY (SIZES): N cycles, fewer than M` (or `the same
as`, `more than`), for FileCheck to check which choice wins where.
"""
import sys

from tune_check import cycles  # lpuc --report --json's cycles per bucket


def main(argv):
    if len(argv) < 3 or argv[1] != "--flags" or "--against" not in argv:
        sys.exit(__doc__)
    path, rest = argv[0], argv[2:]
    split = rest.index("--against")
    mine, theirs = cycles(path, *rest[:split]), cycles(path, *rest[split + 1:])
    if mine.keys() != theirs.keys():
        sys.exit(f"{path}: the two sets of flags give different buckets")
    for (entry, sizes), n in mine.items():
        m = theirs[(entry, sizes)]
        how = "fewer than" if n < m else "more than" if n > m else "the same as"
        print(f"{entry} ({sizes}): {n} cycles, {how} {m}")


if __name__ == "__main__":
    main(sys.argv[1:])

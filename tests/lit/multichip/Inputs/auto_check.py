"""Checks lpuc --partition auto's choice against each kind compiled alone.

Usage: auto_check.py AUTO.json KIND=KIND.json... (each lpuc --report --json)

For every bucket: the auto report's candidates carry the cycles each kind
gives when asked for explicitly, the kind chosen is one with the fewest
cycles, and the auto program's predicted cycles are the chosen kind's.
Prints one line per bucket: `ENTRY BUCKET: CHOSEN`.
"""
import json
import sys


def buckets(path):
    with open(path) as f:
        report = json.load(f)
    return {(b["entry"], json.dumps(b["bucket"], sort_keys=True)): b for b in report["buckets"]}


def main():
    auto = buckets(sys.argv[1])
    alone = {}
    for arg in sys.argv[2:]:
        kind, path = arg.split("=", 1)
        alone[kind] = buckets(path)
    for key, b in auto.items():
        candidates = {c["kind"]: c for c in b["partition_auto"]}
        assert set(candidates) == set(alone), (key, candidates)
        for kind, c in candidates.items():
            assert c["cycles"] == alone[kind][key]["cycles"], (key, kind, c, alone[kind][key]["cycles"])
        fewest = min(c["cycles"] for c in candidates.values())
        chosen = b["partition"]
        assert candidates[chosen]["cycles"] == fewest, (key, chosen, candidates)
        assert b["cycles"] == fewest, (key, b["cycles"], fewest)
        print(f"{key[0]} {key[1]}: {chosen}")


main()

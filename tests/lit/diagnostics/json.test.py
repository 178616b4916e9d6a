import json
import sys

lines = open(sys.argv[1]).read().splitlines()
diags = [json.loads(line) for line in lines]
assert len(diags) == 4, diags
first = diags[0]
assert first["file"].endswith("several.lpu"), first
assert (first["line"], first["column"], first["end_line"], first["end_column"]) == (2, 22, 2, 22), first
assert first["code"] == "E0101" and first["severity"] == "error", first
assert first["message"] == "expected ')' to close '(' opened at 2:15", first
assert first["labels"] == [{"file": first["file"], "line": 2, "column": 15, "end_line": 2,
                            "end_column": 16, "message": "unclosed delimiter"}], first["labels"]
note = first["notes"][0]
assert (note["line"], note["column"], note["message"]) == (3, 3, "found keyword 'return' instead"), note
assert [d["code"] for d in diags] == ["E0101", "E0104", "E0004", "E0001"], diags
assert diags[2]["help"] == ["write '2 * D' for a product"], diags[2]
fix = diags[3]["fixits"][0]
assert (fix["line"], fix["column"], fix["end_column"], fix["replacement"]) == (5, 13, 14, ""), fix
print("ok")

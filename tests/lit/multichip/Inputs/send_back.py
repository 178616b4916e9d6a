"""back.py IN OUT: the partitioned IR IN with its output sent back to chip 0
(a transfer from the last chip to chip 0) and returned there: the chips
then depend on each other both ways."""
import re, sys
lines = open(sys.argv[1]).read().splitlines()
ret = max(i for i, l in enumerate(lines) if l.strip().startswith("return "))
m = re.match(r"\s*return (%\d+) \{names = \[\"out\"\]\}", lines[ret])
value = m.group(1)
define = next(l for l in lines if l.strip().startswith(value + " = "))
chip = re.search(r"chip = (\d+)", define).group(1)
ty = define.split(" : ")[-1].split(" loc(")[0]
lines[ret:ret] = [f"  %back = transfer {value} {{from = {chip}, to = 0}} : {ty}"]
lines[ret + 1] = lines[ret + 1].replace(f"return {value} ", "return %back ")
open(sys.argv[2], "w").write("\n".join(lines) + "\n")

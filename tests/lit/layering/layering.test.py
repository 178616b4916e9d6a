import os
import re
import sys

root = sys.argv[1]
# folder -> the folders of ours it may include (besides itself).
ALLOWED = {
    "grammar": set(),
    "frontend": {"grammar", "ir"},
    "ir": {"backend"},
    "scheduler": {"ir", "backend"},
    "backend": set(),
    "sim": {"backend"},
    "format/engine": set(),
    "format": {"format/engine", "grammar", "frontend"},
    "tools": {"tools", "frontend", "ir", "scheduler", "backend", "sim", "format", "format/engine",
              "grammar"},
}
OURS = ["grammar", "frontend", "ir", "scheduler", "backend", "sim", "format", "tools"]
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
generated = {"LPULexer.h", "LPUParser.h", "LPUVisitor.h", "LPUBaseVisitor.h", "LPUFastLexer.h"}

def folder_of(path):
    rel = os.path.relpath(path, root).replace(os.sep, "/")
    if rel.startswith("format/engine/"):
        return "format/engine"
    return rel.split("/")[0]

def target_of(inc):
    if inc in generated:
        return "grammar"
    if inc.startswith("format/engine/"):
        return "format/engine"
    head = inc.split("/")[0]
    return head if head in OURS else None

bad = []
checked = 0
for top in OURS:
    for dirpath, _, files in os.walk(os.path.join(root, top)):
        for name in files:
            if not name.endswith((".h", ".cpp", ".def")):
                continue
            path = os.path.join(dirpath, name)
            src = folder_of(path)
            allowed = ALLOWED[src] | {src}
            if src == "backend":
                allowed |= {"backend"}
            for inc in include.findall(open(path, errors="replace").read()):
                target = target_of(inc)
                if target is None or target in allowed:
                    continue
                bad.append(f"{os.path.relpath(path, root)}: includes \"{inc}\" ({src} may not include {target})")
            checked += 1
if bad:
    print("\n".join(bad))
    sys.exit(1)
print(f"{checked} files follow the dependency arrows")

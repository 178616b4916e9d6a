import os
import re
import sys

root = sys.argv[1]
# folder -> the folders of ours it may include (besides itself).
ALLOWED = {
    "support": set(),
    "grammar": set(),
    "frontend": {"grammar", "ir", "support"},
    "ir": {"support"},
    "interp": {"ir", "backend", "support"},
    "scheduler": {"ir", "backend", "support"},
    "backend": {"support"},
    "sim": {"backend", "support"},
    "driver": {"frontend", "ir", "scheduler", "backend", "support"},
    "import": {"support"},
    "format/engine": set(),
    "format": {"format/engine", "grammar", "frontend"},
    "tools": {"tools", "driver", "frontend", "ir", "interp", "scheduler", "backend", "sim",
              "format", "format/engine", "grammar", "import", "support"},
}
OURS = ["support", "grammar", "frontend", "ir", "interp", "scheduler", "backend", "sim", "driver",
        "import", "format", "tools"]
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
            for inc in include.findall(open(path, errors="replace").read()):
                target = target_of(inc)
                if target is None or target in allowed:
                    continue
                bad.append(f"{os.path.relpath(path, root)}: includes \"{inc}\" ({src} may not include {target})")
            checked += 1

# The libraries follow the same arrows: a library links only the libraries
# of folders it may include (so lpu_ir links no BLAS-backed interpreter).
add_library = re.compile(r"add_library\((lpu_\w+)")
links = re.compile(r"target_link_libraries\((lpu_\w+)([^)]*)\)")
owner, linked = {}, []
for top in OURS:
    for dirpath, _, files in os.walk(os.path.join(root, top)):
        if "CMakeLists.txt" not in files:
            continue
        path = os.path.join(dirpath, "CMakeLists.txt")
        text = open(path).read()
        folder = folder_of(path)
        for lib in add_library.findall(text):
            owner[lib] = folder
        for lib, deps in links.findall(text):
            linked += [(path, lib, dep) for dep in re.findall(r"\blpu_\w+", deps)]
libraries = 0
for path, lib, dep in linked:
    if lib not in owner or dep not in owner:
        continue
    src, target = owner[lib], owner[dep]
    libraries += 1
    if target != src and target not in ALLOWED[src]:
        bad.append(f"{os.path.relpath(path, root)}: {lib} links {dep} ({src} may not depend on {target})")
if bad:
    print("\n".join(bad))
    sys.exit(1)
print(f"{checked} files and {libraries} library links follow the dependency arrows")

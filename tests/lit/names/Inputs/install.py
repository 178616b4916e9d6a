"""Lays out an installed lpuc: DIR/bin/lpuc and DIR/share/lpu/stdlib."""
import os
import shutil
import sys

root, stdlib = sys.argv[1], sys.argv[2]
shutil.rmtree(root, ignore_errors=True)
os.makedirs(os.path.join(root, "bin"))
shutil.copy2(shutil.which("lpuc"), os.path.join(root, "bin", "lpuc"))
shutil.copytree(stdlib, os.path.join(root, "share", "lpu", "stdlib"))

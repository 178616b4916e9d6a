#!/usr/bin/env python3
"""expect_exit.py CODE COMMAND...: runs COMMAND, passes its output through,
and succeeds only if it exits with exactly CODE (lit's `not` accepts any
non-zero code, but our exit codes are part of the interface)."""
import subprocess
import sys

want = int(sys.argv[1])
proc = subprocess.run(sys.argv[2:])
if proc.returncode != want:
    print(f"expect_exit: '{' '.join(sys.argv[2:])}' exited {proc.returncode}, expected {want}",
          file=sys.stderr)
    sys.exit(1)

"""exit_code.py CODE COMMAND...: runs COMMAND, passes its output through and
fails unless it exits with CODE."""
import subprocess, sys
r = subprocess.run(sys.argv[2:])
if r.returncode != int(sys.argv[1]):
    sys.exit(f"exit code {r.returncode}, expected {sys.argv[1]}")

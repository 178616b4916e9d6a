# Runs `lpufmt --check` over every .lpu file git tracks in the repository,
# except test inputs (tests/), which are unformatted on purpose. Exits with
# lpufmt's status: 0 when all are formatted, 1 when some would change.
# Usage: check-repo.py SOURCE_ROOT
import subprocess
import sys

root = sys.argv[1]
listed = subprocess.run(["git", "-C", root, "ls-files", "--", "*.lpu"],
                        capture_output=True, text=True)
if listed.returncode != 0:
    print("check-repo: not a git checkout; nothing to check")
    sys.exit(0)
files = [f for f in listed.stdout.split() if not f.startswith("tests/")]
if not files:
    print("check-repo: no .lpu files outside tests/")
    sys.exit(0)
status = subprocess.run(["lpufmt", "--check"] + files, cwd=root).returncode
if status != 0:
    sys.stderr.write("check-repo: run `lpufmt -i` on the files listed above\n")
sys.exit(status)

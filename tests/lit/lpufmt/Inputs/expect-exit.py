# Runs a command and succeeds only if it exits with the given status, so that
# lit tests can pin lpufmt's exit codes (the lit shell has no `$?`).
# Usage: expect-exit.py STATUS COMMAND [ARGS...]; stdin, stdout, stderr pass through.
import subprocess
import sys

want = int(sys.argv[1])
got = subprocess.run(sys.argv[2:]).returncode
if got != want:
    sys.stderr.write("expect-exit: wanted exit status %d, got %d\n" % (want, got))
    sys.exit(1)

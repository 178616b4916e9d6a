"""no_progress_marks.py FILE: fails when FILE holds a carriage return or an
escape, the bytes a progress line is drawn with."""
import sys

data = open(sys.argv[1], "rb").read()
for mark in (b"\r", b"\x1b"):
    if mark in data:
        sys.exit(f"{sys.argv[1]}: holds {mark!r}")

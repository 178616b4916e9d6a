#!/usr/bin/env python3
"""Runs the commands a markdown page shows and checks what they print, so
that a tutorial cannot drift from the tools.

usage: check_doc.py PAGE.md --root SRC --bin BIN [--path SHOWN=REAL]...

The page's conventions (docs/tutorial.md follows them):

- A ```console block is a transcript: a line starting with `$ ` is a
  command (the reader types what follows the prompt), and the lines under
  it, up to the next `$ ` or the end of the block, are what it prints,
  standard output and standard error together. A command continues on the
  next line after a trailing `\\`, and over a here-document's lines
  (`cat > FILE <<'EOF'` up to the line `EOF`).
- Every command must exit 0, unless a `<!-- check: exit=N -->` comment
  stands right before the block (blank lines between are allowed): then
  every command of the block must exit N. A failing command takes a block
  of its own.
- In the expected output a line `...` matches any number of lines (none
  too). The same comment may loosen a block further:
    `figures`        every number matches any number (cycles, times,
                     bytes: what a change of the scheduler moves), and
                     two spaces or more any run of spaces (columns);
    `vary="TEXT"`    TEXT, where it appears in the expected lines, matches
                     any text (repeatable; the wording of a message);
    `head=N`         only the first N lines printed are compared.
  Options are separated by spaces or commas.
- Any other block (```sh) runs only when such a comment precedes it: each
  of its commands must exit 0 (or N), and what they print is not compared.
  Blocks without a comment are prose.

Commands run one at a time, each in a fresh `bash -o pipefail` from SRC
(the repository root, where the page's reader types them), in order; a
file one writes is there for the next. Before running, `build/bin/` at
the start of a word becomes BIN, and each SHOWN path its REAL one (the
page's /tmp/... scratch folder to the test's own); in what a command
prints, REAL and BIN are turned back before comparing, and trailing
blanks and trailing empty lines are dropped. BIN is not on PATH, so a
page that types a bare `lpuc` fails here as it would for the reader;
`python3` is the interpreter this script runs on (the one with numpy).
NO_COLOR is set. The first failure stops the run with the page's line,
the command, and what was expected against what came; a page with no
command to run fails too, so the check never passes by checking nothing.
Exit status: 0 all matched, 1 a mismatch, 2 usage or a malformed page.
"""
import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile

DIRECTIVE = re.compile(r"^<!--\s*check(?::(.*?))?\s*-->\s*$")
FENCE = re.compile(r"^```\s*([\w+-]*)\s*$")
HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
NUMBER = re.compile(r"-?[0-9]+(?:[.,][0-9]+)*(?:e[-+]?[0-9]+)?")
BIN_PREFIX = re.compile(r"(?<![\w/.~-])build/bin/")


class PageError(Exception):
    pass


class Command:
    def __init__(self, line, text, console, options, expected):
        self.line = line          # the page's line of the command
        self.text = text          # the command as the reader types it
        self.console = console    # a transcript's: its output is compared
        self.options = options
        self.expected = expected  # the lines the transcript shows under it


def parse_options(text, line):
    options = {"exit": 0, "figures": False, "vary": [], "head": None}
    for m in re.finditer(r'(\w+)(?:=("(?:[^"\\]|\\.)*"|[^\s,]+))?', text or ""):
        name, value = m.group(1), m.group(2)
        if value is not None and value.startswith('"'):
            value = value[1:-1].replace('\\"', '"')
        if name == "exit" and value is not None and value.isdigit():
            options["exit"] = int(value)
        elif name == "head" and value is not None and value.isdigit():
            options["head"] = int(value)
        elif name == "figures" and value is None:
            options["figures"] = True
        elif name == "vary" and value:
            options["vary"].append(value)
        else:
            raise PageError(f"line {line}: unknown check option '{m.group(0)}'")
    return options


def split_commands(lines, console):
    """(line number, text) pairs -> [(line, command, [output lines])]."""
    out = []
    i = 0
    while i < len(lines):
        number, text = lines[i]
        if console and not text.startswith("$ "):
            if not out:
                raise PageError(f"line {number}: output before any '$ ' command")
            out[-1][2].append(text)
            i += 1
            continue
        if not console and (not text.strip() or text.lstrip().startswith("#")):
            i += 1
            continue
        first = text[2:] if console else text
        parts = [first]
        i += 1
        while parts[-1].endswith("\\") and i < len(lines):
            parts.append(lines[i][1])
            i += 1
        for m in HEREDOC.finditer("\n".join(parts)):
            word = m.group(2)
            while True:
                if i >= len(lines):
                    raise PageError(f"line {number}: here-document '{word}' is not closed")
                parts.append(lines[i][1])
                i += 1
                if parts[-1] == word:
                    break
        out.append((number, "\n".join(parts), []))
    return out


def parse_page(path):
    with open(path, encoding="utf-8") as f:
        page = f.read().split("\n")
    commands = []
    pending = None  # (line, options) of a check comment awaiting its block
    i = 0
    while i < len(page):
        text = page[i]
        number = i + 1
        m = DIRECTIVE.match(text.strip())
        if m:
            if pending:
                raise PageError(f"line {pending[0]}: a check comment without a block after it")
            pending = (number, parse_options(m.group(1), number))
            i += 1
            continue
        fence = FENCE.match(text)
        if not fence:
            if text.strip() and pending:
                raise PageError(f"line {pending[0]}: a check comment without a block after it")
            i += 1
            continue
        lang = fence.group(1)
        body = []
        i += 1
        while i < len(page) and not page[i].startswith("```"):
            body.append((i + 1, page[i]))
            i += 1
        if i == len(page):
            raise PageError(f"line {number}: a code block that is not closed")
        i += 1
        console = lang == "console"
        if console or pending:
            options = pending[1] if pending else parse_options("", number)
            commands += [Command(line, cmd, console, options, expected)
                         for line, cmd, expected in split_commands(body, console)]
        pending = None
    if pending:
        raise PageError(f"line {pending[0]}: a check comment without a block after it")
    return commands


def line_pattern(expected, options):
    """The regex one expected line stands for."""
    pieces = [expected]
    for text in options["vary"]:
        split = []
        for p in pieces:
            if isinstance(p, str):
                chunks = p.split(text)
                for k, chunk in enumerate(chunks):
                    if k:
                        split.append(None)  # a varying part
                    split.append(chunk)
            else:
                split.append(p)
        pieces = split
    regex = ""
    for p in pieces:
        if p is None:
            regex += ".*?"
        elif options["figures"]:
            # Columns of figures are padded to their widths: where the
            # page has two spaces or more, any run of spaces matches.
            def literal(text):
                return " +".join(re.escape(piece) for piece in re.split(r" {2,}", text))
            last = 0
            for m in NUMBER.finditer(p):
                regex += literal(p[last:m.start()]) + NUMBER.pattern
                last = m.end()
            regex += literal(p[last:])
        else:
            regex += re.escape(p)
    return re.compile(regex + r"\Z")


def matches(expected, actual, options):
    patterns = [None if e == "..." else line_pattern(e, options) for e in expected]
    # memo[(i, j)]: expected[i:] matches actual[j:]
    memo = {}

    def match(i, j):
        if (i, j) in memo:
            return memo[(i, j)]
        if i == len(patterns):
            ok = j == len(actual)
        elif patterns[i] is None:
            ok = any(match(i + 1, k) for k in range(j, len(actual) + 1))
        else:
            ok = j < len(actual) and patterns[i].match(actual[j]) is not None and match(i + 1, j + 1)
        memo[(i, j)] = ok
        return ok

    sys.setrecursionlimit(max(10000, 4 * (len(patterns) + len(actual))))
    return match(0, 0)


def tidy(lines):
    lines = [l.rstrip() for l in lines]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("page")
    ap.add_argument("--root", required=True, help="where the page's commands are typed")
    ap.add_argument("--bin", required=True, help="the folder the page calls build/bin/")
    ap.add_argument("--path", action="append", default=[], metavar="SHOWN=REAL",
                    help="a path the page shows and the one to use instead")
    args = ap.parse_args()
    paths = []
    for p in args.path:
        shown, sep, real = p.partition("=")
        if not sep or not shown or not real:
            ap.error(f"--path wants SHOWN=REAL, got '{p}'")
        paths.append((shown, os.path.abspath(real)))
    bindir = os.path.abspath(args.bin)
    try:
        commands = parse_page(args.page)
    except PageError as e:
        print(f"{args.page}: {e}", file=sys.stderr)
        return 2
    if not commands:
        print(f"{args.page}: no command to check", file=sys.stderr)
        return 2

    env = dict(os.environ)
    env["NO_COLOR"] = "1"
    with tempfile.TemporaryDirectory(prefix="check_doc.") as shim:
        os.symlink(sys.executable, os.path.join(shim, "python3"))
        path = [d for d in env.get("PATH", "").split(os.pathsep)
                if d and os.path.abspath(d) != bindir]
        env["PATH"] = os.pathsep.join([shim] + path)
        status = run(commands, args, paths, bindir, env)
    if status == 0:
        print(f"{args.page}: {len(commands)} commands as shown")
    return status


def run(commands, args, paths, bindir, env):
    for c in commands:
        cmd = BIN_PREFIX.sub(lambda _: bindir + "/", c.text)
        for shown, real in paths:
            cmd = cmd.replace(shown, real)
        proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], cwd=args.root, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
        printed = proc.stdout.decode("utf-8", "replace")
        for shown, real in paths:
            printed = printed.replace(real, shown)
        printed = printed.replace(bindir + "/", "build/bin/")
        actual = tidy(printed.split("\n"))
        where = f"{args.page}:{c.line}: {c.text.splitlines()[0]}"
        want = c.options["exit"]
        if proc.returncode != want:
            print(f"{where}\n  exited {proc.returncode}, the page expects {want}; it printed:")
            print("".join(f"  | {l}\n" for l in actual), end="")
            return 1
        if not c.console:
            continue
        expected = tidy(c.expected)
        head = c.options["head"]
        if not matches(expected[:head], actual[:head], c.options):
            print(f"{where}\n  printed what the page does not show (- the page, + the command):")
            for l in list(difflib.unified_diff(expected, actual, lineterm="", n=2))[2:]:
                print(f"  {l}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

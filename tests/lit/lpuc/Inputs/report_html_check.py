"""Checks a page lpuc --report-html wrote, against its own data and in a
real browser.

    report_html_check.py PAGE.html [--op NAME ...] [--chips N] [--links]
                         [--browser SCREENSHOT.png]

The data (the JSON the page embeds): every span on a row and an op that
exist, inside the schedule's cycles, and the busy cycles of every unit
kind's spans adding up exactly to the report's busy_cycles (every
instruction of the schedule is in the timeline, once); SRAM over time
within the chip's capacity and not empty; a critical path of ops that
exist, whose first op (the last to issue) is the op that issues last; the
ops named with --op present; rows on --chips chips; with --links, link
transfers, and a critical path that crosses chips. The page: nothing
fetched from elsewhere (no src or href to another address, no external
script or style). With --browser: headless Chromium loads the page, which
must report data-rendered="ok" (its script sets "error" on any exception)
and name every --op in its tables; a screenshot then must show the
timeline's colours (its saturated pixels counted with PIL);
--browser-only skips the data's checks. Prints one line per bucket and
"ok".
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def fail(message):
    print("report_html_check: " + message, file=sys.stderr)
    sys.exit(1)


def embedded_data(page):
    m = re.search(r'<script id="lpu-data" type="application/json">(.*?)</script>', page, re.S)
    if not m:
        fail("no data element in the page")
    return json.loads(m.group(1))


def check_bucket(data, b, args):
    label = b["label"]
    f = b["figures"]
    cycles = f["cycles"]
    rows, spans, ops = b["rows"], b["spans"], b["ops"]
    if len(spans) % 5:
        fail(f"{label}: spans are not five numbers each")
    busy = {u: 0 for u in data["units"]}
    for i in range(0, len(spans), 5):
        row, start, end, span_busy, op = spans[i:i + 5]
        if not (0 <= row < len(rows)) or not (0 <= op < len(ops)):
            fail(f"{label}: span {i // 5} names row {row} or op {op}, which do not exist")
        if not (0 <= start < end <= cycles + 64) or span_busy <= 0 or span_busy > end - start:
            fail(f"{label}: span {i // 5} [{start}, {end}) busy {span_busy} is not inside {cycles} cycles")
        if ops[op]["chip"] != rows[row]["chip"]:
            fail(f"{label}: span {i // 5} of an op of chip {ops[op]['chip']} on chip {rows[row]['chip']}")
        busy[rows[row]["unit"]] += span_busy
    for unit, expected in f["busy_cycles"].items():
        if busy.get(unit, 0) != expected:
            fail(f"{label}: {unit} spans hold {busy.get(unit, 0)} busy cycles, the report {expected}")
    if not b["sram"]:
        fail(f"{label}: no SRAM over time")
    for s in b["sram"]:
        values = s["steps"][1::2]
        if not values or max(values) <= 0 or max(values) > b["sram_capacity"]:
            fail(f"{label}: chip {s['chip']}'s SRAM over time peaks at {max(values or [0])}")
    critical = b["critical"]
    if not critical or any(not (0 <= i < len(ops)) for i in critical):
        fail(f"{label}: the critical path {critical} names ops that do not exist")
    last = max(o["last"] for o in ops)
    if ops[critical[0]]["last"] != last:
        fail(f"{label}: the critical path starts at an op whose last cycle is "
             f"{ops[critical[0]]['last']}, not the last, {last}")
    names = {o["op"] for o in ops}
    for name in args.op:
        if name not in names:
            fail(f"{label}: no op '{name}' (ops: {', '.join(sorted(names))})")
    chips = {r["chip"] for r in rows}
    if args.chips and len(chips) != args.chips:
        fail(f"{label}: rows on {len(chips)} chips, expected {args.chips}")
    if args.links:
        if not b["links"]:
            fail(f"{label}: no link transfers")
        if len({ops[i]["chip"] for i in critical}) < 2:
            fail(f"{label}: the critical path stays on one chip")
    print(f"{label}: {len(rows)} rows, {len(spans) // 5} spans, {len(ops)} ops, "
          f"critical path of {len(critical)}, busy cycles as reported")


def chromium(args_list, timeout=120):
    exe = shutil.which("chromium")
    if not exe:
        fail("chromium is not installed (scripts/setup.sh installs it)")
    with tempfile.TemporaryDirectory() as profile:
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--user-data-dir=" + profile]
        return subprocess.run([exe] + flags + args_list, capture_output=True, text=True,
                              timeout=timeout)


def check_browser(path, args):
    url = "file://" + os.path.abspath(path)
    dom = chromium(["--virtual-time-budget=10000", "--dump-dom", url])
    m = re.search(r'<body[^>]*data-rendered="([^"]*)"', dom.stdout)
    if not m:
        fail("the browser printed no page:\n" + dom.stderr[-2000:])
    if m.group(1) != "ok":
        err = re.search(r'<div id="error"[^>]*>([^<]*)', dom.stdout)
        fail(f"the page did not render: data-rendered=\"{m.group(1)}\": {err.group(1) if err else ''}")
    cells = set(re.findall(r'</span>([a-z_0-9]+)</td>', dom.stdout))
    for name in args.op:
        if name not in cells:
            fail(f"the page's tables do not name op '{name}'")
    shot = chromium(["--window-size=1400,1300", "--screenshot=" + args.browser, url])
    if not os.path.exists(args.browser):
        fail("no screenshot:\n" + shot.stderr[-2000:])
    from PIL import Image
    image = Image.open(args.browser).convert("HSV")
    width, height = image.size
    # The timeline's spans, the legend and the bars are the page's colours,
    # a colour per kind of op; a page whose script failed is grey text on
    # white. Saturated pixels by hue, in 12 buckets of 30 degrees.
    hues = [0] * 12
    for (h, s, v) in image.getdata():
        if s > 90 and v > 60:
            hues[h * 12 // 256] += 1
    saturated = sum(hues)
    kinds = sum(1 for n in hues if n >= 100)
    if saturated < width * height // 500 or kinds < 3:
        fail(f"the screenshot has {saturated} coloured pixels of {width * height} in {kinds} "
             "hues: no timeline")
    print(f"browser: rendered, every op named, coloured pixels in {kinds} hues")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("page")
    parser.add_argument("--op", action="append", default=[])
    parser.add_argument("--chips", type=int, default=0)
    parser.add_argument("--links", action="store_true")
    parser.add_argument("--browser")
    parser.add_argument("--browser-only", action="store_true",
                        help="skip the data's checks (a test of the browser's own)")
    args = parser.parse_args()
    page = open(args.page, encoding="utf-8").read()
    if re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', page) or re.search(r"<link\b|<script[^>]*\bsrc=", page):
        fail("the page refers to something outside itself")
    if not args.browser_only:
        data = embedded_data(page)
        if not data["buckets"]:
            fail("no buckets")
        for b in data["buckets"]:
            check_bucket(data, b, args)
    if args.browser:
        check_browser(args.page, args)
    print("ok")


main()

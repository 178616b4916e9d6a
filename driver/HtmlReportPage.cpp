// The markup, style and script of lpuc --report-html's page
// (HtmlReport.h). Self-contained: nothing is fetched, no library is used;
// the script draws on canvases from the JSON data written between the two
// halves. The page sets body[data-rendered] to "ok" once every part is
// drawn, or to "error" with the message in #error (the browser test reads
// both).
namespace lpu::driver {

extern const char *const kHtmlReportHead;
extern const char *const kHtmlReportTail;

const char *const kHtmlReportHead = R"lpuhtml(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lpu schedule report</title>
<style>
  :root { --fg: #1d2330; --muted: #5d6678; --line: #d8dce4; --bg: #fbfbfd; --accent: #2459c7; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
  header { padding: 14px 22px 10px; border-bottom: 1px solid var(--line); background: #fff; position: sticky; top: 0; z-index: 5; }
  h1 { font-size: 18px; margin: 0 0 4px; }
  h2 { font-size: 15px; margin: 0 0 8px; }
  section { padding: 14px 22px; border-bottom: 1px solid var(--line); }
  .meta { color: var(--muted); }
  label { margin-right: 14px; }
  select, button { font: inherit; }
  button { padding: 1px 9px; margin-right: 4px; }
  #error { color: #a31515; font-weight: 600; padding: 10px 22px; }
  .figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(230px, 1fr)); gap: 6px 18px; }
  .figure .k { color: var(--muted); font-size: 12px; }
  .figure .v { font-size: 16px; font-variant-numeric: tabular-nums; }
  .util { display: grid; grid-template-columns: 60px 1fr 70px; gap: 4px 10px; max-width: 640px; align-items: center; }
  .bar { height: 12px; background: #e8ebf1; border-radius: 2px; overflow: hidden; }
  .bar > div { height: 100%; background: var(--accent); }
  #tl-wrap { position: relative; max-height: 640px; overflow-y: auto; border: 1px solid var(--line); background: #fff; }
  canvas { display: block; }
  #timeline { cursor: grab; }
  #tip { position: fixed; pointer-events: none; background: #1d2330; color: #fff; padding: 6px 8px; border-radius: 4px; font-size: 12px; max-width: 460px; display: none; z-index: 10; white-space: pre-line; }
  .controls { margin-bottom: 8px; color: var(--muted); }
  table { border-collapse: collapse; font-size: 12.5px; font-variant-numeric: tabular-nums; }
  th, td { text-align: left; padding: 2px 10px 2px 0; border-bottom: 1px solid #eef0f4; white-space: nowrap; }
  th { color: var(--muted); font-weight: 600; }
  tr.op { cursor: pointer; }
  tr.op:hover { background: #eef3ff; }
  tr.selected { background: #dfe8ff; }
  .swatch { display: inline-block; width: 10px; height: 10px; margin-right: 5px; vertical-align: -1px; border-radius: 2px; }
  .legend span.item { margin-right: 12px; white-space: nowrap; font-size: 12.5px; }
  .scroll { max-height: 420px; overflow: auto; }
  .note { color: var(--muted); font-size: 12.5px; }
</style>
</head>
<body data-rendered="no">
<header>
  <h1 id="title">lpu schedule report</h1>
  <div class="meta" id="meta"></div>
  <div style="margin-top:6px">
    <label>Entry and bucket <select id="bucket"></select></label>
    <label>Chip <select id="chip"></select></label>
  </div>
</header>
<div id="error" hidden></div>
<section>
  <h2>Figures</h2>
  <div class="figures" id="figures"></div>
</section>
<section>
  <h2>Utilisation per unit</h2>
  <div class="util" id="util"></div>
  <p class="note">Issue cycles over cycles times queues, as <code>lpuc --report</code> counts them.</p>
</section>
<section>
  <h2>Timeline</h2>
  <div class="controls">
    <button id="zoom-in" title="zoom in">+</button><button id="zoom-out" title="zoom out">&minus;</button><button id="zoom-fit">fit</button>
    <span id="window"></span> &middot; wheel to zoom, drag to pan, click an op below to go to it
  </div>
  <div id="tl-wrap"><canvas id="timeline"></canvas></div>
  <div class="legend" id="legend" style="margin-top:8px"></div>
</section>
<section>
  <h2>SRAM in use</h2>
  <canvas id="sram"></canvas>
  <p class="note">Bytes allocated over the cycles in view: each block from when the work that allocated it could start to its last read; parameters to the end.</p>
</section>
<section>
  <h2>Critical path</h2>
  <p class="note">From the op whose last instruction issues last, back through the input whose last result row was ready last.</p>
  <div class="scroll"><table id="critical"></table></div>
</section>
<section id="links-section" hidden>
  <h2>Links</h2>
  <div class="scroll"><table id="links"></table></div>
</section>
<section>
  <h2>Ops</h2>
  <div class="scroll"><table id="ops"></table></div>
</section>
<div id="tip"></div>
<script id="lpu-data" type="application/json">)lpuhtml";

const char *const kHtmlReportTail = R"lpuhtml(</script>
<script>
"use strict";
(function () {
  const body = document.body;
  function fail(message) {
    body.dataset.rendered = "error";
    const el = document.getElementById("error");
    el.textContent = "The report could not be drawn: " + message;
    el.hidden = false;
  }
  window.addEventListener("error", (ev) => fail(ev.message));
  const $ = (id) => document.getElementById(id);
  const fmt = (n) => Number(n).toLocaleString("en-US");
  const pct = (x) => (100 * x).toFixed(1) + "%";
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else if (k === "style") e.style.cssText = v; else e.setAttribute(k, v);
    }
    for (const c of children) e.append(c instanceof Node ? c : String(c));
    return e;
  }
  // A colour per op kind, in the order the kinds first appear; an op's
  // neighbours of one kind alternate between two shades of it.
  const PALETTE = [[350, 62], [205, 62], [38, 80], [140, 45], [265, 55], [185, 70], [15, 70],
                   [230, 25], [95, 45], [320, 45], [55, 70], [170, 40], [285, 30], [0, 0]];
  const kinds = new Map();
  function opColor(op, index, dim) {
    if (!kinds.has(op.op)) kinds.set(op.op, PALETTE[Math.min(kinds.size, PALETTE.length - 1)]);
    const [h, s] = kinds.get(op.op);
    const l = (index % 2 ? 44 : 54) + (dim ? 26 : 0);
    return "hsl(" + h + "," + (dim ? s / 2 : s) + "%," + l + "%)";
  }

  let data;
  try {
    data = JSON.parse($("lpu-data").textContent);
  } catch (e) {
    fail("the data does not parse: " + e.message);
    return;
  }
  const dpr = window.devicePixelRatio || 1;
  const LABEL = 92, AXIS = 20, ROW = 11;
  const state = { bucket: 0, chip: "all", t0: 0, t1: 1, selected: -1 };
  let B, rows, perRow, chipsOf;

  document.title = "lpu schedule report: " + data.title;
  $("title").textContent = "Schedule report: " + data.title;
  $("meta").textContent = "chip " + data.chip + " at " + data.clock_mhz + " MHz; " +
      data.buckets.length + " entry bucket" + (data.buckets.length === 1 ? "" : "s");
  data.buckets.forEach((b, i) => $("bucket").append(el("option", { value: i }, b.label)));

  // Per bucket: rows (queues with work, then each chip's links) and their
  // spans in typed arrays, sorted by start.
  function prepare() {
    B = data.buckets[state.bucket];
    rows = B.rows.map((r) => ({ chip: r.chip, name: r.name, unit: r.unit, link: false }));
    const count = new Array(rows.length).fill(0);
    for (let i = 0; i < B.spans.length; i += 5) count[B.spans[i]]++;
    perRow = rows.map((r, i) => ({ start: new Float64Array(count[i]), end: new Float64Array(count[i]),
                                   busy: new Float64Array(count[i]), op: new Int32Array(count[i]), n: 0, longest: 0 }));
    for (let i = 0; i < B.spans.length; i += 5) {
      const p = perRow[B.spans[i]], k = p.n++;
      p.start[k] = B.spans[i + 1]; p.end[k] = B.spans[i + 2]; p.busy[k] = B.spans[i + 3]; p.op[k] = B.spans[i + 4];
      p.longest = Math.max(p.longest, p.end[k] - p.start[k]);
    }
    // Links: a row per sending chip and link, each transfer a span.
    const linkRows = new Map();
    B.links.forEach((t, i) => {
      const key = t.from + ":" + t.link;
      if (!linkRows.has(key)) linkRows.set(key, { chip: t.from, name: "link " + t.link, unit: "link", link: true, items: [] });
      linkRows.get(key).items.push(i);
    });
    for (const r of [...linkRows.values()].sort((a, b) => a.chip - b.chip || a.name.localeCompare(b.name))) {
      r.items.sort((a, b) => B.links[a].start - B.links[b].start);
      const p = { start: new Float64Array(r.items.length), end: new Float64Array(r.items.length),
                  busy: new Float64Array(r.items.length), op: new Int32Array(r.items.length), n: r.items.length, longest: 0 };
      r.items.forEach((t, k) => {
        p.start[k] = B.links[t].start; p.end[k] = B.links[t].end; p.busy[k] = 0; p.op[k] = -1 - t;
        p.longest = Math.max(p.longest, p.end[k] - p.start[k]);
      });
      rows.push(r);
      perRow.push(p);
    }
    // Each chip's links after its queues.
    const order = rows.map((r, i) => i).sort((a, b) => rows[a].chip - rows[b].chip || a - b);
    rows = order.map((i) => rows[i]);
    perRow = order.map((i) => perRow[i]);
    kinds.clear();
    B.ops.forEach((op, i) => opColor(op, i, false));
    chipsOf = [...new Set(rows.map((r) => r.chip))].sort((a, b) => a - b);
    const chipSelect = $("chip");
    chipSelect.textContent = "";
    const tooMany = rows.length > 1400;
    if (!tooMany) chipSelect.append(el("option", { value: "all" }, "all chips"));
    for (const c of chipsOf) chipSelect.append(el("option", { value: c }, "chip " + c));
    state.chip = tooMany || chipsOf.length === 1 ? String(chipsOf[0]) : "all";
    chipSelect.value = state.chip;
    state.t0 = 0;
    state.t1 = Math.max(1, B.figures.cycles);
    state.selected = -1;
  }

  function visibleRows() {
    const out = [];
    rows.forEach((r, i) => { if (state.chip === "all" || String(r.chip) === state.chip) out.push(i); });
    return out;
  }

  function drawFigures() {
    const f = B.figures, box = $("figures");
    box.textContent = "";
    const add = (k, v) => box.append(el("div", { class: "figure" }, el("div", { class: "k" }, k), el("div", { class: "v" }, v)));
    add("predicted cycles", fmt(f.cycles) + " (" + f.time_us.toFixed(1) + " \u00b5s)");
    add("lower bound (" + f.lower_bound_reason + ")", fmt(f.lower_bound) + ", ratio " + f.ratio.toFixed(2));
    add("physical bound (" + f.physical_resource + ")", fmt(f.physical_bound) + ", ratio " + f.physical_ratio.toFixed(2));
    add("SRAM at the peak", fmt(f.sram_bytes) + " bytes (" + pct(f.sram_bytes / B.sram_capacity) + ")");
    add("ops that placed work", fmt(B.ops.length));
    if (f.topology) add("topology", f.topology + ", " + chipsOf.length + " chips");
    if (B.partition_text) add("partition", B.partition_text.replace(/^partition: /, ""));
    const u = $("util");
    u.textContent = "";
    for (const unit of data.units) {
      const x = f.utilisation[unit] || 0;
      u.append(el("div", {}, unit), el("div", { class: "bar" }, el("div", { style: "width:" + Math.min(100, 100 * x) + "%" })),
               el("div", {}, pct(x)));
    }
  }

  function drawLegend() {
    const seen = new Map();
    B.ops.forEach((op, i) => { if (!seen.has(op.op)) seen.set(op.op, i); });
    const box = $("legend");
    box.textContent = "";
    for (const [name, i] of [...seen.entries()].sort()) {
      box.append(el("span", { class: "item" }, el("span", { class: "swatch", style: "background:" + opColor(B.ops[i], 1, false) }), name));
    }
    if (B.links.length) box.append(el("span", { class: "item" }, el("span", { class: "swatch", style: "background:#8a5a00" }), "link transfer"));
  }

  function ticks(t0, t1, width) {
    const raw = (t1 - t0) / Math.max(1, width / 110);
    const p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))));
    const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw) || 10 * p;
    const out = [];
    for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) out.push(t);
    return out;
  }

  function firstSpan(p, t0) {
    let lo = 0, hi = p.n;
    const from = t0 - p.longest;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (p.start[mid] < from) lo = mid + 1; else hi = mid; }
    return lo;
  }

  const canvas = $("timeline");
  function drawTimeline() {
    const vis = visibleRows();
    const W = Math.max(400, $("tl-wrap").clientWidth), H = AXIS + vis.length * ROW + 4;
    canvas.width = Math.round(W * dpr); canvas.height = Math.round(H * dpr);
    canvas.style.width = W + "px"; canvas.style.height = H + "px";
    const g = canvas.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = "#fff"; g.fillRect(0, 0, W, H);
    const plot = W - LABEL, t0 = state.t0, t1 = state.t1, scale = plot / (t1 - t0);
    g.font = "10px system-ui, sans-serif";
    g.fillStyle = "#5d6678"; g.strokeStyle = "#eef0f4";
    for (const t of ticks(t0, t1, plot)) {
      const x = LABEL + (t - t0) * scale;
      g.beginPath(); g.moveTo(x, AXIS - 4); g.lineTo(x, H); g.stroke();
      g.fillText(fmt(t), x + 2, 12);
    }
    let lastGroup = "";
    vis.forEach((ri, k) => {
      const r = rows[ri], y = AXIS + k * ROW, p = perRow[ri];
      const group = r.chip + "/" + r.unit;
      if (group !== lastGroup) {
        g.strokeStyle = "#c9ced8"; g.beginPath(); g.moveTo(0, y); g.lineTo(W, y); g.stroke();
        lastGroup = group;
      }
      g.fillStyle = "#1d2330";
      g.fillText((chipsOf.length > 1 ? "c" + r.chip + " " : "") + r.name, 4, y + ROW - 2);
      let lastX = -1;
      for (let i = firstSpan(p, t0); i < p.n && p.start[i] <= t1; ++i) {
        if (p.end[i] < t0) continue;
        const x0 = Math.max(LABEL, LABEL + (p.start[i] - t0) * scale);
        const x1 = Math.min(W, LABEL + (p.end[i] - t0) * scale);
        if (x1 <= lastX && x1 - x0 < 1) continue;
        const o = p.op[i];
        const chosen = o === state.selected;
        g.fillStyle = o < 0 ? "#8a5a00" : opColor(B.ops[o], o, state.selected >= 0 && !chosen);
        const x = Math.max(x0, Math.min(lastX, x1 - 1));
        g.fillRect(x, y + 1, Math.max(1, x1 - x), ROW - 2);
        if (chosen) { g.strokeStyle = "#000"; g.strokeRect(x0, y + 1, Math.max(1, x1 - x0), ROW - 2); }
        lastX = Math.max(lastX, x1);
      }
    });
    $("window").textContent = "cycles " + fmt(Math.round(t0)) + " to " + fmt(Math.round(t1)) +
        " of " + fmt(B.figures.cycles) + (B.span_gap ? " (gaps of up to " + B.span_gap + " cycles between one op's instructions drawn filled)" : "");
  }

  const sramCanvas = $("sram");
  function drawSram() {
    const W = Math.max(400, $("tl-wrap").clientWidth), H = 160;
    sramCanvas.width = Math.round(W * dpr); sramCanvas.height = Math.round(H * dpr);
    sramCanvas.style.width = W + "px"; sramCanvas.style.height = H + "px";
    const g = sramCanvas.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = "#fff"; g.fillRect(0, 0, W, H);
    const plot = W - LABEL, t0 = state.t0, t1 = state.t1, scale = plot / (t1 - t0), cap = B.sram_capacity;
    const shown = B.sram.filter((s) => state.chip === "all" || String(s.chip) === state.chip);
    // The axis goes to the capacity once the peak is past half of it, else
    // to the peak, so that a small program's use is not a flat line.
    let peak = 1;
    for (const s of shown) for (let i = 1; i < s.steps.length; i += 2) peak = Math.max(peak, s.steps[i]);
    const top = peak > cap / 2 ? cap : peak * 1.1;
    const y = (bytes) => H - 16 - (H - 26) * Math.min(1, bytes / top);
    g.font = "10px system-ui, sans-serif"; g.fillStyle = "#5d6678";
    g.fillText(fmt(Math.round(top)) + " B", 4, y(top) + 4); g.fillText("0", 4, y(0));
    g.fillText("peak " + fmt(peak) + " B of " + fmt(cap), LABEL + 4, H - 3);
    if (top === cap) {
      g.strokeStyle = "#a31515"; g.setLineDash([4, 3]);
      g.beginPath(); g.moveTo(LABEL, y(cap)); g.lineTo(W, y(cap)); g.stroke(); g.setLineDash([]);
    }
    shown.forEach((s, n) => {
      g.strokeStyle = "hsl(" + (215 + 47 * n) % 360 + ",60%,45%)";
      g.beginPath();
      let prev = 0;
      g.moveTo(LABEL, y(0));
      for (let i = 0; i < s.steps.length; i += 2) {
        const x = LABEL + (s.steps[i] - t0) * scale;
        if (x < LABEL) { prev = s.steps[i + 1]; continue; }
        if (x > W) break;
        g.lineTo(x, y(prev)); g.lineTo(x, y(s.steps[i + 1]));
        prev = s.steps[i + 1];
      }
      g.lineTo(W, y(prev));
      g.stroke();
    });
  }

  function opRow(i, extra) {
    const op = B.ops[i];
    const tr = el("tr", { class: "op" + (i === state.selected ? " selected" : ""), "data-op": i },
      el("td", {}, el("span", { class: "swatch", style: "background:" + opColor(op, i, false) }), op.op),
      el("td", {}, op.type), el("td", {}, op.loc), el("td", {}, op.chip),
      el("td", {}, fmt(op.first)), el("td", {}, fmt(op.last)),
      el("td", {}, op.ready === undefined ? "" : fmt(op.ready) + " (bound " + fmt(op.bound) + ")"), ...(extra || []));
    tr.addEventListener("click", () => goTo(i));
    return tr;
  }
  const header = (...names) => el("tr", {}, ...names.map((n) => el("th", {}, n)));
  function drawTables() {
    const crit = $("critical");
    crit.textContent = "";
    crit.append(header("op", "type", "source", "chip", "first cycle", "last cycle", "last row ready", "gap to bound"));
    for (const i of [...B.critical].reverse()) {
      const op = B.ops[i];
      crit.append(opRow(i, [el("td", {}, op.ready === undefined ? "" : fmt(op.ready - op.bound))]));
    }
    const ops = $("ops");
    ops.textContent = "";
    ops.append(header("op", "type", "source", "chip", "first cycle", "last cycle", "last row ready"));
    B.ops.forEach((op, i) => ops.append(opRow(i)));
    const links = $("links");
    links.textContent = "";
    $("links-section").hidden = !B.links.length;
    if (B.links.length) {
      links.append(header("from chip", "link", "to chip", "far link", "first departs", "last departs", "bytes"));
      for (const t of B.links)
        links.append(el("tr", {}, el("td", {}, t.from), el("td", {}, t.link), el("td", {}, t.to), el("td", {}, t.far_link),
                        el("td", {}, fmt(t.start)), el("td", {}, fmt(t.end)), el("td", {}, fmt(t.bytes))));
    }
  }

  function redraw() { drawTimeline(); drawSram(); }
  function setWindow(t0, t1) {
    const total = Math.max(1, B.figures.cycles);
    const span = Math.min(total, Math.max(20, t1 - t0));
    t0 = Math.max(0, Math.min(t0, total - span));
    state.t0 = t0; state.t1 = t0 + span;
    redraw();
  }
  function goTo(i) {
    const op = B.ops[i];
    state.selected = i;
    if (state.chip !== "all" && String(op.chip) !== state.chip) { state.chip = String(op.chip); $("chip").value = state.chip; }
    const pad = Math.max(10, (op.last - op.first) * 0.1);
    setWindow(op.first - pad, op.last + pad);
    for (const tr of document.querySelectorAll("tr.op")) tr.classList.toggle("selected", Number(tr.dataset.op) === i);
    $("tl-wrap").scrollIntoView({ behavior: "smooth", block: "nearest" });
  }
  function zoomAt(factor, cycle) {
    setWindow(cycle - (cycle - state.t0) * factor, cycle + (state.t1 - cycle) * factor);
  }
  $("zoom-in").addEventListener("click", () => zoomAt(0.5, (state.t0 + state.t1) / 2));
  $("zoom-out").addEventListener("click", () => zoomAt(2, (state.t0 + state.t1) / 2));
  $("zoom-fit").addEventListener("click", () => { state.selected = -1; setWindow(0, B.figures.cycles); });
  const cycleAt = (clientX) => {
    const r = canvas.getBoundingClientRect();
    return state.t0 + (clientX - r.left - LABEL) / (r.width - LABEL) * (state.t1 - state.t0);
  };
  canvas.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    zoomAt(ev.deltaY < 0 ? 0.8 : 1.25, cycleAt(ev.clientX));
  }, { passive: false });
  let drag = null;
  canvas.addEventListener("mousedown", (ev) => { drag = { x: ev.clientX, t0: state.t0, t1: state.t1 }; canvas.style.cursor = "grabbing"; });
  window.addEventListener("mouseup", () => { drag = null; canvas.style.cursor = ""; });
  const tip = $("tip");
  canvas.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  canvas.addEventListener("mousemove", (ev) => {
    const rect = canvas.getBoundingClientRect();
    if (drag) {
      const d = (ev.clientX - drag.x) / (rect.width - LABEL) * (drag.t1 - drag.t0);
      setWindow(drag.t0 - d, drag.t1 - d);
      return;
    }
    const vis = visibleRows(), k = Math.floor((ev.clientY - rect.top - AXIS) / ROW);
    if (k < 0 || k >= vis.length || ev.clientX - rect.left < LABEL) { tip.style.display = "none"; return; }
    const ri = vis[k], p = perRow[ri], c = cycleAt(ev.clientX), slack = 2 * (state.t1 - state.t0) / rect.width;
    let hit = -1;
    for (let i = firstSpan(p, c - slack); i < p.n && p.start[i] <= c + slack; ++i)
      if (p.end[i] >= c - slack) { hit = i; if (p.start[i] <= c && c <= p.end[i]) break; }
    if (hit < 0) { tip.style.display = "none"; return; }
    const r = rows[ri], o = p.op[hit];
    let text;
    if (o < 0) {
      const t = B.links[-1 - o];
      text = "chip " + t.from + " link " + t.link + " to chip " + t.to + " link " + t.far_link +
             "\n" + fmt(t.bytes) + " bytes, departing " + fmt(t.start) + " to " + fmt(t.end);
    } else {
      const op = B.ops[o];
      text = op.op + " " + op.type + "\n" + op.loc + "\n" + (chipsOf.length > 1 ? "chip " + r.chip + " " : "") + r.name +
             ": cycles " + fmt(p.start[hit]) + " to " + fmt(p.end[hit]) + ", busy " + fmt(p.busy[hit]) +
             "\nthe op: cycles " + fmt(op.first) + " to " + fmt(op.last) +
             (op.ready === undefined ? "" : ", last row ready " + fmt(op.ready));
    }
    tip.textContent = text;
    tip.style.display = "block";
    tip.style.left = Math.min(window.innerWidth - 470, ev.clientX + 14) + "px";
    tip.style.top = ev.clientY + 14 + "px";
  });
  $("bucket").addEventListener("change", (ev) => { state.bucket = Number(ev.target.value); renderAll(); });
  $("chip").addEventListener("change", (ev) => { state.chip = ev.target.value; redraw(); });
  window.addEventListener("resize", redraw);

  function renderAll() {
    prepare();
    drawFigures();
    drawLegend();
    drawTables();
    redraw();
  }
  // The address may pick a view: #bucket=1&chip=2&cycles=1000-2000&op=12.
  function fromHash() {
    const h = new URLSearchParams(location.hash.slice(1));
    if (h.has("bucket")) { state.bucket = Math.min(data.buckets.length - 1, Math.max(0, Number(h.get("bucket")) || 0)); $("bucket").value = state.bucket; }
    renderAll();
    if (h.has("chip")) { state.chip = h.get("chip"); $("chip").value = state.chip; }
    if (h.has("op")) goTo(Math.min(B.ops.length - 1, Math.max(0, Number(h.get("op")) || 0)));
    const m = /^(\d+)-(\d+)$/.exec(h.get("cycles") || "");
    if (m) setWindow(Number(m[1]), Number(m[2])); else redraw();
  }
  try {
    if (!data.buckets.length) throw new Error("the program has no buckets");
    fromHash();
    if (body.dataset.rendered !== "error") body.dataset.rendered = "ok";
  } catch (e) {
    fail(e.message);
  }
})();
</script>
</body>
</html>
)lpuhtml";

} // namespace lpu::driver

// mfu-tracker view: the page of a metrics log. It polls /api/state (the
// document mfu_tracker.cli.view._state builds from the log) every 2 s and
// draws it: figures with how each was obtained and, behind "f", its formula,
// inputs and source; charts as inline SVG. No library, no network.
"use strict";

const POLL_MS = 2000;
const opened = new Set();        // the formulas the reader opened, kept across redraws
let lastText = "";

// ---- numbers ----------------------------------------------------------------------

const PERCENT_UNITS = ["ratio", "fraction of step time", "fraction of job wall time",
                       "fraction of the profiled step"];

function sig(v, digits) {
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1e-3 && a < 1e6) return String(Number(v.toPrecision(digits)));
  return v.toExponential(digits - 1);
}

function scaled(v, unit, steps) {
  for (const [factor, prefix] of steps) {
    if (Math.abs(v) >= factor) return sig(v / factor, 4) + " " + prefix + unit;
  }
  return sig(v, 4) + " " + unit;
}

function fmt(v, unit) {
  if (v === null || v === undefined) return "\u2014";
  if (PERCENT_UNITS.includes(unit)) return sig(v * 100, 4) + "%";
  if (unit === "s") {
    if (Math.abs(v) >= 3600) return sig(v / 3600, 4) + " h";
    if (Math.abs(v) >= 1) return sig(v, 4) + " s";
    return sig(v * 1e3, 4) + " ms";
  }
  if (unit === "FLOP") return scaled(v, "FLOP", [[1e18, "E"], [1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"]]);
  if (unit === "tokens" || unit === "steps") return scaled(v, unit, [[1e12, "T "], [1e9, "G "], [1e6, "M "]]).replace("  ", " ");
  if (unit === "rank" || unit === "count" || unit === "devices") return String(Math.round(v));
  return sig(v, 4) + (unit ? " " + unit : "");
}

// ---- elements ---------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null) node.setAttribute(k, v);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

function howBadge(how) {
  return how ? el("span", {class: "how how-" + how.replace(" ", "-")}, how) : null;
}

function inputKinds(f) {
  const kinds = [];
  for (const i of f.inputs || []) {
    const k = i.how === "derived" ? inputKinds(i) : [i.how];
    for (const one of k) if (one && !kinds.includes(one)) kinds.push(one);
  }
  return kinds;
}

function formulaBox(f, path) {
  const box = el("div", {class: "formula"});
  if (f.formula) box.append(el("div", {}, el("b", {}, "formula: "), f.formula));
  if (f.check !== undefined && f.check !== null) {
    box.append(el("div", {class: "check"}, "from the inputs: ", el("code", {}, String(f.check)),
                  " (logged: ", el("code", {}, String(f.value)), ")"));
  }
  if (f.value !== null && f.value !== undefined) {
    box.append(el("div", {}, "exact value: ", el("code", {}, String(f.value))));
  }
  if (f.source) box.append(el("div", {class: "source"}, "from the log: " + f.source));
  if (f.inputs && f.inputs.length) {
    const list = el("div", {class: "inputs"}, el("div", {class: "muted"}, "inputs:"));
    f.inputs.forEach((i, n) => list.append(figureEl(i, path + "/" + n)));
    box.append(list);
  }
  return box;
}

// One figure: label, value as shown, how it was obtained, "f" for its formula.
function figureEl(f, path) {
  const node = el("div", {class: "fig", "data-fig": path, "data-value": f.value === null ? "" : String(f.value),
                          "data-how": f.how || ""});
  node.append(el("span", {class: "label"}, f.label));
  const shown = f.text !== undefined ? f.text : fmt(f.value, f.unit);
  node.append(el("span", {class: "value"}, shown));
  node.append(howBadge(f.how));
  const kinds = f.how === "derived" ? inputKinds(f) : [];
  if (kinds.length) node.append(el("span", {class: "sub"}, " from " + kinds.join(" \u00b7 ")));
  if (f.formula || (f.inputs && f.inputs.length) || f.source) {
    const details = el("details", {class: "why"}, el("summary", {title: "formula and inputs"}, "\u0192"));
    if (opened.has(path)) details.open = true;
    details.addEventListener("toggle", () => details.open ? opened.add(path) : opened.delete(path));
    details.append(formulaBox(f, path));
    node.append(details);
  }
  if (f.absent) node.append(el("div", {class: "absent"}, f.absent));
  return node;
}

function figures(list, prefix, cls) {
  const box = el("div", {class: cls || "grid2"});
  for (const f of list || []) box.append(figureEl(f, prefix + "." + f.id));
  return box;
}

function absentNote(text) { return el("p", {class: "absent"}, text); }

// ---- charts -----------------------------------------------------------------------

function lineChart(title, lines, unit) {
  const W = 420, H = 190, L = 64, R = 10, T = 18, B = 22;
  const pts = lines.flatMap(l => l.points);
  const box = el("div", {class: "chart"});
  if (!pts.length) return box;
  const xs = pts.map(p => p[0]), ys = pts.map(p => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs), y1 = Math.max(...ys) * 1.1 || 1;
  const X = x => L + (x1 === x0 ? 0.5 : (x - x0) / (x1 - x0)) * (W - L - R);
  const Y = y => T + (1 - y / y1) * (H - T - B);
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const add = (tag, attrs, text) => {
    const n = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
    if (text !== undefined) n.textContent = text;
    svg.append(n);
  };
  add("text", {x: L, y: 12}, title);
  add("line", {x1: L, y1: Y(0), x2: W - R, y2: Y(0), stroke: "#d9dde5"});
  add("line", {x1: L, y1: Y(y1), x2: W - R, y2: Y(y1), stroke: "#eef0f4"});
  add("text", {x: L - 4, y: Y(y1) + 4, "text-anchor": "end"}, fmt(y1, unit).split(" ")[0]);
  add("text", {x: L - 4, y: Y(0) + 4, "text-anchor": "end"}, "0");
  add("text", {x: L - 4, y: (Y(0) + Y(y1)) / 2, "text-anchor": "end"}, unit === "ratio" ? "" :
      fmt(y1, unit).split(" ").slice(1).join(" "));
  add("text", {x: L, y: H - 6}, "step " + x0);
  add("text", {x: W - R, y: H - 6, "text-anchor": "end"}, "step " + x1);
  for (const line of lines) {
    if (!line.points.length) continue;
    add("polyline", {fill: "none", stroke: line.color, "stroke-width": 1.6,
                     "stroke-dasharray": line.dash || "",
                     points: line.points.map(p => X(p[0]).toFixed(1) + "," + Y(p[1]).toFixed(1)).join(" ")});
  }
  box.append(svg);
  const legend = el("div", {class: "legend"});
  for (const line of lines) {
    if (line.points.length) legend.append(el("span", {}, el("i", {style: "background:" + line.color}), line.name));
  }
  box.append(legend);
  return box;
}

const COLORS = ["#2f6fdf", "#d9480f", "#2b8a3e", "#7048e8", "#e8590c", "#0c8599", "#c2255c",
                "#5c940d", "#868e96", "#364fc7", "#a61e4d"];

function stackedBar(items) {
  const W = 640, H = 26;
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const total = Math.max(1, items.reduce((a, i) => a + Math.max(0, i.value || 0), 0));
  let x = 0;
  items.forEach((item, n) => {
    const w = Math.max(0, item.value || 0) / total * W;
    const r = document.createElementNS(ns, "rect");
    Object.entries({x: x, y: 2, width: w, height: H - 4, fill: COLORS[n % COLORS.length]})
      .forEach(([k, v]) => r.setAttribute(k, v));
    const tip = document.createElementNS(ns, "title");
    tip.textContent = item.label + ": " + fmt(item.value, item.unit);
    r.append(tip);
    svg.append(r);
    x += w;
  });
  const legend = el("div", {class: "legend"});
  items.forEach((item, n) => legend.append(el("span", {}, el("i", {style: "background:" + COLORS[n % COLORS.length]}),
                                               item.label)));
  return el("div", {}, svg, legend);
}

// ---- sections ---------------------------------------------------------------------

function body(id) {
  const node = document.querySelector("#" + id + " .body");
  node.replaceChildren();
  return node;
}

function drawHeader(doc) {
  document.getElementById("log-path").textContent = doc.log ? doc.log.path : "";
  const status = document.getElementById("status");
  const s = doc.status || {};
  const age = s.last_record_time ? Math.max(0, doc.served_at - s.last_record_time) : null;
  status.className = "status" + (s.ended ? "" : " running");
  status.textContent = doc.error ? "waiting for the log: " + doc.error
    : (s.run ? "run " + s.run + ": " + s.state : "waiting") +
      (age !== null ? "; last record " + fmt(age, "s") + " ago" : "") +
      (doc.log ? "; " + doc.log.lines + " metrics lines, " + doc.log.runs + " run(s)" : "");
  const r = doc.run;
  const facts = document.getElementById("run-facts");
  facts.textContent = r ? [
    "job " + r.job, "host " + r.host, (r.devices || "?") + " x " + (r.device || "device") + ", " + r.dtype,
    r.model_type ? "model " + r.model_type + (r.seq_len ? ", seq " + r.seq_len : "") : "model config not recorded",
    "FLOPs " + (r.flops || "source not recorded"), "start step " + r.start_step].join(" \u00b7 ") : "";
  const notes = [doc.waiting, doc.note, doc.caveat,
                 doc.log && doc.log.skipped ? doc.log.skipped + " line(s) could not be read" : null,
                 doc.log && doc.log.cut ? doc.log.cut : null,
                 doc.log && doc.log.invalid_count ? doc.log.invalid_count + " value(s) invalid (left out)" : null];
  document.getElementById("notes").textContent = notes.filter(Boolean).join(" \u2014 ");
}

function drawHead(doc) {
  const head = document.getElementById("head");
  head.replaceChildren();
  if (!doc.head) return;
  for (const f of doc.head.figures) {
    const card = figureEl(f, "head." + f.id);
    if (f.id === "mfu") {
      const c = doc.conventions || {};
      card.append(el("div", {class: "sub", id: "mfu-denominator"},
        (c.ours ? "ours" + ({counted: ", exact (FLOPs counted)", declared: " (FLOPs declared)",
                             analytic: " (FLOPs from the analytic formula)"}[doc.head.flops_how] ||
                            " (how the FLOPs were obtained is not recorded)") :
         "convention: " + c.convention) + "; vs " + (doc.peak || "no peak")));
    }
    head.append(card);
  }
}

function drawConvention(doc) {
  const box = body("convention");
  const c = doc.conventions;
  if (!c) return;
  box.append(el("p", {}, c.ours ? "MFU here is ours: the model FLOPs as " +
      (doc.head ? doc.head.flops : "counted") + ", over " + (doc.peak || "the peak") + "." :
      "MFU here follows " + c.convention + "'s convention."));
  if (c.absent) { box.append(absentNote(c.absent)); return; }
  box.append(el("p", {id: "convention-range"}, "The frameworks' formulas would report ",
    el("b", {}, fmt(c.range[0], "ratio") + " \u2013 " + fmt(c.range[1], "ratio")),
    " for this run (sequence length " + c.seq_len + "):"));
  box.append(figures(c.frameworks, "conventions"));
  for (const r of c.refused || []) box.append(el("div", {class: "muted"}, r.framework + ": " + r.why));
}

function drawCharts(doc) {
  const outer = body("charts");
  const s = doc.series;
  if (!s) return;
  const box = el("div", {class: "charts"});
  outer.append(box);
  box.append(lineChart("MFU" + (s.ofu.length ? " and OFU (tensor active)" : ""), [
    {name: "MFU", points: s.mfu, color: "#2f6fdf"},
    {name: "OFU (hw/tensor_active)", points: s.ofu, color: "#d9480f"},
    {name: "lowest rank", points: s.mfu_rank_min, color: "#868e96", dash: "4 3"},
    {name: "highest rank", points: s.mfu_rank_max, color: "#868e96", dash: "1 3"}], "ratio"));
  box.append(lineChart("step time (window mean)", [{name: "step time", points: s.step_time_s, color: "#2b8a3e"}], "s"));
  box.append(lineChart("tokens/s", [{name: "tokens/s", points: s.tokens_per_sec, color: "#7048e8"}], "tokens/s"));
  for (const note of s.sampling || []) outer.append(el("p", {class: "muted"}, note));
}

function drawSimple(id, section, prefix) {
  const box = body(id);
  if (!section) return;
  if (section.absent) box.append(absentNote(section.absent));
  if (section.figures && !(section.absent && section.figures.every(f => f.value === null))) {
    box.append(figures(section.figures, prefix));
  }
}

function drawWaterfall(doc) {
  const box = body("waterfall");
  const w = doc.waterfall;
  if (!w) return;
  if (w.absent) { box.append(absentNote(w.absent)); return; }
  if (w.seconds) {
    box.append(el("p", {class: "muted"}, w.note));
    box.append(stackedBar(w.seconds));
    box.append(figures(w.seconds, "waterfall"));
    return;
  }
  box.append(el("p", {class: "muted"}, "step " + w.step + " (the window's shares; they add up to " + fmt(w.sum, "ratio") + ")"));
  box.append(stackedBar(w.shares));
  box.append(figures(w.shares, "waterfall"));
  if (w.diagnosis) box.append(el("p", {}, w.diagnosis));
}

function drawLadder(doc) {
  const box = body("ladder");
  const l = doc.ladder;
  if (!l) return;
  if (l.absent) {            // no counters: say so once, and show MFU alone
    box.append(absentNote(l.absent));
    box.append(figureEl(l.rungs[l.rungs.length - 1], "ladder.mfu"));
    return;
  }
  for (const rung of l.rungs) {
    const width = rung.value === null ? 0 : Math.min(1, Math.max(0, rung.value)) * 100;
    const bar = el("div", {class: "track"}, el("div", {class: "bar", style: "width:" + width + "%"}));
    box.append(el("div", {class: "rung"}, figureEl(rung, "ladder." + rung.id), bar));
  }
  const side = el("div", {class: "grid2"}, figureEl(l.ofu, "ladder.ofu"));
  if (l.ofu_clock) side.append(figureEl(l.ofu_clock, "ladder.ofu_clock"));
  side.append(figureEl(l.self_check, "ladder.self_check"));
  box.append(side);
  if (l.verdict) box.append(el("p", {id: "self-check-verdict"}, l.verdict));
}

function drawLedger(doc) {
  const box = body("ledger");
  const g = doc.ledger;
  if (!g) return;
  if (g.absent) { box.append(absentNote(g.absent)); return; }
  box.append(stackedBar(g.figures.filter(f => f.id === "goodput" || f.id.startsWith("badput/"))));
  box.append(figures(g.figures, "ledger"));
  for (const note of g.notes || []) box.append(el("p", {class: "muted"}, note));
}

function drawKernels(doc) {
  const box = body("kernels");
  const k = doc.kernels;
  if (!k) return;
  if (k.absent) { box.append(absentNote(k.absent)); return; }
  box.append(el("p", {class: "muted"}, "profiled step " + k.step + ": " + k.how));
  const table = el("table", {id: "kernel-table"}, el("tr", {}, el("th", {}, "class"), el("th", {}, "share"),
    el("th", {}, "time"), el("th", {}, "TFLOP/s"), el("th", {}, "of peak")));
  for (const r of k.rows) {
    table.append(el("tr", {}, el("td", {}, r["class"]), el("td", {class: "num"}, fmt(r.share, "ratio")),
      el("td", {class: "num"}, r.time_s === undefined ? "" : fmt(r.time_s, "s")),
      el("td", {class: "num"}, r.tflops == null ? "" : fmt(r.tflops, "")),
      el("td", {class: "num"}, r.peak_share == null ? "" : fmt(r.peak_share, "ratio"))));
  }
  box.append(table);
}

function drawAdvice(doc) {
  const box = body("advice");
  const a = doc.advice;
  if (!a) return;
  if (!a.advice.length) box.append(el("p", {class: "muted"}, "nothing measured crosses a rule's threshold"));
  const list = el("ol", {});
  for (const item of a.advice) {
    list.append(el("li", {}, el("b", {}, "up to " + fmt(item.bound, "ratio") + " of the step: "), item.lever,
                   el("div", {class: "muted"}, "evidence: " + item.evidence)));
  }
  box.append(list);
  for (const n of a.needs) box.append(el("div", {class: "muted"}, "not judged: " + n.rule + " \u2014 " + n.needs));
}

function drawMissing(doc) {
  const box = body("missing");
  for (const m of doc.missing || []) box.append(el("div", {class: "muted"}, m));
  for (const m of (doc.log && doc.log.invalid) || []) box.append(el("div", {class: "muted"}, "invalid: " + m));
}

function draw(doc) {
  drawHeader(doc);
  drawHead(doc);
  drawConvention(doc);
  drawCharts(doc);
  drawSimple("progress", doc.progress, "progress");
  drawWaterfall(doc);
  drawLadder(doc);
  drawSimple("memory", doc.memory, "memory");
  drawSimple("ranks", doc.ranks, "ranks");
  drawLedger(doc);
  drawKernels(doc);
  drawAdvice(doc);
  drawMissing(doc);
  document.body.setAttribute("data-lines", String((doc.log && doc.log.lines) || 0));
}

async function poll() {
  try {
    const response = await fetch("api/state", {cache: "no-store"});
    const doc = await response.json();
    const text = JSON.stringify(Object.assign({}, doc, {served_at: 0}));
    if (text !== lastText) { lastText = text; draw(doc); } else { drawHeader(doc); }
  } catch (error) {
    document.getElementById("status").textContent = "the server stopped answering (" + error + ")";
  }
  setTimeout(poll, POLL_MS);
}

poll();

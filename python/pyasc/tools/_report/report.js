// pyasc profile report: draws the embedded profile as SVG (no network, no libraries).
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("data").textContent);
  const NS = "http://www.w3.org/2000/svg";
  const tip = document.getElementById("tip");
  const el = (tag, attrs, parent) => {
    const e = document.createElementNS(NS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  };
  const fmtUs = (v) => (v >= 1000 ? (v / 1000).toFixed(2) + " ms" : v.toFixed(1) + " us");
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  const palette = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
  const opNames = [...new Set(D.kernels.map((k) => k.operator))];
  const color = (op) => palette[opNames.indexOf(op) % palette.length];
  const hostColor = { trace: "#bcd", compile: "#9bd", pass: "#cde", launch: "#fc8", copy: "#aea", sync: "#ddd", alloc: "#eca", free: "#dcb" };
  const showTip = (ev, text) => { tip.textContent = text; tip.hidden = false; tip.style.left = ev.clientX + 12 + "px"; tip.style.top = ev.clientY + 12 + "px"; };
  const hideTip = () => { tip.hidden = true; };
  const kernelText = (k) => `${k.operator} / ${k.kernel}\nops: ${k.ops}\nstream ${k.stream}, ${k.blockDim} blocks\n` +
    `${fmtUs(k.dur)}, ${(k.bytes / 1e6).toFixed(2)} MB, ${(k.flops / 1e6).toFixed(2)} MFLOP\n` +
    `${k.gbs.toFixed(2)} GB/s (${(100 * k.bw).toFixed(0)}% of triad), ${k.gflops.toFixed(2)} GFLOP/s (${(100 * k.fma).toFixed(1)}% of FMA)\n` +
    `${k.bound}-bound; in ${k.inShapes} ${k.inTypes}; out ${k.outShapes} ${k.outTypes}`;

  // Facts.
  const total = D.kernels.reduce((s, k) => s + k.dur, 0);
  document.getElementById("facts").innerHTML =
    `<span><b>${D.kernels.length}</b> kernel runs</span><span><b>${opNames.length}</b> operators</span>` +
    `<span>kernel time <b>${fmtUs(total)}</b></span><span>roofs: copy <b>${D.roofs.copy_gbs.toFixed(1)}</b> GB/s, ` +
    `triad <b>${D.roofs.triad_gbs.toFixed(1)}</b> GB/s, FMA <b>${D.roofs.fma_gflops.toFixed(1)}</b> GFLOP/s (${esc(D.roofs.isa)}, ${D.roofs.threads} threads)</span>`;

  // Timeline lanes: host threads, then streams, then cores.
  const lanes = [];
  const laneOf = {};
  const addLane = (key, label, group) => { if (!(key in laneOf)) { laneOf[key] = lanes.length; lanes.push({ key, label, group }); } };
  [...new Set(D.host.map((h) => h.thread))].sort((a, b) => a - b).forEach((t) => addLane("h" + t, "thread " + t, "host"));
  // Synchronous launches (stream 0) get a lane per launching thread, so they never overlap.
  const streamKey = (k) => (k.stream === 0 ? "s0t" + k.thread : "s" + k.stream);
  [...new Set(D.kernels.filter((k) => k.stream === 0).map((k) => k.thread))].sort((a, b) => a - b)
    .forEach((t) => addLane("s0t" + t, "stream 0 (sync, t" + t + ")", "stream"));
  [...new Set(D.kernels.map((k) => k.stream).concat(D.tasks.map((t) => t.stream)).filter((s) => s !== 0))]
    .sort((a, b) => a - b).forEach((s) => addLane("s" + s, "stream " + s, "stream"));
  [...new Set(D.kernels.flatMap((k) => k.blocks.map((b) => b[0])))].sort((a, b) => a - b)
    .forEach((c) => addLane("c" + c, "core (thread " + c + ")", "core"));
  let tMax = 0;
  D.host.forEach((h) => { tMax = Math.max(tMax, h.start + h.dur); });
  D.kernels.forEach((k) => { tMax = Math.max(tMax, k.start + k.dur); });
  D.tasks.forEach((t) => { tMax = Math.max(tMax, t.start + t.dur); });
  tMax = tMax > 0 ? tMax * 1.02 : 1;
  // Host events nest (a compile holds its passes, a launch its allocations): one row per depth.
  const depthOf = new Map();
  const open = {};
  D.host.forEach((h) => {
    const stack = (open[h.thread] ||= []);
    while (stack.length && stack[stack.length - 1] <= h.start) stack.pop();
    depthOf.set(h, stack.length);
    stack.push(h.start + h.dur);
    const lane = lanes[laneOf["h" + h.thread]];
    lane.rows = Math.max(lane.rows || 1, stack.length);
  });
  const W = Math.max(900, Math.min(1400, window.innerWidth - 60)), LABEL = 130, LANE = 22, ROW = 14, TOP = 24;
  const laneY = [];
  let yAt = TOP;
  lanes.forEach((l) => { laneY.push(yAt); yAt += l.rows > 1 ? 6 + l.rows * ROW : LANE; });
  const H = yAt + 8;
  const svg = el("svg", { width: W, height: H, id: "timeline-svg" }, document.getElementById("timeline"));
  const axis = el("g", { class: "axis" }, svg);
  lanes.forEach((l, i) => {
    el("line", { x1: 0, x2: W, y1: laneY[i], y2: laneY[i], class: "grid" }, svg);
    const t = el("text", { x: 4, y: laneY[i] + 15, class: "lane-label" }, svg);
    t.textContent = l.label;
  });
  el("clipPath", { id: "plot-clip" }, svg).appendChild(el("rect", { x: LABEL, y: 0, width: W - LABEL, height: H }));
  const plot = el("g", { "clip-path": "url(#plot-clip)" }, svg);
  const items = [];
  const add = (laneKey, start, dur, cls, fill, text, data, depth) => {
    const lane = laneOf[laneKey];
    const box = lanes[lane].rows > 1 ? { y: laneY[lane] + 3 + (depth || 0) * ROW, height: ROW - 2 } : { y: laneY[lane] + 3, height: LANE - 6 };
    const r = el("rect", { y: box.y, height: box.height, class: cls, fill }, plot);
    for (const k in data || {}) r.dataset[k] = data[k];
    r.addEventListener("mousemove", (ev) => showTip(ev, text));
    r.addEventListener("mouseleave", hideTip);
    items.push({ r, start, dur });
  };
  D.tasks.forEach((t) => add("s" + t.stream, t.start, t.dur, "task", "#ccd", `task ${t.name}: ${fmtUs(t.dur)}`));
  D.host.forEach((h) => add("h" + h.thread, h.start, h.dur, "host " + h.kind, hostColor[h.kind] || "#ccc",
    `${h.kind} ${h.name}: ${fmtUs(h.dur)}` + (h.bytes ? `, ${h.bytes} bytes` : ""), {}, depthOf.get(h)));
  D.kernels.forEach((k) => {
    k.blocks.forEach((b, i) => add("c" + b[0], b[1], b[2] - b[1], "block", color(k.operator),
      `block ${i} of ${k.kernel}: ${fmtUs(b[2] - b[1])}`, { kernel: k.id }));
    add(streamKey(k), k.start, k.dur, "kernel", color(k.operator), kernelText(k), { id: k.id, kernel: k.kernel });
  });
  const flows = el("g", {}, plot);
  let view = [0, tMax];
  const x = (t) => LABEL + ((t - view[0]) / (view[1] - view[0])) * (W - LABEL);
  const draw = () => {
    items.forEach((it) => {
      const x0 = x(it.start);
      it.r.setAttribute("x", x0);
      it.r.setAttribute("width", Math.max(1, x(it.start + it.dur) - x0));
    });
    flows.textContent = "";
    D.kernels.forEach((k) => {
      const from = laneOf["h" + k.launchThread], to = laneOf[streamKey(k)];
      if (from === undefined || to === undefined) return;
      el("line", { x1: x(k.launchAt), y1: laneY[from] + 12, x2: x(k.start), y2: laneY[to] + 3,
        stroke: "#c33", "stroke-width": 0.8, class: "flow" }, flows);
    });
    axis.textContent = "";
    const span = view[1] - view[0];
    const step = Math.pow(10, Math.floor(Math.log10(span / 6)));
    const nice = [1, 2, 5, 10].map((m) => m * step).find((s) => span / s <= 10) || step * 10;
    for (let t = Math.ceil(view[0] / nice) * nice; t <= view[1]; t += nice) {
      el("line", { x1: x(t), x2: x(t), y1: TOP - 4, y2: H, class: "grid" }, axis);
      if (x(t) < W - 60) el("text", { x: x(t) + 2, y: TOP - 8 }, axis).textContent = fmtUs(t);
    }
  };
  draw();
  svg.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const box = svg.getBoundingClientRect();
    const px = Math.max(LABEL, ev.clientX - box.left);
    const at = view[0] + ((px - LABEL) / (W - LABEL)) * (view[1] - view[0]);
    const f = ev.deltaY < 0 ? 0.8 : 1.25;
    const span = Math.min(tMax, Math.max(1e-3, (view[1] - view[0]) * f));
    view = [at - ((at - view[0]) / (view[1] - view[0])) * span, 0];
    view[0] = Math.max(0, Math.min(view[0], tMax - span));
    view[1] = view[0] + span;
    draw();
  }, { passive: false });
  let drag = null;
  svg.addEventListener("mousedown", (ev) => { drag = { x: ev.clientX, view: view.slice() }; });
  window.addEventListener("mouseup", () => { drag = null; });
  window.addEventListener("mousemove", (ev) => {
    if (!drag) return;
    const dt = ((ev.clientX - drag.x) / (W - LABEL)) * (drag.view[1] - drag.view[0]);
    const span = drag.view[1] - drag.view[0];
    const s = Math.max(0, Math.min(drag.view[0] - dt, tMax - span));
    view = [s, s + span];
    draw();
  });
  svg.addEventListener("dblclick", () => { view = [0, tMax]; draw(); });

  // Top kernels: grouped by operator and kernel, by total time.
  const groups = {};
  D.kernels.forEach((k) => {
    const g = (groups[k.operator + "\u0000" + k.kernel] ||= { operator: k.operator, kernel: k.kernel, ops: k.ops, runs: 0, t: 0, bytes: 0, flops: 0, bound: k.bound });
    g.runs += 1; g.t += k.dur; g.bytes += k.bytes; g.flops += k.flops;
  });
  const top = Object.values(groups).sort((a, b) => b.t - a.t);
  const table = document.getElementById("top");
  table.innerHTML = "<tr><th>Operator</th><th>Kernel</th><th>Ops</th><th>Runs</th><th>Total</th><th>Avg</th><th>Share</th>" +
    "<th>GB/s</th><th>GFLOP/s</th><th>% triad</th><th>% FMA</th><th>Bound</th></tr>" +
    top.map((g) => {
      const gbs = g.bytes / (g.t * 1e3), gf = g.flops / (g.t * 1e3), share = total ? (100 * g.t) / total : 0;
      return `<tr class="top-row"><td>${esc(g.operator)}</td><td>${esc(g.kernel)}</td><td>${esc(g.ops)}</td><td>${g.runs}</td>` +
        `<td>${fmtUs(g.t)}</td><td>${fmtUs(g.t / g.runs)}</td><td><span class="bar" style="width:${share.toFixed(0)}px"></span>${share.toFixed(1)}%</td>` +
        `<td>${gbs.toFixed(2)}</td><td>${gf.toFixed(2)}</td><td>${((100 * gbs) / D.roofs.triad_gbs).toFixed(1)}</td>` +
        `<td>${((100 * gf) / D.roofs.fma_gflops).toFixed(2)}</td><td>${g.bound}</td></tr>`;
    }).join("");

  // Roofline: log-log, FLOP per byte against GFLOP/s.
  const RW = 720, RH = 420, M = { l: 60, r: 20, t: 16, b: 44 };
  const rsvg = el("svg", { width: RW, height: RH, id: "roofline-svg" }, document.getElementById("roofline"));
  const pts = D.kernels.map((k) => ({ k, i: k.intensity === null ? 1e3 : Math.max(k.intensity, 1e-3), g: Math.max(k.gflops, 1e-3) }));
  const ridge = D.roofs.fma_gflops / D.roofs.triad_gbs;
  const xs = pts.map((p) => p.i).concat([ridge * 8, 1e-2]), ys = pts.map((p) => p.g).concat([D.roofs.fma_gflops * 2]);
  const lx = [Math.floor(Math.log10(Math.min(...xs))), Math.ceil(Math.log10(Math.max(...xs)))];
  const ly = [Math.floor(Math.log10(Math.min(...ys, D.roofs.triad_gbs * 1e-2))), Math.ceil(Math.log10(Math.max(...ys)))];
  const X = (v) => M.l + ((Math.log10(v) - lx[0]) / (lx[1] - lx[0])) * (RW - M.l - M.r);
  const Y = (v) => RH - M.b - ((Math.log10(v) - ly[0]) / (ly[1] - ly[0])) * (RH - M.t - M.b);
  const rax = el("g", { class: "axis" }, rsvg);
  for (let e = lx[0]; e <= lx[1]; e++) {
    el("line", { x1: X(10 ** e), x2: X(10 ** e), y1: M.t, y2: RH - M.b, class: "grid" }, rax);
    el("text", { x: X(10 ** e) - 8, y: RH - M.b + 14 }, rax).textContent = "1e" + e;
  }
  for (let e = ly[0]; e <= ly[1]; e++) {
    el("line", { x1: M.l, x2: RW - M.r, y1: Y(10 ** e), y2: Y(10 ** e), class: "grid" }, rax);
    el("text", { x: 8, y: Y(10 ** e) + 3 }, rax).textContent = "1e" + e;
  }
  el("text", { x: RW / 2 - 80, y: RH - 8 }, rax).textContent = "arithmetic intensity (FLOP / byte)";
  el("text", { x: 8, y: M.t - 4 }, rax).textContent = "GFLOP/s";
  const roof = (bw, cls, colr) => {
    const a = 10 ** lx[0], knee = D.roofs.fma_gflops / bw, b = 10 ** lx[1];
    el("polyline", { points: `${X(a)},${Y(bw * a)} ${X(knee)},${Y(D.roofs.fma_gflops)} ${X(b)},${Y(D.roofs.fma_gflops)}`,
      class: "roof " + cls, stroke: colr }, rsvg);
  };
  roof(D.roofs.copy_gbs, "roof-copy", "#9ab");
  roof(D.roofs.triad_gbs, "roof-triad", "#357");
  const leg = el("g", { class: "legend" }, rsvg);
  el("text", { x: RW - 260, y: M.t + 12, fill: "#357" }, leg).textContent =
    `triad ${D.roofs.triad_gbs.toFixed(1)} GB/s, FMA ${D.roofs.fma_gflops.toFixed(0)} GFLOP/s`;
  el("text", { x: RW - 260, y: M.t + 26, fill: "#9ab" }, leg).textContent = `copy ${D.roofs.copy_gbs.toFixed(1)} GB/s`;
  opNames.forEach((op, i) => {
    el("circle", { cx: RW - 254, cy: M.t + 40 + i * 14, r: 4, fill: color(op) }, leg);
    el("text", { x: RW - 244, y: M.t + 44 + i * 14 }, leg).textContent = op;
  });
  pts.forEach((p) => {
    const c = el("circle", { cx: X(p.i), cy: Y(p.g), r: 4, class: "point", fill: color(p.k.operator) }, rsvg);
    c.dataset.id = p.k.id;
    c.addEventListener("mousemove", (ev) => showTip(ev, kernelText(p.k)));
    c.addEventListener("mouseleave", hideTip);
  });

  // Compiled operators.
  const ops = document.getElementById("ops");
  const names = Object.keys(D.ops);
  if (!names.length) ops.textContent = "No operator was launched in the profile.";
  names.forEach((name) => {
    const o = D.ops[name];
    const fusion = o.fusion.split("\n").filter((l) => l).map((l) => l.split("\t"));
    const det = document.createElement("details");
    det.className = "op";
    det.innerHTML = `<summary>${esc(name)} (${fusion.length} kernel${fusion.length === 1 ? "" : "s"})</summary>` +
      "<h3>Fusion groups</h3><table class=\"fusion\"><tr><th>Kernel</th><th>Fused ops</th><th>Source lines</th></tr>" +
      fusion.map((f) => `<tr><td>${esc(f[0])}</td><td>${esc(f[1])}</td><td>${esc(f[2] || "")}</td></tr>`).join("") + "</table>" +
      `<h3>Graph IR (optimised)</h3><pre>${esc(o.graph_ir)}</pre><h3>Graph IR (as traced)</h3><pre>${esc(o.traced_ir)}</pre>` +
      "<h3>Tile programs</h3>" + o.tile_programs.map((p) => `<pre>${esc(p)}</pre>`).join("");
    ops.appendChild(det);
  });

  window.pyascReport = {
    kernels: D.kernels.length,
    timelineKernels: document.querySelectorAll("#timeline rect.kernel").length,
    rooflinePoints: document.querySelectorAll("#roofline circle.point").length,
    ready: true,
  };
})();

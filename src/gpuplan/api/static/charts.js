/* gpuplan page: the two charts as inline SVG, drawn at the width they are shown at (one SVG unit is
 * one CSS pixel, so the 12 px text stays 12 px on a phone), with labels measured so that none overlaps
 * another or leaves the picture. */
"use strict";

import { $, TRAINING, el, fmtGiB, fmtNum, svgEl, t } from "./util.js";

export const COLOURS = { weights: "#0072B2", gradients: "#E69F00", optimizer: "#009E73", activations: "#CC79A7",
                         kv_cache: "#56B4E9", adapters: "#F0E442", logits: "#D55E00", overhead: "#999999" };
const FONT_PX = 12;
let ctx2d = null;

/* Width in px of a text drawn in the page's font at 12 px. */
export function textWidth(text) {
  if (!ctx2d) ctx2d = document.createElement("canvas").getContext("2d");
  const family = getComputedStyle(document.body).fontFamily || "sans-serif";
  ctx2d.font = `${FONT_PX}px ${family}`;
  return ctx2d.measureText(String(text)).width;
}

function hostWidth(host, fallback) {
  const w = Math.floor(host.clientWidth || host.getBoundingClientRect().width || fallback);
  return Math.max(260, Math.min(w, 640));
}

export function drawMemory(host, plan) {
  host.replaceChildren();
  const W = hostWidth(host, 460), left = 10, barW = W - 20, barY = 40, barH = 30;
  const comps = plan ? Object.entries(plan.memory_components || {}).filter(([, v]) => v > 0) : [];
  const labels = comps.map(([k, v]) => `${t(k)} ${fmtGiB(v)}`);
  const colW = Math.max(0, ...labels.map((s) => textWidth(s) + 24));
  const cols = Math.max(1, Math.min(3, Math.floor(barW / Math.max(colW, 1))));
  const rows = Math.max(1, Math.ceil(comps.length / cols));
  const title = plan ? `${plan.gpu}: ${fmtGiB(plan.memory_per_gpu_bytes)} / ${fmtGiB(plan.capacity_per_gpu_bytes)} (${t("capacity")})`
                     : t("no_points");
  const titleLines = textWidth(title) > barW ? [title.split(": ")[0] + ":", title.split(": ").slice(1).join(": ")] : [title];
  const top = 8 + 16 * titleLines.length;
  const H = top + barY - 22 + barH + 34 + rows * 20;
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, id: "memory-svg", role: "img" });
  svg.appendChild(svgEl("title", null, t("chart_memory")));
  titleLines.forEach((line, i) => svg.appendChild(svgEl("text", { x: left, y: 20 + 16 * i, "font-weight": "bold" }, line)));
  const y0 = top + barY - 22;
  const total = comps.reduce((a, [, v]) => a + v, 0);
  const cap = plan ? plan.capacity_per_gpu_bytes : 0;
  const scale = Math.max(total, cap || 0, 1);
  let x = left;
  for (const [k, v] of comps) {
    const w = (barW * v) / scale;
    const r = svgEl("rect", { x: x.toFixed(1), y: y0, width: w.toFixed(1), height: barH, fill: COLOURS[k] || "#666",
                              "data-component": k });
    r.appendChild(svgEl("title", null, `${t(k)}: ${fmtGiB(v)}`));
    svg.appendChild(r);
    x += w;
  }
  if (cap) {
    const cx = left + (barW * cap) / scale;
    svg.appendChild(svgEl("line", { x1: cx.toFixed(1), y1: y0 - 8, x2: cx.toFixed(1), y2: y0 + barH + 8,
                                    stroke: "#000", "stroke-width": 2, "stroke-dasharray": "4 2" }));
  }
  const step = barW / cols;
  comps.forEach(([k], i) => {
    const lx = left + (i % cols) * step, ly = y0 + barH + 26 + Math.floor(i / cols) * 20;
    svg.appendChild(svgEl("rect", { x: lx, y: ly - 10, width: 11, height: 11, fill: COLOURS[k] || "#666" }));
    svg.appendChild(svgEl("text", { x: lx + 16, y: ly, class: "legend" }, labels[i]));
  });
  host.appendChild(svg);
}

function paretoAxes(doc) {
  const training = TRAINING.has((doc.workload || {}).task);
  const hasDataset = !!(doc.workload || {}).dataset;
  const cur = doc.currency || "";
  if (training && hasDataset) return { x: t("job_time_h"), y: `${t("total_cost")} (${cur})`, xs: 1 / 3600 };
  if (training) return { x: t("h_per_btok"), y: `${t("cost_per_btok")} (${cur})`, xs: 1 / 3600 };
  return { x: t("latency_s"), y: `${t("monthly_cost")} (${cur})`, xs: 1 };
}

function planKey(p) { return `${p.instance_type}|${p.instance_count}|${p.billing}|${p.region}`; }

function planPoint(doc, p) {
  const training = TRAINING.has((doc.workload || {}).task);
  if (training && p.time_s !== null && p.total_cost !== null) return [p.time_s, p.total_cost];
  if (training && p.time_per_billion_tokens_s && p.cost_per_billion_tokens !== null)
    return [p.time_per_billion_tokens_s, p.cost_per_billion_tokens];
  const hit = (doc.pareto || []).find((q) => planKey(q) === planKey(p));
  return hit && hit.cost !== null && hit.time_s !== null ? [hit.time_s, hit.cost] : null;
}

/* 0 and round steps (1, 2, 2.5 or 5 x 10^k) covering max, about `count` of them. */
export function niceTicks(max, count) {
  if (!(max > 0) || !isFinite(max)) return [0, 1];
  const raw = max / Math.max(1, count || 4), mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((v) => v >= raw);
  const n = Math.ceil(max / step - 1e-9);
  return Array.from({ length: n + 1 }, (_, i) => +(i * step).toPrecision(12));
}
export function fmtTick(v) { return fmtNum(v, v !== 0 && Math.abs(v) < 1 ? 3 : v < 10 ? 1 : 0); }

/* x ticks whose labels fit side by side with a gap: fewer round steps until they do. */
function fitTicks(max, room, minCount) {
  for (let count = Math.max(minCount, 2); count >= 1; count--) {
    const ticks = niceTicks(max, count);
    const widest = Math.max(...ticks.map((v) => textWidth(fmtTick(v))));
    if ((widest + 12) * ticks.length <= room + widest) return ticks;
  }
  return niceTicks(max, 1);
}

export function drawPareto(host, doc, sel) {
  host.replaceChildren();
  const W = hostWidth(host, 480), H = Math.round(Math.min(330, Math.max(240, W * 0.7)));
  const axes = paretoAxes(doc);
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, id: "pareto-svg", role: "img" });
  svg.appendChild(svgEl("title", null, t("chart_pareto")));
  const front = (doc.pareto || []).filter((q) => q.cost !== null && q.time_s !== null)
    .map((q) => ({ x: q.time_s * axes.xs, y: q.cost, label: `${q.instance_type} × ${q.instance_count}, ${t("b_" + q.billing)}`,
                   front: true, key: planKey(q) }));
  const keys = new Set(front.map((q) => q.key));
  const others = [];
  (doc.plans || []).forEach((p) => {
    const pt = planPoint(doc, p);
    if (pt && !keys.has(planKey(p))) others.push({ x: pt[0] * axes.xs, y: pt[1], label: `#${p.rank} ${p.instance_type}`, front: false, key: planKey(p) });
  });
  const pts = front.concat(others).filter((q) => isFinite(q.x) && isFinite(q.y));
  if (!pts.length) {
    svg.appendChild(svgEl("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "empty" }, t("no_points")));
    host.appendChild(svg);
    return;
  }
  const yt = niceTicks(Math.max(...pts.map((q) => q.y)), H < 300 ? 4 : 5);
  const ml = Math.ceil(Math.max(...yt.map((v) => textWidth(fmtTick(v))))) + 30, mr = 14, mt = 14, mb = 46;
  const pw = W - ml - mr, ph = H - mt - mb;
  const xt = fitTicks(Math.max(...pts.map((q) => q.x)), pw, pw > 360 ? 5 : 4);
  const x1 = xt[xt.length - 1], y1 = yt[yt.length - 1];
  const sx = (v) => ml + (pw * v) / x1, sy = (v) => mt + ph - (ph * v) / y1;
  svg.appendChild(svgEl("rect", { x: ml, y: mt, width: pw, height: ph, fill: "none", stroke: "#000" }));
  xt.forEach((xv, i) => {
    // the last label ends at the right edge of the plot (never past the picture)
    const anchor = i === xt.length - 1 ? "end" : i === 0 ? "start" : "middle";
    svg.appendChild(svgEl("text", { x: sx(xv), y: mt + ph + 16, "text-anchor": anchor, class: "tick" }, fmtTick(xv)));
  });
  for (const yv of yt) {
    svg.appendChild(svgEl("text", { x: ml - 6, y: sy(yv) + 4, "text-anchor": "end", class: "tick" }, fmtTick(yv)));
    if (yv > 0) svg.appendChild(svgEl("line", { x1: ml, x2: ml + pw, y1: sy(yv), y2: sy(yv), stroke: "#eee" }));
  }
  svg.appendChild(svgEl("text", { x: ml + pw / 2, y: H - 10, "text-anchor": "middle", class: "axis" }, axes.x));
  svg.appendChild(svgEl("text", { x: 14, y: mt + ph / 2, "text-anchor": "middle", class: "axis",
                                  transform: `rotate(-90 14 ${mt + ph / 2})` }, axes.y));
  const line = front.slice().sort((a, b) => a.x - b.x || a.y - b.y);
  if (line.length > 1) {
    svg.appendChild(svgEl("polyline", { points: line.map((q) => `${sx(q.x).toFixed(1)},${sy(q.y).toFixed(1)}`).join(" "),
                                        fill: "none", stroke: "#D55E00", "stroke-width": 1.5, class: "front" }));
  }
  const selKey = sel ? planKey(sel) : "";
  for (const q of pts) {
    const chosen = q.key === selKey;
    const c = svgEl("circle", { cx: sx(q.x).toFixed(1), cy: sy(q.y).toFixed(1), r: chosen ? 7 : 4.5,
                                fill: q.front ? "#D55E00" : "#fff", stroke: chosen ? "#000" : "#0072B2",
                                "stroke-width": 1.5, class: q.front ? "point front" : "point" });
    c.appendChild(svgEl("title", null, `${q.label}: ${fmtNum(q.x, 2)}, ${fmtNum(q.y, 2)}`));
    svg.appendChild(c);
  }
  host.appendChild(svg);
  // The selected plan is named under the chart (the large point), where no label can collide.
  const chosen = pts.find((q) => q.key === selKey);
  if (chosen) host.appendChild(el("p", { class: "chart-sel muted" }, "● " + chosen.label));
}

export function drawCharts(doc, sel) {
  drawMemory($("memory-chart"), sel);
  drawPareto($("pareto-chart"), doc, sel);
}


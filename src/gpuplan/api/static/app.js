/* gpuplan page: vanilla JS modules, no dependencies, nothing loaded from elsewhere.
 * The form builds a workload (the same keys as a workload file), POSTs it to /api/recommend,
 * and draws the answer: ranked plans (each row focusable; Enter or Space opens its details),
 * the selected plan's figures (TTFT, TPOT, load and headroom for serving; micro-batch,
 * accumulation, global batch, bubble and MFU for training), the memory breakdown and the
 * cost/time chart, the assumptions and the "why not" list. The URL mirrors the form, so a
 * result can be shared. Switching the language asks the API again, so the server's sentences
 * change too. Every server text is inserted with textContent (never as HTML). */
"use strict";

import { drawCharts } from "./charts.js";
import {
  buildWorkload, closeModelList, fillFromUrl, fillFromWorkload, fillRegions, inputNotes, MAX_FILE_BYTES, modelKeys,
  showModelList, toggleTaskFields, updateUrl,
} from "./form.js";
import { planFacts } from "./facts.js";
import { $, el, fmtDuration, fmtGiB, fmtMoney, fmtNum, fmtPct, fmtRange, GIB, joinUnits, nobreak, state, t, TRAINING, unique } from "./util.js";

/* ---------------------------------------------------------------- i18n */
function applyLang(lang, refetch) {
  state.lang = lang === "zh" ? "zh" : "en";
  document.documentElement.lang = state.lang === "zh" ? "zh-CN" : "en";
  for (const node of document.querySelectorAll("[data-i18n]")) node.textContent = t(node.dataset.i18n);
  for (const node of document.querySelectorAll("[data-i18n-label]")) node.setAttribute("aria-label", t(node.dataset.i18nLabel));
  $("lang-toggle").textContent = state.lang === "zh" ? "English" : "中文";
  fillSelectLabels();
  inputNotes();
  updateUrl();
  // The server's sentences (why, warnings, assumptions, errors) are in the language of the request: ask again.
  if (refetch && state.workload) search(state.workload, true);
  else if (state.doc) render();
}

function fillSelectLabels() {
  for (const opt of $("task").options) opt.textContent = t("t_" + opt.value);
  for (const opt of $("objective").options) opt.textContent = t("o_" + opt.value);
  for (const opt of $("cloud").options) opt.textContent = t("cl_" + opt.value);
  for (const id of ["precision", "quantization"]) {
    const published = $(id).querySelector('option[value=""]');
    if (published) published.textContent = t("as_published");
  }
  const anyFramework = $("framework").querySelector('option[value=""]');
  if (anyFramework) anyFramework.textContent = t("any_framework");
  const anyRegion = $("region").querySelector('option[value=""]');
  if (anyRegion) anyRegion.textContent = t("any_region");
  for (const lab of $("billing").querySelectorAll("label")) lab.lastChild.textContent = " " + t("b_" + lab.dataset.value);
}

/* ---------------------------------------------------------------- form setup */
function setOptions(select, values, labelOf) {
  select.replaceChildren();
  for (const v of values) select.appendChild(el("option", { value: v }, labelOf ? labelOf(v) : v));
}

async function getJson(url) {
  const r = await fetch(url, { headers: { Accept: "application/json" } });
  if (!r.ok) throw new Error(url + ": HTTP " + r.status);
  return r.json();
}

async function loadOptions() {
  const [opts, models] = await Promise.all([getJson("/api/options"), getJson("/api/models?brief=true")]);
  state.options = opts;
  state.models = models.models;
  setOptions($("task"), opts.tasks, (v) => t("t_" + v));
  $("task").value = "lora";
  setOptions($("objective"), opts.objectives, (v) => t("o_" + v));
  // "" = as published: the server reads precision and quantization from the model id (a -GPTQ-Int4
  // checkpoint is GPTQ 4-bit), as a workload file without those keys would
  setOptions($("precision"), ["", ...opts.precisions], (v) => (v ? v : t("as_published")));
  setOptions($("quantization"), ["", ...opts.quantizations], (v) => (v ? v : t("as_published")));
  setOptions($("framework"), ["", ...opts.frameworks], (v) => (v ? v : t("any_framework")));
  setOptions($("currency"), opts.currencies);
  setOptions($("cloud"), opts.clouds || ["alibaba"], (v) => t("cl_" + v));
  $("cloud").value = opts.default_cloud || "alibaba";
  fillRegions();
  const box = $("billing");
  box.replaceChildren();
  for (const b of opts.billing) {
    const lab = el("label", { "data-value": b });
    const cb = el("input", { type: "checkbox", name: "billing", value: b });
    cb.checked = true;
    lab.append(cb, document.createTextNode(" " + t("b_" + b)));
    box.appendChild(lab);
  }
  $("version").textContent = "gpuplan " + opts.version;
}

/* ---------------------------------------------------------------- requests */
/* The input that shows a workload field (dotted, as the server names it); other keys live in the "other keys" box. */
const FIELD_INPUT = { "dataset.tokens": "dataset_tokens", "dataset.epochs": "epochs", "dataset.samples": "samples",
                      "dataset.tokens_per_sample": "tokens_per_sample", "dataset.items": "items",
                      "dataset.audio_hours": "audio_hours", "constraints.regions": "region", "constraints.clouds": "cloud",
                      "constraints.billing": "billing", "hardware.gpu": "gpu", "lora.rank": "lora_rank",
                      "serving.requests_per_s": "requests_per_s", "serving.ttft_ms": "ttft_ms", "serving.tpot_ms": "tpot_ms",
                      dataset: "dataset_tokens", serving: "requests_per_s" };

function inputFor(field) {
  const parts = (field || "").split(".");
  if (!parts[0]) return null;
  if (parts[0] === "batch_size") return TRAINING.has($("task").value) ? "batch_size" : "concurrency";
  const id = FIELD_INPUT[parts.slice(0, 2).join(".")] || FIELD_INPUT[parts[0]]
    || (parts.length === 1 && $(parts[0]) ? parts[0] : parts[0] === "constraints" && $(parts[1]) ? parts[1] : null);
  return id || "other_keys";   // a key only the "other keys" box holds (an inline model's config keys too)
}

function showError(err) {
  for (const node of document.querySelectorAll(".invalid")) node.classList.remove("invalid");
  const box = $("form-error");
  box.hidden = false;
  box.textContent = t("error_prefix") + ": " + err.error + (err.hint ? " — " + err.hint : "");
  const id = inputFor(err.field);
  if (id && $(id)) {
    $(id).classList.add("invalid");
    if (id === "other_keys" || ["framework", "gpu", "max_gpus", "lora_rank"].includes(id)) $("more").open = true;
  }
}

/* A failed search leaves nothing of the previous answer on screen (no plan row, no download link). */
function clearResults(message) {
  state.doc = null;
  $("output").hidden = true;
  $("plans").querySelector("tbody").replaceChildren();
  $("download").hidden = true;
  $("download-status").textContent = "";
  $("memory-chart").replaceChildren();
  $("pareto-chart").replaceChildren();
  $("status").hidden = false;
  $("status").textContent = message;
}

async function postJson(url, body) {
  // The API answers errors (and the text it makes) in the page's language; JSON keys never change.
  const r = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json", "Accept-Language": state.lang },
                               body: JSON.stringify(body) });
  let doc = null;
  try { doc = await r.clone().json(); } catch (e) { doc = null; }
  return { ok: r.ok, status: r.status, doc, response: r };
}

async function search(w, keepSelection) {
  const seq = ++state.seq;
  state.workload = w;
  document.body.dataset.busy = "true";     // (tests wait for the answer of the latest search)
  $("submit").disabled = true;
  $("status").hidden = false;
  $("status").textContent = t("working");
  try {
    const res = await postJson("/api/recommend?top=8", w);
    if (seq !== state.seq) return;                       // a newer search has started
    if (!res.ok) {
      clearResults(t("search_failed"));
      showError(res.doc || { error: "HTTP " + res.status });
      return;
    }
    $("form-error").hidden = true;
    const selected = keepSelection ? state.selected : 0;
    state.doc = res.doc;
    state.selected = Math.min(selected, Math.max(0, (res.doc.plans || []).length - 1));
    render();
  } catch (e) {
    if (seq === state.seq) { clearResults(t("search_failed")); showError({ error: String(e) }); }
  } finally {
    if (seq === state.seq) { $("submit").disabled = false; delete document.body.dataset.busy; }
  }
}

async function submit(ev) {
  if (ev) ev.preventDefault();
  $("form-error").hidden = true;
  for (const node of document.querySelectorAll(".invalid")) node.classList.remove("invalid");
  let w;
  try {
    w = buildWorkload();
    if (typeof w.model !== "object" && !w.model) throw Object.assign(new Error(t("need_model")), { field: "model" });
  } catch (e) {
    state.workload = null;
    clearResults(t("search_failed"));
    showError({ error: e.message, field: e.field });
    return;
  }
  updateUrl();
  await search(w, false);
}

async function download(url, body, statusNode, fallbackName) {
  statusNode.textContent = t("downloading");
  const r = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json", "Accept-Language": state.lang },
                               body: JSON.stringify(body) });
  if (!r.ok) {
    let err = { error: "HTTP " + r.status };
    try { err = await r.json(); } catch (e) { /* keep the status */ }
    statusNode.textContent = err.error;
    return;
  }
  const blob = await r.blob();
  const m = /filename="([^"]+)"/.exec(r.headers.get("Content-Disposition") || "");
  const a = el("a", { href: URL.createObjectURL(blob), download: m ? m[1] : fallbackName });
  document.body.appendChild(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  statusNode.textContent = t("downloaded") + ": " + a.getAttribute("download");
}

async function downloadBundle() {
  const doc = state.doc;
  if (!doc || !doc.plans.length) return;
  const plan = doc.plans[state.selected];
  $("download").disabled = true;
  try {
    await download("/api/plan?rank=" + encodeURIComponent(plan.rank) + "&lang=" + state.lang, state.workload,
                   $("download-status"), "gpuplan-plan.zip");
  } finally {
    $("download").disabled = false;
  }
}

async function saveWorkload() {
  if (!$("model").value.trim()) { showError({ error: t("need_model"), field: "model" }); return; }
  let w;
  try { w = buildWorkload(); } catch (e) { showError({ error: e.message, field: e.field }); return; }
  await download("/api/workload/yaml", w, $("file-status"), "workload.yaml");
}

async function loadWorkloadFile(ev) {
  const file = ev.target.files && ev.target.files[0];
  ev.target.value = "";
  if (!file) return;
  const status = $("file-status");
  if (file.size > MAX_FILE_BYTES) { status.textContent = t("file_too_big", { kib: MAX_FILE_BYTES / 1024 }); return; }
  const text = await file.text();
  const r = await fetch("/api/workload/parse", { method: "POST", body: text,
                                                 headers: { "Content-Type": "application/yaml", "Accept-Language": state.lang } });
  let doc = null;
  try { doc = await r.json(); } catch (e) { doc = null; }
  if (!r.ok) { showError(doc || { error: "HTTP " + r.status }); status.textContent = ""; return; }
  $("form-error").hidden = true;
  const kept = fillFromWorkload(doc.workload);
  const parts = [t("loaded_workload", { name: file.name })];
  if (kept.length) parts.push(t("kept_keys", { keys: kept.join(", ") }));
  if (typeof doc.workload.model === "object") parts.push(t("inline_model"));
  fillSelectLabels();
  status.textContent = parts.join(" ");
  updateUrl();
}

/* ---------------------------------------------------------------- rendering */
function layoutText(p) {
  const par = p.parallel || {}, rec = p.recipe || {}, srv = p.serving || null;
  const parts = [];
  if (par.tp > 1) parts.push("TP" + par.tp);
  if (par.pp > 1) parts.push("PP" + par.pp);
  if (par.dp > 1) parts.push("DP" + par.dp);
  if (!srv && par.zero) parts.push("ZeRO-" + par.zero);
  if (!srv && par.offload && par.offload !== "none") parts.push(t("offload", { where: par.offload }));
  if (par.quantization && par.quantization !== "none") parts.push(par.quantization);
  const ckpt = rec.checkpointing || par.checkpointing;
  if (!srv && ckpt && ckpt !== "none" && (par.optimizer || p.recipe)) parts.push(t("ckpt", { how: t("ck_" + ckpt) }));
  return parts.join(" · ") || t("one_gpu");
}

function isServing(doc) { return !TRAINING.has((doc.workload || {}).task) && !(doc.workload || {}).dataset; }

/* [amount, per what] : the period goes on the cell's second line, so the amount never wraps. */
function planCost(p) {
  if (p.total_cost !== null && p.total_cost !== undefined) return [fmtMoney(p.total_cost, p.currency), ""];
  if (p.monthly_cost !== null && p.monthly_cost !== undefined) return [fmtMoney(p.monthly_cost, p.currency), nobreak(t("per_month"))];
  if (p.cost_per_billion_tokens !== null && p.cost_per_billion_tokens !== undefined)
    return [fmtMoney(p.cost_per_billion_tokens, p.currency), nobreak(t("per_btok"))];
  return ["–", ""];
}
/* [main line, second line]; a label and its figure stay on one line (nobreak), the two figures may wrap apart. */
function planTime(p, doc) {
  if (isServing(doc)) {
    const s = p.serving || {}, perf = p.performance || {};
    const ttft = s.ttft_p50_s ?? perf.ttft_s, tpot = s.tpot_s ?? perf.tpot_s, load = s.utilization ?? p.utilization;
    return [nobreak("TTFT " + fmtDuration(ttft)), nobreak("TPOT " + fmtDuration(tpot)) + (load != null ? " · " + fmtPct(load) : "")];
  }
  const span = fmtRange((p.intervals || {}).time_s, fmtDuration);
  if (p.time_s !== null && p.time_s !== undefined) return [fmtDuration(p.time_s), span ? t("range80", { coverage: "80%", range: span }) : ""];
  if (p.time_per_billion_tokens_s) return [nobreak(fmtDuration(p.time_per_billion_tokens_s) + " " + t("per_btok")), ""];
  return ["–", ""];
}

/* A price is an estimate when the data says so (a rule-based or guessed price, e.g. spot without a quote,
   or a price borrowed from another region). */
function priceIsEstimate(p) {
  if (p.price_estimated) return true;
  const kind = p.price_kind || (p.price && p.price.kind);
  if (kind) return !["official", "live", "user", "third-party"].includes(kind);
  return !!(p.spot && p.spot.price_estimated);
}
/* Every plan's own price basis, date and age (plan 2's price may be years older than plan 1's):
   "third-party quote, 2023-06-01 (1281 d)"; "your price" for one you imported (`gpuplan catalog import`). */
function priceDated(p) {
  if (!p.price_as_of) return "";
  const basis = p.price_basis && p.price_basis !== "quoted" ? p.price_basis
    : p.price_kind === "user" ? "yours" : p.price_kind === "third-party" ? "third-party" : "official";
  return joinUnits(t("price_dated", { basis: t("pb_" + basis), date: p.price_as_of, days: p.price_age_days ?? "?" }));
}
function priceNote(sel, plans) {
  const parts = [t("prices_from", { region: sel.price_region || sel.region || "–", date: sel.price_as_of || "–" })];
  if (sel.price_region && sel.region && sel.price_region !== sel.region) parts.push(t("proxy_region", { region: sel.region }));
  if (plans.some(priceIsEstimate)) parts.push(t("estimated_note"));
  return parts.join(" · ");
}

/* A list of the server's sentences, each once; "plan N" names a plan of the table, as a button that opens it. */
function fillList(id, items) {
  const ul = $(id);
  ul.replaceChildren();
  for (const s of unique(items)) ul.appendChild(sentenceItem(s));
  const box = $(id + "-box");
  if (box) box.hidden = items.length === 0;
}

const PLAN_REF = /\b(plan|方案) ?(\d+)\b/g;

function sentenceItem(raw) {
  const li = el("li");
  const text = joinUnits(raw);
  const shown = new Map(((state.doc || {}).plans || []).map((p, i) => [String(p.rank), i]));
  let last = 0;
  for (const m of String(text).matchAll(PLAN_REF)) {
    if (!shown.has(m[2])) continue;
    li.append(document.createTextNode(text.slice(last, m.index)));
    const i = shown.get(m[2]);
    const b = el("button", { type: "button", class: "plan-ref", "data-index": i }, m[0]);
    b.addEventListener("click", () => selectRow(i, true));
    li.append(b);
    last = m.index + m[0].length;
  }
  li.append(document.createTextNode(text.slice(last)));
  return li;
}

function detailRow(p, doc, cols) {
  const tr = el("tr", { class: "details", id: "plan-details-" + p.rank });
  const td = el("td", { colspan: String(cols), "data-label": t("details") });
  const dl = el("dl", { class: "facts" });
  for (const [label, value] of planFacts(p, doc)) dl.append(el("dt", null, label), el("dd", null, value));
  td.appendChild(dl);
  tr.appendChild(td);
  return tr;
}

function selectRow(i, focus) {
  state.selected = i;
  render();
  if (focus) { const row = $("plans").querySelector(`tbody tr[data-index="${i}"]`); if (row) row.focus(); }
}

function render() {
  const doc = state.doc;
  $("output").hidden = false;
  const plans = doc.plans || [];
  const stats = doc.search || {};
  $("status").textContent = joinUnits(plans.length
    ? t("found", { n: plans.length, c: stats.candidates ?? "?", s: fmtNum(stats.elapsed_s ?? 0, 2) })
    : t("no_plans"));
  const serving = isServing(doc);
  $("col-time").textContent = t(serving ? "col_latency" : "col_time");
  const tbody = $("plans").querySelector("tbody");
  tbody.replaceChildren();
  plans.forEach((p, i) => {
    const open = i === state.selected;
    // The row is focusable (Tab, arrows; Enter or Space opens it); its state is told by the rank cell's
    // button (aria-expanded on a row is for tree grids only), which a screen reader can also press.
    const tr = el("tr", { "data-rank": p.rank, "data-index": i, tabindex: "0" });
    if (open) tr.classList.add("selected");
    if (p.pareto) tr.classList.add("pareto");
    const est = priceIsEstimate(p);
    const [time, timeSub] = planTime(p, doc);
    const [cost, costSub] = planCost(p);
    const iv = p.intervals || {};
    const costSpan = fmtRange(iv.total_cost || iv.monthly_cost, (x) => fmtMoney(x, p.currency));
    const memHigh = (iv.memory_per_gpu_bytes || [])[1];
    // [column key, main text, second line, class]: the second line keeps the table narrow enough for
    // 1280 px; under 760 px the CSS turns each row into a card labelled by data-label.
    const cells = [["col_rank", String(p.rank)],
                   ["col_instance", p.instance_type + (p.instance_count > 1 ? " × " + p.instance_count : ""), p.region],
                   ["col_gpus", p.gpus_total + " × " + p.gpu, layoutText(p)],
                   ["col_billing", t("b_" + p.billing)],
                   ["col_price", (est ? "~" : "") + fmtMoney(p.price_per_hour, p.currency), priceDated(p), "num"],
                   [serving ? "col_latency" : "col_time", time, timeSub, "num wrap"],
                   ["col_cost", (est ? "~" : "") + cost, [costSub, costSpan ? t("range80", { coverage: "80%", range: costSpan }) : ""].filter(Boolean).join(" · "), "num wrap"],
                   ["col_memory", fmtNum((p.memory_per_gpu_bytes ?? NaN) / GIB, 1) + " / " + fmtGiB(p.capacity_per_gpu_bytes),
                    memHigh ? t("sized_at", { high: fmtGiB(memHigh) }) : "", "num"]];
    for (const [key, text, sub, cls] of cells) {
      const td = el("td", cls ? { class: cls, "data-label": t(key) } : { "data-label": t(key) });
      const val = key === "col_rank"
        ? el("button", { type: "button", class: "val expand", tabindex: "-1", "aria-expanded": String(open),
                         "aria-controls": "plan-details-" + p.rank, "aria-label": t("details") + " " + text }, text)
        : el("span", { class: "val" }, text);
      if (sub) val.appendChild(el("small", key === "col_price" ? { class: est ? "est dated" : "dated" } : null, sub));
      td.appendChild(val);
      tr.appendChild(td);
    }
    tr.addEventListener("click", () => selectRow(i, false));
    tr.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); selectRow(i, true); }
      else if (ev.key === "ArrowDown" && i + 1 < plans.length) { ev.preventDefault(); tbody.querySelector(`tr[data-index="${i + 1}"]`).focus(); }
      else if (ev.key === "ArrowUp" && i > 0) { ev.preventDefault(); tbody.querySelector(`tr[data-index="${i - 1}"]`).focus(); }
    });
    tbody.appendChild(tr);
    if (open) tbody.appendChild(detailRow(p, doc, cells.length));
  });
  $("plans").hidden = plans.length === 0;
  $("download").hidden = plans.length === 0;
  const sel = plans[state.selected];
  $("headline").textContent = sel && sel.why && sel.why.length ? joinUnits(sel.why[0]) : "";   // the rest of why[] is listed below
  $("ranking-basis").textContent = doc.ranking_basis ? joinUnits(t("ranking_basis", { basis: doc.ranking_basis })) : "";
  $("ranking-basis").hidden = !doc.ranking_basis;
  $("price-note").textContent = sel ? joinUnits(priceNote(sel, plans)) : "";
  const headline = sel && sel.why && sel.why.length ? sel.why[0] : null;
  fillList("why", sel ? unique(sel.why.slice(1).concat((sel.recipe || {}).why || [], sel.warnings || []))
    .filter((x) => x !== headline) : []);
  const whyNot = (doc.why_not || []).slice();
  for (const r of (doc.rejected || []).slice(0, 12)) whyNot.push(r.instance_type + " (" + t("c_" + r.code) + "): " + r.reason);
  fillList("whynot", whyNot);
  fillList("assumptions", doc.assumptions || []);
  fillList("warnings", doc.warnings || []);
  const binding = $("binding");
  binding.hidden = plans.length > 0;
  const bl = binding.querySelector("ul");
  bl.replaceChildren();
  for (const b of doc.binding_constraints || []) bl.appendChild(el("li", null, joinUnits(b.text || JSON.stringify(b))));
  drawCharts(doc, sel);
}

/* ---------------------------------------------------------------- start */
async function start() {
  const params = new URLSearchParams(location.search);
  state.lang = params.get("lang") === "zh" ? "zh" : "en";
  try {
    // Both languages are ready before the first paint, so the page's own labels switch at once.
    const [, zh] = await Promise.all([loadOptions(), getJson("/api/messages?lang=zh")]);
    state.catalogs.zh = zh.messages || {};
  } catch (e) {
    showError({ error: String(e) });
    return;
  }
  const autorun = fillFromUrl();
  toggleTaskFields();
  applyLang(state.lang, false);
  $("task").addEventListener("change", toggleTaskFields);
  $("mode").addEventListener("change", toggleTaskFields);
  $("cloud").addEventListener("change", () => { fillRegions(); fillSelectLabels(); });
  for (const id of ["dataset_tokens", "samples", "deadline_hours", "epochs", "ttft_ms", "tpot_ms"]) $(id).addEventListener("input", inputNotes);
  $("model").addEventListener("input", showModelList);
  $("model").addEventListener("focus", showModelList);
  $("model").addEventListener("keydown", modelKeys);
  $("model").addEventListener("blur", () => setTimeout(closeModelList, 150));
  $("workload-form").addEventListener("submit", submit);
  $("lang-toggle").addEventListener("click", () => applyLang(state.lang === "zh" ? "en" : "zh", true));
  $("download").addEventListener("click", downloadBundle);
  $("save-workload").addEventListener("click", saveWorkload);
  $("load-workload").addEventListener("change", loadWorkloadFile);
  $("share").addEventListener("click", async () => {
    updateUrl();
    try { await navigator.clipboard.writeText(location.href); } catch (e) { /* clipboard needs permission */ }
    $("share").textContent = t("copied");
    setTimeout(() => { $("share").textContent = t("share"); }, 1500);
  });
  let width = window.innerWidth;
  window.addEventListener("resize", () => {
    if (state.doc && Math.abs(window.innerWidth - width) > 20) { width = window.innerWidth; drawCharts(state.doc, state.doc.plans[state.selected]); }
  });
  document.body.dataset.ready = "true";
  if (autorun) submit();
}

document.addEventListener("DOMContentLoaded", start);

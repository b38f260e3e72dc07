/* gpuplan page: vanilla JS, no dependencies, nothing loaded from elsewhere.
 * The form builds a workload (the same keys as a workload file), POSTs it to /api/recommend,
 * and draws the answer: ranked plans, the memory breakdown and the cost/time chart as inline
 * SVG, the assumptions and the "why not" list. The URL's query string mirrors the form, so a
 * result can be shared. Every server text is inserted with textContent (never as HTML). */
"use strict";

/* The page's text: key -> English msgid, marked N_ for Babel. Translations come from the gettext
 * catalog (GET /api/messages?lang=zh), the same .po as the command line. */
const N_ = (s) => s;
const MSG = {
  tagline: N_("GPU instance planner"),
  api_docs: N_("API"),
  sec_model: N_("Model and job"),
  model: N_("Model"),
  task: N_("Task"),
  objective: N_("Objective"),
  precision: N_("Precision"),
  quantization: N_("Quantization"),
  sec_shape: N_("Lengths and batch"),
  seq_len: N_("Sequence length"),
  batch_size: N_("Micro-batch per GPU"),
  prompt_tokens: N_("Prompt tokens"),
  output_tokens: N_("Output tokens"),
  concurrency: N_("Concurrent sequences"),
  requests_per_s: N_("Requests per second"),
  dataset_tokens: N_("Dataset tokens"),
  epochs: N_("Epochs"),
  sec_constraints: N_("Constraints"),
  deadline_hours: N_("Deadline (hours)"),
  budget: N_("Budget"),
  region: N_("Region"),
  billing: N_("Billing"),
  submit: N_("Find plans"),
  share: N_("Copy link"),
  copied: N_("Link copied"),
  intro: N_("Describe the job on the left and press “Find plans”."),
  col_rank: N_("#"),
  col_instance: N_("Instance"),
  col_gpus: N_("GPUs"),
  col_layout: N_("Layout"),
  col_billing: N_("Billing"),
  col_region: N_("Region"),
  col_price: N_("Price / hour"),
  col_time: N_("Time"),
  col_cost: N_("Cost"),
  col_memory: N_("Memory / GPU"),
  download: N_("Download plan bundle (zip)"),
  downloading: N_("Building the bundle…"),
  downloaded: N_("Saved"),
  binding: N_("What stops every plan"),
  chart_memory: N_("Memory per GPU (selected plan)"),
  chart_pareto: N_("Cost versus time (Pareto front)"),
  why: N_("Why this plan"),
  why_not: N_("Why not the others"),
  assumptions: N_("Assumptions"),
  warnings: N_("Warnings"),
  footer: N_("Prices carry their date and source; check them before you buy."),
  any_region: N_("any region"),
  working: N_("Searching…"),
  no_plans: N_("No plan satisfies every constraint."),
  found: N_("{n} plans shown; {c} candidates searched in {s} s."),
  need_model: N_("Choose a model first."),
  capacity: N_("capacity"),
  per_month: N_("/ month"),
  job: N_("job"),
  latency_s: N_("latency (s)"),
  hours: N_("hours"),
  job_time_h: N_("job time (hours)"),
  total_cost: N_("total cost"),
  monthly_cost: N_("monthly cost"),
  h_per_btok: N_("hours per 1B tokens"),
  cost_per_btok: N_("cost per 1B tokens"),
  no_points: N_("No plan has both a price and a time to place on this chart."),
  replicas: N_("replicas"),
  none: N_("none"),
  t_inference: N_("inference (serving)"),
  t_pretrain: N_("pre-training"),
  t_full: N_("full fine-tuning"),
  t_lora: N_("LoRA"),
  t_qlora: N_("QLoRA"),
  o_cost: N_("lowest cost"),
  o_time: N_("fastest"),
  o_balanced: N_("balanced"),
  b_payg: N_("pay-as-you-go"),
  b_spot: N_("spot"),
  b_subscription: N_("subscription"),
  weights: N_("weights"),
  gradients: N_("gradients"),
  optimizer: N_("optimizer states"),
  activations: N_("activations"),
  kv_cache: N_("KV cache"),
  adapters: N_("adapters (LoRA)"),
  logits: N_("logits"),
  overhead: N_("framework/CUDA overhead"),
  params_b: N_("{p}B params"),
  error_prefix: N_("Error"),
  one_gpu: N_("1 GPU"),
  estimated: N_("estimated"),
  prices_from: N_("Prices: {region}, as of {date}"),
  proxy_region: N_("used as a proxy for {region}"),
  estimated_note: N_("~ marks an estimated price (no quote found): check it in the console"),
};

const COLOURS = { weights: "#0072B2", gradients: "#E69F00", optimizer: "#009E73", activations: "#CC79A7",
                  kv_cache: "#56B4E9", adapters: "#F0E442", logits: "#D55E00", overhead: "#999999" };
const GIB = 1024 ** 3;
const SVGNS = "http://www.w3.org/2000/svg";
const TRAINING = new Set(["pretrain", "full", "lora", "qlora"]);
const URL_KEYS = ["model", "task", "objective", "precision", "quantization", "seq_len", "batch_size", "prompt_tokens",
                  "output_tokens", "requests_per_s", "dataset_tokens", "epochs", "deadline_hours", "budget",
                  "currency", "region", "billing"];

const state = { lang: "en", catalogs: {}, models: [], options: null, doc: null, workload: null, selected: 0, activeIndex: -1 };
const $ = (id) => document.getElementById(id);

function t(key, vars) {
  const msgid = MSG[key] || key;
  let s = (state.lang !== "en" && state.catalogs[state.lang] && state.catalogs[state.lang][msgid]) || msgid;
  if (vars) for (const [k, v] of Object.entries(vars)) s = s.replace("{" + k + "}", String(v));
  return s;
}

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  if (attrs) for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function svgEl(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  if (attrs) for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

/* ---------------------------------------------------------------- formatting */
function fmtNum(x, digits) {
  if (x === null || x === undefined || !isFinite(x)) return "–";
  return Number(x).toLocaleString(state.lang === "zh" ? "zh-CN" : "en-US",
                                   { maximumFractionDigits: digits === undefined ? 2 : digits });
}
function fmtMoney(x, cur) { return x === null || x === undefined ? "–" : (cur || "") + " " + fmtNum(x, x < 100 ? 2 : 0); }
function fmtGiB(b) { return b === null || b === undefined ? "–" : fmtNum(b / GIB, 1) + " GiB"; }
function fmtDuration(s) {
  if (s === null || s === undefined || !isFinite(s)) return "–";
  if (s < 120) return fmtNum(s, 1) + " s";
  if (s < 3 * 3600) return fmtNum(s / 60, 0) + " min";
  if (s < 72 * 3600) return fmtNum(s / 3600, 1) + " h";
  return fmtNum(s / 86400, 1) + " d";
}
function layoutText(p) {
  const par = p.parallel || {};
  const parts = [];
  if (par.tp > 1) parts.push("TP" + par.tp);
  if (par.pp > 1) parts.push("PP" + par.pp);
  if (par.dp > 1) parts.push("DP" + par.dp);
  if (par.zero) parts.push("ZeRO-" + par.zero);
  if (par.offload && par.offload !== "none") parts.push("offload " + par.offload);
  if (par.quantization && par.quantization !== "none") parts.push(par.quantization);
  if (par.checkpointing && par.checkpointing !== "none" && par.optimizer) parts.push("ckpt");
  return parts.join(" · ") || t("one_gpu");
}

/* ---------------------------------------------------------------- i18n */
function applyLang(lang) {
  state.lang = lang === "zh" ? "zh" : "en";
  document.documentElement.lang = state.lang === "zh" ? "zh-CN" : "en";
  for (const node of document.querySelectorAll("[data-i18n]")) node.textContent = t(node.dataset.i18n);
  $("lang-toggle").textContent = state.lang === "zh" ? "English" : "中文";
  fillSelectLabels();
  if (state.doc) render();
  updateUrl();
}

function fillSelectLabels() {
  for (const opt of $("task").options) opt.textContent = t("t_" + opt.value);
  for (const opt of $("objective").options) opt.textContent = t("o_" + opt.value);
  const anyRegion = $("region").querySelector('option[value=""]');
  if (anyRegion) anyRegion.textContent = t("any_region");
  for (const lab of $("billing").querySelectorAll("label")) lab.lastChild.textContent = " " + t("b_" + lab.dataset.value);
}

/* ---------------------------------------------------------------- form setup */
function setOptions(select, values, labelOf) {
  select.replaceChildren();
  for (const v of values) select.appendChild(el("option", { value: v }, labelOf ? labelOf(v) : v));
}

async function loadOptions() {
  const [opts, models] = await Promise.all([getJson("/api/options"), getJson("/api/models?brief=true")]);
  state.options = opts;
  state.models = models.models;
  setOptions($("task"), opts.tasks, (v) => t("t_" + v));
  $("task").value = "lora";
  setOptions($("objective"), opts.objectives, (v) => t("o_" + v));
  setOptions($("precision"), opts.precisions);
  $("precision").value = "bf16";
  setOptions($("quantization"), opts.quantizations);
  setOptions($("currency"), opts.currencies);
  setOptions($("region"), ["", ...opts.regions], (v) => (v ? v : t("any_region")));
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

async function getJson(url) {
  const r = await fetch(url, { headers: { Accept: "application/json" } });
  if (!r.ok) throw new Error(url + ": HTTP " + r.status);
  return r.json();
}

function toggleTaskFields() {
  const training = TRAINING.has($("task").value);
  for (const node of document.querySelectorAll(".train-only")) node.hidden = !training;
  for (const node of document.querySelectorAll(".infer-only")) node.hidden = training;
}

/* ---------------------------------------------------------------- model picker */
function modelMatches(query) {
  const q = query.trim().toLowerCase();
  const scored = [];
  for (const m of state.models) {
    const names = [m.id, ...(m.aliases || []), m.modelscope_id || ""].map((s) => s.toLowerCase());
    let score = -1;
    if (!q) score = 0;
    else if (names.some((n) => n === q)) score = 3;
    else if (names.some((n) => n.startsWith(q) || n.split("/").pop().startsWith(q))) score = 2;
    else if (names.some((n) => n.includes(q))) score = 1;
    if (score >= 0) scored.push([score, m]);
  }
  scored.sort((a, b) => b[0] - a[0] || a[1].id.localeCompare(b[1].id));
  return scored.slice(0, 12).map((x) => x[1]);
}

function showModelList() {
  const list = $("model-list");
  const hits = modelMatches($("model").value);
  list.replaceChildren();
  state.activeIndex = -1;
  for (const m of hits) {
    const li = el("li", { role: "option", "data-id": m.id, "aria-selected": "false" });
    li.append(el("span", null, m.id),
              el("span", { class: "params" }, t("params_b", { p: fmtNum(m.params_total / 1e9, 1) })));
    li.addEventListener("mousedown", (ev) => { ev.preventDefault(); chooseModel(m.id); });
    list.appendChild(li);
  }
  list.hidden = hits.length === 0;
  $("model").setAttribute("aria-expanded", String(!list.hidden));
}

function chooseModel(id) {
  $("model").value = id;
  $("model-list").hidden = true;
  $("model").setAttribute("aria-expanded", "false");
  $("model").classList.remove("invalid");
}

function modelKeys(ev) {
  const list = $("model-list");
  const items = [...list.querySelectorAll("li")];
  if (list.hidden || !items.length) return;
  if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
    ev.preventDefault();
    state.activeIndex = (state.activeIndex + (ev.key === "ArrowDown" ? 1 : items.length - 1)) % items.length;
    items.forEach((li, i) => li.setAttribute("aria-selected", String(i === state.activeIndex)));
    items[state.activeIndex].scrollIntoView({ block: "nearest" });
  } else if (ev.key === "Enter" && state.activeIndex >= 0) {
    ev.preventDefault();
    chooseModel(items[state.activeIndex].dataset.id);
  } else if (ev.key === "Escape") {
    list.hidden = true;
  }
}

/* ---------------------------------------------------------------- workload <-> form <-> URL */
function num(id) {
  const raw = $(id).value.trim();
  if (!raw) return undefined;
  const v = Number(raw);
  return Number.isFinite(v) ? v : raw;   // the server names the field if it is not a number
}

function buildWorkload() {
  const task = $("task").value;
  const w = { model: $("model").value.trim(), task, objective: $("objective").value,
              precision: $("precision").value, quantization: $("quantization").value };
  const training = TRAINING.has(task);
  if (training) {
    if (num("seq_len") !== undefined) w.seq_len = num("seq_len");
    if (num("batch_size") !== undefined) w.batch_size = num("batch_size");
    const tokens = num("dataset_tokens");
    if (tokens !== undefined) {
      w.dataset = { tokens };
      if (num("epochs") !== undefined) w.dataset.epochs = num("epochs");
    }
  } else {
    if (num("prompt_tokens") !== undefined) w.prompt_tokens = num("prompt_tokens");
    if (num("output_tokens") !== undefined) w.output_tokens = num("output_tokens");
    if (num("concurrency") !== undefined) w.batch_size = num("concurrency");
    if (num("requests_per_s") !== undefined) w.serving = { requests_per_s: num("requests_per_s") };
  }
  const c = {};
  if (training && num("deadline_hours") !== undefined) c.deadline_hours = num("deadline_hours");
  if (num("budget") !== undefined) { c.budget = num("budget"); }
  if ($("currency").value !== "CNY") c.currency = $("currency").value;
  if ($("region").value) c.regions = [$("region").value];
  const billing = [...document.querySelectorAll('#billing input:checked')].map((x) => x.value);
  if (billing.length && billing.length < $("billing").querySelectorAll("input").length) c.billing = billing;
  if (Object.keys(c).length) w.constraints = c;
  if (w.quantization === "none" && task === "qlora") delete w.quantization;
  return w;
}

function formParams() {
  const p = new URLSearchParams();
  const training = TRAINING.has($("task").value);
  for (const key of URL_KEYS) {
    let v;
    if (key === "billing") {
      const all = $("billing").querySelectorAll("input");
      const on = [...all].filter((x) => x.checked).map((x) => x.value);
      v = on.length && on.length < all.length ? on.join(",") : "";
    } else if (key === "batch_size") {
      v = training ? $("batch_size").value : $("concurrency").value;
    } else {
      v = $(key).value;
    }
    if (v && !(key === "currency" && v === "CNY")) p.set(key, v.trim());
  }
  if (state.lang === "zh") p.set("lang", "zh");
  return p;
}

function updateUrl() {
  const qs = formParams().toString();
  history.replaceState(null, "", qs ? "?" + qs : location.pathname);
}

function fillFromUrl() {
  const p = new URLSearchParams(location.search);
  for (const key of URL_KEYS) {
    if (!p.has(key)) continue;
    const v = p.get(key);
    if (key === "billing") {
      const on = new Set(v.split(","));
      for (const cb of $("billing").querySelectorAll("input")) cb.checked = on.has(cb.value);
    } else if (key === "batch_size") {
      $("batch_size").value = v; $("concurrency").value = v;
    } else if ($(key)) {
      const node = $(key);
      if (node.tagName === "SELECT" && ![...node.options].some((o) => o.value === v)) continue;
      node.value = v;
    }
  }
  return p.has("model");
}

/* ---------------------------------------------------------------- requests */
function showError(err) {
  for (const node of document.querySelectorAll(".invalid")) node.classList.remove("invalid");
  const box = $("form-error");
  box.hidden = false;
  box.textContent = t("error_prefix") + ": " + err.error + (err.hint ? " — " + err.hint : "");
  const field = (err.field || "").split(".");
  const map = { model: "model", task: "task", precision: "precision", quantization: "quantization",
                seq_len: "seq_len", prompt_tokens: "prompt_tokens", output_tokens: "output_tokens",
                dataset: "dataset_tokens", serving: "requests_per_s", deadline_hours: "deadline_hours",
                budget: "budget", regions: "region", billing: "billing",
                batch_size: TRAINING.has($("task").value) ? "batch_size" : "concurrency" };
  const target = map[field[0] === "constraints" ? field[1] : field[0]];
  if (target && $(target)) $(target).classList.add("invalid");
}

async function postJson(url, body) {
  // The API answers errors (and the text it makes) in the page's language; JSON keys never change.
  const r = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json", "Accept-Language": state.lang },
                               body: JSON.stringify(body) });
  let doc = null;
  try { doc = await r.clone().json(); } catch (e) { doc = null; }
  return { ok: r.ok, status: r.status, doc, response: r };
}

async function submit(ev) {
  if (ev) ev.preventDefault();
  $("form-error").hidden = true;
  for (const node of document.querySelectorAll(".invalid")) node.classList.remove("invalid");
  if (!$("model").value.trim()) { showError({ error: t("need_model"), field: "model" }); return; }
  const w = buildWorkload();
  updateUrl();
  $("submit").disabled = true;
  $("status").hidden = false;
  $("status").textContent = t("working");
  try {
    const res = await postJson("/api/recommend?top=8", w);
    if (!res.ok) {
      showError(res.doc || { error: "HTTP " + res.status });
      $("status").textContent = t("intro");
      return;
    }
    state.doc = res.doc;
    state.workload = w;
    state.selected = 0;
    render();
  } catch (e) {
    showError({ error: String(e) });
  } finally {
    $("submit").disabled = false;
  }
}

async function downloadBundle() {
  const doc = state.doc;
  if (!doc || !doc.plans.length) return;
  const plan = doc.plans[state.selected];
  $("download").disabled = true;
  $("download-status").textContent = t("downloading");
  try {
    const r = await fetch("/api/plan?rank=" + encodeURIComponent(plan.rank) + "&lang=" + state.lang,
                          { method: "POST", headers: { "Content-Type": "application/json" },
                            body: JSON.stringify(state.workload) });
    if (!r.ok) {
      let err = { error: "HTTP " + r.status };
      try { err = await r.json(); } catch (e) { /* keep the status */ }
      $("download-status").textContent = err.error;
      return;
    }
    const blob = await r.blob();
    const cd = r.headers.get("Content-Disposition") || "";
    const m = /filename="([^"]+)"/.exec(cd);
    const a = el("a", { href: URL.createObjectURL(blob), download: m ? m[1] : "gpuplan-plan.zip" });
    document.body.appendChild(a);
    a.click();
    setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
    $("download-status").textContent = t("downloaded") + ": " + a.getAttribute("download");
  } finally {
    $("download").disabled = false;
  }
}

/* ---------------------------------------------------------------- rendering */
function planCost(p) {
  if (p.total_cost !== null && p.total_cost !== undefined) return fmtMoney(p.total_cost, p.currency);
  if (p.monthly_cost !== null && p.monthly_cost !== undefined) return fmtMoney(p.monthly_cost, p.currency) + " " + t("per_month");
  if (p.cost_per_billion_tokens !== null && p.cost_per_billion_tokens !== undefined)
    return fmtMoney(p.cost_per_billion_tokens, p.currency) + " / 1B tok";
  return "–";
}
function planTime(p) {
  if (p.time_s !== null && p.time_s !== undefined) return fmtDuration(p.time_s);
  if (p.time_per_billion_tokens_s) return fmtDuration(p.time_per_billion_tokens_s) + " / 1B tok";
  if (p.replicas) return p.replicas + " " + t("replicas");
  return "–";
}

/* A price is an estimate when the data says so (a rule-based or guessed price, e.g. spot without a quote). */
function priceIsEstimate(p) {
  const kind = p.price_kind || (p.price && p.price.kind);
  if (kind) return !["official", "live", "user", "third-party"].includes(kind);
  return !!(p.spot && p.spot.price_estimated);
}
function priceNote(sel, plans) {
  const parts = [t("prices_from", { region: sel.price_region || sel.region || "–", date: sel.price_as_of || "–" })];
  if (sel.price_region && sel.region && sel.price_region !== sel.region) parts.push(t("proxy_region", { region: sel.region }));
  if (plans.some(priceIsEstimate)) parts.push(t("estimated_note"));
  return parts.join(" · ");
}

function fillList(id, items) {
  const ul = $(id);
  ul.replaceChildren();
  for (const s of items) ul.appendChild(el("li", null, s));
  const box = $(id + "-box");
  if (box) box.hidden = items.length === 0;
}

function render() {
  const doc = state.doc;
  $("output").hidden = false;
  const plans = doc.plans || [];
  const stats = doc.search || {};
  $("status").textContent = plans.length
    ? t("found", { n: plans.length, c: stats.candidates ?? "?", s: fmtNum(stats.elapsed_s ?? 0, 2) })
    : t("no_plans");
  const tbody = $("plans").querySelector("tbody");
  tbody.replaceChildren();
  plans.forEach((p, i) => {
    const tr = el("tr", { "data-rank": p.rank });
    if (i === state.selected) tr.classList.add("selected");
    if (p.pareto) tr.classList.add("pareto");
    const est = priceIsEstimate(p);
    // [column key, main text, second line, class]: the second line keeps the table narrow enough for
    // 1280 px; under 760 px the CSS turns each row into a card labelled by data-label.
    const cells = [["col_rank", String(p.rank)],
                   ["col_instance", p.instance_type + (p.instance_count > 1 ? " × " + p.instance_count : ""), p.region],
                   ["col_gpus", p.gpus_total + " × " + p.gpu, layoutText(p)],
                   ["col_billing", t("b_" + p.billing)],
                   ["col_price", (est ? "~" : "") + fmtMoney(p.price_per_hour, p.currency), est ? t("estimated") : "", "num"],
                   ["col_time", planTime(p), "", "num wrap"], ["col_cost", (est ? "~" : "") + planCost(p), "", "num wrap"],
                   ["col_memory", fmtNum((p.memory_per_gpu_bytes ?? NaN) / GIB, 1) + " / " + fmtGiB(p.capacity_per_gpu_bytes), "", "num"]];
    for (const [key, text, sub, cls] of cells) {
      const td = el("td", cls ? { class: cls, "data-label": t(key) } : { "data-label": t(key) });
      const val = el("span", { class: "val" }, text);
      if (sub) val.appendChild(el("small", key === "col_price" ? { class: "est" } : null, sub));
      td.appendChild(val);
      tr.appendChild(td);
    }
    tr.addEventListener("click", () => { state.selected = i; render(); });
    tbody.appendChild(tr);
  });
  $("plans").hidden = plans.length === 0;
  $("download").hidden = plans.length === 0;
  const sel = plans[state.selected];
  $("headline").textContent = sel && sel.why && sel.why.length ? sel.why[0] : "";
  $("price-note").textContent = sel ? priceNote(sel, plans) : "";
  fillList("why", sel ? sel.why.slice(1).concat(sel.warnings || []) : []);
  const whyNot = (doc.why_not || []).slice();
  for (const r of (doc.rejected || []).slice(0, 12)) whyNot.push(r.instance_type + " (" + r.code + "): " + r.reason);
  fillList("whynot", whyNot);
  fillList("assumptions", doc.assumptions || []);
  fillList("warnings", doc.warnings || []);
  const binding = $("binding");
  binding.hidden = plans.length > 0;
  const bl = binding.querySelector("ul");
  bl.replaceChildren();
  for (const b of doc.binding_constraints || []) bl.appendChild(el("li", null, b.text || JSON.stringify(b)));
  drawMemory(sel);
  drawPareto(doc, sel);
}

function drawMemory(plan) {
  const host = $("memory-chart");
  host.replaceChildren();
  const W = 460, left = 10, barW = W - 20, barY = 36, barH = 30;
  const comps = plan ? Object.entries(plan.memory_components || {}).filter(([, v]) => v > 0) : [];
  const cols = comps.some(([k, v]) => (t(k) + fmtGiB(v)).length > 26) ? 1 : 2;
  const rows = Math.max(1, Math.ceil(comps.length / cols));
  const H = barY + barH + 34 + rows * 20;
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, id: "memory-svg", role: "img" });
  const total = comps.reduce((a, [, v]) => a + v, 0);
  const cap = plan ? plan.capacity_per_gpu_bytes : 0;
  const scale = Math.max(total, cap || 0, 1);
  svg.appendChild(svgEl("title", null, t("chart_memory")));
  svg.appendChild(svgEl("text", { x: left, y: 22, "font-weight": "bold" },
    plan ? `${plan.gpu}: ${fmtGiB(plan.memory_per_gpu_bytes)} / ${fmtGiB(cap)} (${t("capacity")})` : t("no_points")));
  let x = left;
  for (const [k, v] of comps) {
    const w = (barW * v) / scale;
    const r = svgEl("rect", { x: x.toFixed(1), y: barY, width: w.toFixed(1), height: barH, fill: COLOURS[k] || "#666",
                              "data-component": k });
    r.appendChild(svgEl("title", null, `${t(k)}: ${fmtGiB(v)}`));
    svg.appendChild(r);
    x += w;
  }
  if (cap) {
    const cx = left + (barW * cap) / scale;
    svg.appendChild(svgEl("line", { x1: cx.toFixed(1), y1: barY - 8, x2: cx.toFixed(1), y2: barY + barH + 8,
                                    stroke: "#000", "stroke-width": 2, "stroke-dasharray": "4 2" }));
  }
  comps.forEach(([k, v], i) => {
    const lx = left + (i % cols) * (barW / 2), ly = barY + barH + 26 + Math.floor(i / cols) * 20;
    svg.appendChild(svgEl("rect", { x: lx, y: ly - 10, width: 11, height: 11, fill: COLOURS[k] || "#666" }));
    svg.appendChild(svgEl("text", { x: lx + 16, y: ly }, `${t(k)} ${fmtGiB(v)}`));
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

function planPoint(doc, p) {
  const training = TRAINING.has((doc.workload || {}).task);
  if (training && p.time_s !== null && p.total_cost !== null) return [p.time_s, p.total_cost];
  if (training && p.time_per_billion_tokens_s && p.cost_per_billion_tokens !== null)
    return [p.time_per_billion_tokens_s, p.cost_per_billion_tokens];
  const hit = (doc.pareto || []).find((q) => q.instance_type === p.instance_type && q.instance_count === p.instance_count
                                           && q.billing === p.billing && q.region === p.region);
  return hit && hit.cost !== null && hit.time_s !== null ? [hit.time_s, hit.cost] : null;
}

/* 0 and 4-6 round steps (1, 2, 2.5 or 5 x 10^k) covering max: tick labels read as round numbers. */
function niceTicks(max) {
  if (!(max > 0) || !isFinite(max)) return [0, 1];
  const raw = max / 4, mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((v) => v >= raw);
  const n = Math.ceil(max / step - 1e-9);
  return Array.from({ length: n + 1 }, (_, i) => +(i * step).toPrecision(12));
}
function fmtTick(v) { return fmtNum(v, v !== 0 && Math.abs(v) < 1 ? 3 : v < 10 ? 1 : 0); }

function drawPareto(doc, sel) {
  const host = $("pareto-chart");
  host.replaceChildren();
  const W = 480, H = 330, ml = 64, mr = 14, mt = 16, mb = 46, pw = W - ml - mr, ph = H - mt - mb;
  const axes = paretoAxes(doc);
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, id: "pareto-svg", role: "img" });
  svg.appendChild(svgEl("title", null, t("chart_pareto")));
  svg.appendChild(svgEl("rect", { x: ml, y: mt, width: pw, height: ph, fill: "none", stroke: "#000" }));
  const front = (doc.pareto || []).filter((q) => q.cost !== null && q.time_s !== null)
    .map((q) => ({ x: q.time_s * axes.xs, y: q.cost, label: `${q.instance_type} × ${q.instance_count}, ${t("b_" + q.billing)}`,
                   front: true, key: `${q.instance_type}|${q.instance_count}|${q.billing}|${q.region}` }));
  const keys = new Set(front.map((q) => q.key));
  const others = [];
  (doc.plans || []).forEach((p) => {
    const pt = planPoint(doc, p);
    const key = `${p.instance_type}|${p.instance_count}|${p.billing}|${p.region}`;
    if (pt && !keys.has(key)) others.push({ x: pt[0] * axes.xs, y: pt[1], label: `#${p.rank} ${p.instance_type}`, front: false, key });
  });
  const pts = front.concat(others).filter((q) => isFinite(q.x) && isFinite(q.y));
  if (!pts.length) {
    svg.appendChild(svgEl("text", { x: ml + pw / 2, y: mt + ph / 2, "text-anchor": "middle", class: "empty" }, t("no_points")));
    host.appendChild(svg);
    return;
  }
  const xt = niceTicks(Math.max(...pts.map((q) => q.x))), yt = niceTicks(Math.max(...pts.map((q) => q.y)));
  const x1 = xt[xt.length - 1], y1 = yt[yt.length - 1];
  const sx = (v) => ml + (pw * v) / x1, sy = (v) => mt + ph - (ph * v) / y1;
  for (const xv of xt) {
    svg.appendChild(svgEl("text", { x: sx(xv), y: mt + ph + 16, "text-anchor": "middle", class: "tick" }, fmtTick(xv)));
  }
  for (const yv of yt) {
    svg.appendChild(svgEl("text", { x: ml - 6, y: sy(yv) + 4, "text-anchor": "end", class: "tick" }, fmtTick(yv)));
    if (yv > 0) svg.appendChild(svgEl("line", { x1: ml, x2: ml + pw, y1: sy(yv), y2: sy(yv), stroke: "#eee" }));
  }
  svg.appendChild(svgEl("text", { x: ml + pw / 2, y: H - 10, "text-anchor": "middle" }, axes.x));
  svg.appendChild(svgEl("text", { x: 16, y: mt + ph / 2, "text-anchor": "middle",
                                  transform: `rotate(-90 16 ${mt + ph / 2})` }, axes.y));
  const line = front.slice().sort((a, b) => a.x - b.x || a.y - b.y);
  if (line.length > 1) {
    svg.appendChild(svgEl("polyline", { points: line.map((q) => `${sx(q.x).toFixed(1)},${sy(q.y).toFixed(1)}`).join(" "),
                                        fill: "none", stroke: "#D55E00", "stroke-width": 1.5, class: "front" }));
  }
  const selKey = sel ? `${sel.instance_type}|${sel.instance_count}|${sel.billing}|${sel.region}` : "";
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

/* ---------------------------------------------------------------- start */
async function start() {
  const params = new URLSearchParams(location.search);
  state.lang = params.get("lang") === "zh" ? "zh" : "en";
  try {
    // Both languages are ready before the first paint, so the language toggle switches at once.
    const [, zh] = await Promise.all([loadOptions(), getJson("/api/messages?lang=zh")]);
    state.catalogs.zh = zh.messages || {};
  } catch (e) {
    showError({ error: String(e) });
    return;
  }
  const autorun = fillFromUrl();
  toggleTaskFields();
  applyLang(state.lang);
  $("task").addEventListener("change", toggleTaskFields);
  $("model").addEventListener("input", showModelList);
  $("model").addEventListener("focus", showModelList);
  $("model").addEventListener("keydown", modelKeys);
  $("model").addEventListener("blur", () => setTimeout(() => { $("model-list").hidden = true; }, 150));
  $("workload-form").addEventListener("submit", submit);
  $("lang-toggle").addEventListener("click", () => applyLang(state.lang === "zh" ? "en" : "zh"));
  $("download").addEventListener("click", downloadBundle);
  $("share").addEventListener("click", async () => {
    updateUrl();
    try { await navigator.clipboard.writeText(location.href); } catch (e) { /* clipboard needs permission */ }
    $("share").textContent = t("copied");
    setTimeout(() => { $("share").textContent = t("share"); }, 1500);
  });
  document.body.dataset.ready = "true";
  if (autorun) submit();
}

document.addEventListener("DOMContentLoaded", start);

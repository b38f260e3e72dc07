/* gpuplan page: the form <-> workload <-> URL, the model picker (an ARIA combobox), notes next to
 * inputs the search will ignore, and the workload file (download as YAML, load a YAML/JSON file). */
"use strict";

import { $, TRAINING, el, fmtNum, state, t } from "./util.js";

export const URL_KEYS = ["model", "task", "objective", "precision", "quantization", "seq_len", "batch_size", "prompt_tokens",
                         "output_tokens", "requests_per_s", "ttft_ms", "tpot_ms", "dataset_tokens", "epochs",
                         "deadline_hours", "budget", "currency", "region", "billing"];
export const MAX_FILE_BYTES = 64 * 1024;   // the API's body limit

export function toggleTaskFields() {
  const training = TRAINING.has($("task").value);
  for (const node of document.querySelectorAll(".train-only")) node.hidden = !training;
  for (const node of document.querySelectorAll(".infer-only")) node.hidden = training;
  inputNotes();
}

/* Notes next to inputs that the search would ignore (and why), in the page's language. */
export function inputNotes() {
  const training = TRAINING.has($("task").value);
  const noData = !$("dataset_tokens").value.trim();
  const notes = { deadline_hours: training && noData && $("deadline_hours").value.trim() ? t("deadline_ignored") : "",
                  epochs: training && noData && $("epochs").value.trim() ? t("epochs_ignored") : "",
                  ttft_ms: !training && ($("ttft_ms").value.trim() || $("tpot_ms").value.trim()) ? t("sla_note") : "" };
  for (const [id, text] of Object.entries(notes)) {
    const note = $(id + "-note");
    note.textContent = text;
    note.hidden = !text;
    note.classList.toggle("warn", id !== "ttft_ms");
  }
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

function setExpanded(open) {
  $("model-list").hidden = !open;
  $("model").setAttribute("aria-expanded", String(open));
  if (!open) $("model").removeAttribute("aria-activedescendant");
}

export function showModelList() {
  const list = $("model-list");
  const hits = modelMatches($("model").value);
  list.replaceChildren();
  state.activeIndex = -1;
  hits.forEach((m, i) => {
    const li = el("li", { role: "option", id: "model-opt-" + i, "data-id": m.id, "aria-selected": "false" });
    li.append(el("span", null, m.id),
              el("span", { class: "params" }, t("params_b", { p: fmtNum(m.params_total / 1e9, 1) })));
    li.addEventListener("mousedown", (ev) => { ev.preventDefault(); chooseModel(m.id); });
    list.appendChild(li);
  });
  setExpanded(hits.length > 0);
}

export function chooseModel(id) {
  $("model").value = id;
  setExpanded(false);
  $("model").classList.remove("invalid");
}

export function modelKeys(ev) {
  const list = $("model-list");
  const items = [...list.querySelectorAll("li")];
  if (ev.key === "ArrowDown" && list.hidden) { showModelList(); return; }
  if (list.hidden || !items.length) return;
  if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
    ev.preventDefault();
    state.activeIndex = (state.activeIndex + (ev.key === "ArrowDown" ? 1 : items.length - 1)) % items.length;
    items.forEach((li, i) => li.setAttribute("aria-selected", String(i === state.activeIndex)));
    $("model").setAttribute("aria-activedescendant", items[state.activeIndex].id);
    items[state.activeIndex].scrollIntoView({ block: "nearest" });
  } else if (ev.key === "Enter" && state.activeIndex >= 0) {
    ev.preventDefault();
    chooseModel(items[state.activeIndex].dataset.id);
  } else if (ev.key === "Escape") {
    setExpanded(false);
  }
}

export function closeModelList() { setExpanded(false); }

/* ---------------------------------------------------------------- workload <-> form */
function num(id) {
  const raw = $(id).value.trim();
  if (!raw) return undefined;
  const v = Number(raw);
  return Number.isFinite(v) ? v : raw;   // the server names the field if it is not a number
}

function merge(base, over) {
  const out = { ...(base || {}) };
  for (const [k, v] of Object.entries(over)) {
    out[k] = v && typeof v === "object" && !Array.isArray(v) && out[k] && typeof out[k] === "object"
      ? merge(out[k], v) : v;
  }
  return out;
}

export function buildWorkload() {
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
    const serving = {};
    for (const key of ["requests_per_s", "ttft_ms", "tpot_ms"]) if (num(key) !== undefined) serving[key] = num(key);
    if (Object.keys(serving).length) w.serving = serving;
  }
  const c = {};
  if (training && num("deadline_hours") !== undefined) c.deadline_hours = num("deadline_hours");
  if (num("budget") !== undefined) c.budget = num("budget");
  if ($("currency").value !== "CNY") c.currency = $("currency").value;
  if ($("region").value) c.regions = [$("region").value];
  const billing = [...document.querySelectorAll("#billing input:checked")].map((x) => x.value);
  if (billing.length && billing.length < $("billing").querySelectorAll("input").length) c.billing = billing;
  if (Object.keys(c).length) w.constraints = c;
  if (w.quantization === "none" && task === "qlora") delete w.quantization;
  // Keys of a loaded file that the form does not show travel along (the form's values win).
  const out = state.extra ? merge(state.extra, w) : w;
  if (state.extra && typeof state.extra.model === "object" && !w.model) out.model = state.extra.model;
  return out;
}

const FORM_KEYS = { model: 1, task: 1, objective: 1, precision: 1, quantization: 1, seq_len: 1, batch_size: 1,
                    prompt_tokens: 1, output_tokens: 1 };

/* Fill the form from a workload (a loaded file); returns the keys the form cannot show (kept in state.extra). */
export function fillFromWorkload(w) {
  for (const id of ["seq_len", "batch_size", "concurrency", "prompt_tokens", "output_tokens", "requests_per_s", "ttft_ms",
                    "tpot_ms", "dataset_tokens", "epochs", "deadline_hours", "budget"]) $(id).value = "";
  const set = (id, v) => { if (v !== undefined && v !== null) $(id).value = String(v); };
  const setSelect = (id, v) => { if ([...$(id).options].some((o) => o.value === v)) $(id).value = v; };
  $("model").value = typeof w.model === "string" ? w.model : "";
  setSelect("task", w.task || "lora");
  for (const id of ["objective", "precision", "quantization"]) if (w[id]) setSelect(id, w[id]);
  set("seq_len", w.seq_len); set("prompt_tokens", w.prompt_tokens); set("output_tokens", w.output_tokens);
  set(TRAINING.has($("task").value) ? "batch_size" : "concurrency", w.batch_size);
  const s = w.serving || {}, d = w.dataset || {}, c = w.constraints || {};
  set("requests_per_s", s.requests_per_s); set("ttft_ms", s.ttft_ms); set("tpot_ms", s.tpot_ms);
  const tokens = d.tokens ?? (d.samples && d.tokens_per_sample ? d.samples * d.tokens_per_sample : undefined);
  set("dataset_tokens", tokens); set("epochs", d.epochs === 1 ? undefined : d.epochs);
  set("deadline_hours", c.deadline_hours); set("budget", c.budget);
  setSelect("currency", c.currency || "CNY");
  setSelect("region", (c.regions || [""])[0]);
  const billing = new Set(c.billing || []);
  for (const cb of $("billing").querySelectorAll("input")) cb.checked = !c.billing || billing.has(cb.value);
  // what the form does not show: everything else, kept as it is
  const extra = {};
  for (const [k, v] of Object.entries(w)) if (!FORM_KEYS[k] && !["serving", "dataset", "constraints"].includes(k)) extra[k] = v;
  if (typeof w.model === "object") extra.model = w.model;
  const rest = (obj, known) => Object.fromEntries(Object.entries(obj).filter(([k]) => !known.includes(k)));
  const sRest = rest(s, ["requests_per_s", "ttft_ms", "tpot_ms"]);
  const dRest = d.tokens === undefined && d.samples ? rest(d, ["samples", "tokens_per_sample", "epochs"]) : rest(d, ["tokens", "epochs"]);
  const cRest = rest(c, ["deadline_hours", "budget", "currency", "regions", "billing"]);
  if ((c.regions || []).length > 1) cRest.regions = c.regions;
  if (Object.keys(sRest).length) extra.serving = sRest;
  if (Object.keys(dRest).length) extra.dataset = dRest;
  if (Object.keys(cRest).length) extra.constraints = cRest;
  state.extra = Object.keys(extra).length ? extra : null;
  toggleTaskFields();
  const keys = [];
  for (const [k, v] of Object.entries(extra)) {
    if (v && typeof v === "object" && !Array.isArray(v) && k !== "model") for (const sub of Object.keys(v)) keys.push(k + "." + sub);
    else keys.push(k);
  }
  return keys;
}

/* ---------------------------------------------------------------- URL */
export function formParams() {
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

export function updateUrl() {
  const qs = formParams().toString();
  history.replaceState(null, "", qs ? "?" + qs : location.pathname);
}

export function fillFromUrl() {
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

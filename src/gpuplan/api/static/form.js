/* gpuplan page: the form <-> workload <-> URL, the model picker (an ARIA combobox), notes next to
 * inputs the search will ignore, and the workload file (download as YAML, load a YAML/JSON file). */
"use strict";

import { buildRequest } from "./request.js";
import { $, TRAINING, el, fmtNum, state, t } from "./util.js";

/* Every field of the form, by element id (request.js names the same keys). */
export const FIELD_IDS = ["model", "task", "objective", "precision", "quantization", "framework", "seq_len", "batch_size",
                          "dataset_tokens", "samples", "tokens_per_sample", "epochs", "lora_rank", "mode", "prompt_tokens",
                          "output_tokens", "concurrency", "requests_per_s", "ttft_ms", "tpot_ms", "items", "audio_hours",
                          "deadline_hours", "budget", "currency", "cloud", "region", "gpu", "max_gpus"];
export const URL_KEYS = [...FIELD_IDS.filter((k) => k !== "concurrency"), "billing", "other_keys"];
export const MAX_FILE_BYTES = 64 * 1024;   // the API's body limit

export function toggleTaskFields() {
  const task = $("task").value, training = TRAINING.has(task), batch = !training && $("mode").value === "batch";
  for (const node of document.querySelectorAll(".train-only")) node.hidden = !training;
  for (const node of document.querySelectorAll(".infer-only")) node.hidden = training;
  for (const node of document.querySelectorAll(".online-only")) node.hidden = training || batch;
  for (const node of document.querySelectorAll(".batch-only")) node.hidden = !batch;
  for (const node of document.querySelectorAll(".deadline-field")) node.hidden = !(training || batch);
  for (const node of document.querySelectorAll(".lora-only")) node.hidden = !(task === "lora" || task === "qlora");
  inputNotes();
}

/* Notes next to inputs that the search would ignore (and why), in the page's language. */
export function inputNotes() {
  const training = TRAINING.has($("task").value);
  const noData = !$("dataset_tokens").value.trim() && !$("samples").value.trim();
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
/* The form's values as typed (request.js turns them into the workload). */
export function formFields() {
  const f = {};
  for (const id of FIELD_IDS) f[id] = $(id).value;
  const all = [...$("billing").querySelectorAll("input")];
  f.billing = all.filter((x) => x.checked).map((x) => x.value);
  f.billing_all = all.length;
  return f;
}

/* The "other workload keys" box: a JSON object of keys the form does not show (null when empty). */
export function otherKeys() {
  const text = $("other_keys").value.trim();
  if (!text) return null;
  let v;
  try { v = JSON.parse(text); } catch (e) { v = undefined; }
  if (!v || typeof v !== "object" || Array.isArray(v)) {
    const err = new Error(t("other_keys_bad"));
    err.field = "other_keys";
    throw err;
  }
  return v;
}

export function buildWorkload() {
  return buildRequest(formFields(), otherKeys());
}

const FORM_KEYS = new Set(["model", "task", "objective", "precision", "quantization", "framework", "seq_len",
                           "batch_size", "prompt_tokens", "output_tokens"]);
const SUB_KEYS = { serving: ["requests_per_s", "ttft_ms", "tpot_ms"],
                   dataset: ["tokens", "samples", "tokens_per_sample", "epochs", "items", "audio_hours"],
                   constraints: ["deadline_hours", "budget", "currency", "clouds", "regions", "billing", "max_gpus"],
                   hardware: ["gpu"], lora: ["rank"] };

/* Fill the form from a workload (a loaded file); what the form cannot show goes into the "other keys" box.
 * Returns the dotted names of those keys. */
export function fillFromWorkload(w) {
  for (const id of FIELD_IDS) if ($(id).tagName === "INPUT") $(id).value = "";
  const set = (id, v) => { if (v !== undefined && v !== null) $(id).value = String(v); };
  const setSelect = (id, v) => { $(id).value = [...$(id).options].some((o) => o.value === (v ?? "")) ? (v ?? "") : ""; };
  $("model").value = typeof w.model === "string" ? w.model : "";
  setSelect("task", w.task || "lora");
  for (const id of ["precision", "quantization", "framework"]) setSelect(id, w[id]);
  setSelect("objective", w.objective || "cost");
  set("seq_len", w.seq_len); set("prompt_tokens", w.prompt_tokens); set("output_tokens", w.output_tokens);
  const s = w.serving || {}, d = w.dataset || {}, c = w.constraints || {}, hw = w.hardware || {};
  const training = TRAINING.has($("task").value);
  $("mode").value = !training && (d.items !== undefined || d.audio_hours !== undefined) ? "batch" : "online";
  set(training ? "batch_size" : "concurrency", w.batch_size);
  set("requests_per_s", s.requests_per_s); set("ttft_ms", s.ttft_ms); set("tpot_ms", s.tpot_ms);
  set("dataset_tokens", d.tokens); set("samples", d.samples); set("tokens_per_sample", d.tokens_per_sample);
  set("epochs", d.epochs); set("items", d.items); set("audio_hours", d.audio_hours);
  set("deadline_hours", c.deadline_hours); set("budget", c.budget); set("max_gpus", c.max_gpus);
  set("gpu", hw.gpu); set("lora_rank", (w.lora || {}).rank);
  setSelect("currency", c.currency || "CNY");
  setSelect("cloud", (c.clouds || ["alibaba"])[0]);
  fillRegions();
  setSelect("region", (c.regions || [""])[0]);
  const billing = new Set(c.billing || []);
  for (const cb of $("billing").querySelectorAll("input")) cb.checked = !c.billing || billing.has(cb.value);
  // what the form does not show: everything else, kept as it is
  const extra = {};
  const kept = [];
  for (const [k, v] of Object.entries(w)) {
    if (k === "model") { if (typeof v === "object") { extra.model = v; kept.push("model"); } continue; }
    if (k === "batch_size" && $("mode").value === "batch") { extra[k] = v; kept.push(k); continue; }
    if (FORM_KEYS.has(k)) continue;
    if (SUB_KEYS[k] && v && typeof v === "object" && !Array.isArray(v)) {
      const rest = Object.fromEntries(Object.entries(v).filter(([sub]) => !SUB_KEYS[k].includes(sub)));
      if (k === "constraints" && (c.regions || []).length > 1) rest.regions = c.regions;
      if (k === "constraints" && (c.clouds || []).length > 1) rest.clouds = c.clouds;
      if (Object.keys(rest).length) { extra[k] = rest; kept.push(...Object.keys(rest).map((sub) => k + "." + sub)); }
      continue;
    }
    extra[k] = v;
    kept.push(k);
  }
  $("other_keys").value = Object.keys(extra).length ? JSON.stringify(extra, null, 1) : "";
  if (Object.keys(extra).length) $("more").open = true;
  toggleTaskFields();
  return kept;
}

/* The regions of the chosen cloud (the search plans on that cloud only). */
export function fillRegions() {
  const cloud = $("cloud").value || "alibaba";
  const keep = $("region").value;
  const regions = ((state.options || {}).regions_by_cloud || {})[cloud] || [];
  $("region").replaceChildren();
  for (const r of ["", ...regions]) $("region").appendChild(el("option", { value: r }, r || t("any_region")));
  $("region").value = regions.includes(keep) ? keep : "";
}

/* ---------------------------------------------------------------- URL */
function compactJson(text) {
  try { return text.trim() ? JSON.stringify(JSON.parse(text)) : ""; } catch (e) { return text.trim(); }
}

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
    } else if (key === "other_keys") {
      v = compactJson($("other_keys").value);
    } else {
      v = $(key).value;
    }
    if (v && !(key === "currency" && v === "CNY") && !(key === "cloud" && v === "alibaba") &&
        !(key === "objective" && v === "cost") && !(key === "mode" && v === "online")) p.set(key, v.trim());
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
  for (const key of ["cloud", ...URL_KEYS.filter((k) => k !== "cloud")]) {   // the cloud first: it sets the regions
    if (!p.has(key)) continue;
    const v = p.get(key);
    if (key === "billing") {
      const on = new Set(v.split(","));
      for (const cb of $("billing").querySelectorAll("input")) cb.checked = on.has(cb.value);
    } else if (key === "batch_size") {
      $("batch_size").value = v; $("concurrency").value = v;
    } else if (key === "cloud") {
      if ([...$("cloud").options].some((o) => o.value === v)) { $("cloud").value = v; fillRegions(); }
    } else if ($(key)) {
      const node = $(key);
      if (node.tagName === "SELECT" && ![...node.options].some((o) => o.value === v)) continue;
      node.value = v;
    }
  }
  return p.has("model");
}

/* gpuplan page: the page's words, translation and formatting (shared by app.js and charts.js).
 * The page's text: key -> English msgid, marked N_ for Babel. Translations come from the gettext
 * catalog (GET /api/messages?lang=zh), the same .po as the command line. */
"use strict";

const N_ = (s) => s;
export const MSG = {
  tagline: N_("GPU instance planner"),
  api_docs: N_("API"),
  language: N_("Language"),
  sec_model: N_("Model and job"),
  model: N_("Model"),
  models_found: N_("Models"),
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
  ttft_ms: N_("TTFT target (ms)"),
  tpot_ms: N_("TPOT target (ms)"),
  dataset_tokens: N_("Dataset tokens"),
  epochs: N_("Epochs"),
  samples: N_("or: samples"),
  tokens_per_sample: N_("tokens per sample"),
  mode: N_("Service or batch job"),
  m_online: N_("online service"),
  m_batch: N_("offline batch job"),
  items: N_("Requests / items to process"),
  audio_hours: N_("Hours of audio (speech models)"),
  cloud: N_("Cloud"),
  cl_alibaba: N_("Alibaba Cloud"),
  cl_aws: N_("AWS"),
  cl_tencent: N_("Tencent Cloud"),
  sec_more: N_("More settings"),
  framework: N_("Framework / engine"),
  any_framework: N_("chosen by the search"),
  as_published: N_("as published (from the model id)"),
  lora_rank: N_("LoRA rank"),
  gpu: N_("GPU (fixed)"),
  max_gpus: N_("At most GPUs"),
  other_keys: N_("Other workload keys (JSON)"),
  other_keys_note: N_("Any key of a workload file (docs/workload.md); the fields above win."),
  other_keys_bad: N_("The other workload keys must be one JSON object, e.g. {\"gradient_accumulation\": 4}."),
  sec_constraints: N_("Constraints"),
  deadline_hours: N_("Deadline (hours)"),
  budget: N_("Budget"),
  currency: N_("Currency"),
  region: N_("Region"),
  billing: N_("Billing"),
  submit: N_("Find plans"),
  share: N_("Copy link"),
  copied: N_("Link copied"),
  save_workload: N_("Download workload (YAML)"),
  load_workload: N_("Load workload file"),
  loaded_workload: N_("Loaded {name}."),
  kept_keys: N_("Kept from the file under “Other workload keys”: {keys}."),
  file_too_big: N_("The file is larger than {kib} KiB; a workload is a few hundred bytes."),
  inline_model: N_("The file describes its model inline; the form shows only named models, so that model is kept as it is."),
  intro: N_("Describe the job on the left and press “Find plans”."),
  deadline_ignored: N_("Ignored: a deadline needs the dataset size (dataset tokens) to say how long the job runs."),
  epochs_ignored: N_("Ignored without the dataset size."),
  sla_note: N_("Checked against each plan's estimated latency; plans that miss it are rejected."),
  col_rank: N_("#"),
  col_instance: N_("Instance"),
  col_gpus: N_("GPUs"),
  col_layout: N_("Layout"),
  col_billing: N_("Billing"),
  col_region: N_("Region"),
  col_price: N_("Price / hour"),
  col_time: N_("Time"),
  col_latency: N_("Latency"),
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
  details: N_("Selected plan"),
  ranking_basis: N_("Ranked by: {basis}"),
  footer: N_("Prices carry their date and source; check them before you buy."),
  any_region: N_("any region"),
  working: N_("Searching…"),
  no_plans: N_("No plan satisfies every constraint."),
  found: N_("{n} plans shown; {c} candidates searched in {s} s."),
  need_model: N_("Choose a model first."),
  search_failed: N_("The search failed; no result is shown."),
  capacity: N_("capacity"),
  per_month: N_("/ month"),
  range80: N_("{coverage} range {range}"),
  sized_at: N_("sized at {high}"),
  d_memory_range: N_("Memory per GPU ({coverage} range)"),
  d_fit_confidence: N_("{p} chance it fits"),
  per_btok: N_("/ 1B tokens"),
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
  pb_yours: N_("your price"),
  pb_official: N_("quoted"),
  "pb_third-party": N_("third-party quote"),
  pb_derived: N_("derived"),
  pb_guessed: N_("guessed"),
  price_dated: N_("{basis}, {date} ({days} d)"),
  u_ms: N_("{n} ms"),
  u_s: N_("{n} s"),
  u_min: N_("{n} min"),
  u_h: N_("{n} h"),
  u_days: N_("{n} days"),
  ckpt: N_("checkpointing {how}"),
  offload: N_("offload {where}"),
  d_engine: N_("Engine"),
  d_copies: N_("Engine copies"),
  d_instances: N_("Instances"),
  d_weight_format: N_("Weight format"),
  d_kv_dtype: N_("KV cache type"),
  d_max_seqs: N_("Max sequences per copy"),
  d_ttft: N_("TTFT (time to first token)"),
  d_ttft_p: N_("{p50} median, {p90} p90"),
  d_tpot: N_("TPOT (time per output token)"),
  d_target: N_("target {t}"),
  d_tokens_per_s: N_("Output tokens/s per copy"),
  d_load: N_("Load at the peak"),
  d_headroom: N_("Headroom"),
  d_sla: N_("Latency targets"),
  sla_met: N_("met"),
  sla_missed: N_("missed"),
  d_micro_batch: N_("Micro-batch"),
  d_accumulation: N_("Gradient accumulation"),
  d_global_batch: N_("Global batch"),
  d_global_batch_v: N_("{seqs} sequences ({tokens} tokens)"),
  d_global_batch_v1: N_("1 sequence ({tokens} tokens)"),
  d_bubble: N_("Pipeline bubble"),
  d_mfu: N_("MFU"),
  d_checkpointing: N_("Activation checkpointing"),
  d_layout: N_("Layout"),
  d_time: N_("Time"),
  d_cost: N_("Cost"),
  d_chosen: N_("chosen by the search"),
  d_pinned: N_("set by you"),
  c_memory: N_("memory"),
  c_host_memory: N_("host memory"),
  c_network: N_("network"),
  c_budget: N_("budget"),
  c_deadline: N_("deadline"),
  c_status: N_("status"),
  c_no_price: N_("no price"),
  c_region: N_("region"),
  c_layout: N_("layout"),
  c_sla: N_("latency target"),
  ck_none: N_("none"),
  ck_selective: N_("selective"),
  ck_full: N_("full"),
};

export const state = { lang: "en", catalogs: {}, models: [], options: null, doc: null, workload: null,
                       selected: 0, activeIndex: -1, extra: null, seq: 0 };
export const $ = (id) => document.getElementById(id);

export function t(key, vars) {
  const msgid = MSG[key] || key;
  let s = (state.lang !== "en" && state.catalogs[state.lang] && state.catalogs[state.lang][msgid]) || msgid;
  if (vars) for (const [k, v] of Object.entries(vars)) s = s.replace("{" + k + "}", String(v));
  return s;
}

/* A label that may be a catalog msgid (the server's English words): translated when known. */
export function tr(msgid) {
  return (state.lang !== "en" && state.catalogs[state.lang] && state.catalogs[state.lang][msgid]) || msgid;
}

export function el(tag, attrs, text) {
  const e = document.createElement(tag);
  if (attrs) for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

export const SVGNS = "http://www.w3.org/2000/svg";
export function svgEl(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  if (attrs) for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

export const GIB = 1024 ** 3;
export const TRAINING = new Set(["pretrain", "full", "lora", "qlora"]);

/* Text whose parts must stay on one line (a number and its unit, "TTFT 237 ms"): every space becomes a
 * no-break space, and two CJK characters in a row get a word joiner between them (a browser may otherwise
 * break "毫秒" after 毫). Every figure with a unit goes through here (fmtMoney, fmtGiB, fmtDuration). */
const CJK = /[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]/;
export function nobreak(text) {
  const s = String(text);
  let out = "";
  for (let i = 0; i < s.length; i++) {
    out += s[i] === " " ? "\u00a0" : s[i];
    if (i + 1 < s.length && CJK.test(s[i]) && CJK.test(s[i + 1])) out += "\u2060";
  }
  return out;
}

/* The server's sentences as the page shows them: every figure keeps its unit on its line ("72.0 GiB", "85 毫秒"). */
const UNIT_AFTER = /(\d)[ \u00a0]+(ms|s|min|h|days?|hours?|GiB|MiB|GB|TB|TFLOP\/s|TFLOPS|tokens?\/s|req\/s|%|毫秒|秒|分钟|小时|天|个月|月)(?![A-Za-z])/g;
export function joinUnits(text) {
  return String(text).replace(UNIT_AFTER, (m, d, unit) => d + nobreak(" " + unit));
}

/* Each item once, in order. */
export function unique(items) { return [...new Set(items || [])]; }

export function fmtNum(x, digits) {
  if (x === null || x === undefined || !isFinite(x)) return "–";
  return Number(x).toLocaleString(state.lang === "zh" ? "zh-CN" : "en-US",
                                  { maximumFractionDigits: digits === undefined ? 2 : digits });
}
export function fmtPct(x) { return x === null || x === undefined || !isFinite(x) ? "–" : fmtNum(100 * x, 1) + "%"; }
export function fmtMoney(x, cur) { return x === null || x === undefined ? "–" : nobreak((cur || "") + " " + fmtNum(x, x < 100 ? 2 : 0)); }
export function fmtGiB(b) { return b === null || b === undefined ? "–" : nobreak(fmtNum(b / GIB, 1) + " GiB"); }
/* "lo–hi" of an 80 % range [low, high] (plans' and estimates' `intervals`), formatted by `fmt`; "" without one. */
export function fmtRange(pair, fmt) { return pair && pair.length === 2 ? fmt(pair[0]) + "–" + fmt(pair[1]) : ""; }
export function fmtDuration(s) {
  if (s === null || s === undefined || !isFinite(s)) return "–";
  if (s < 1) return nobreak(t("u_ms", { n: fmtNum(s * 1000, s < 0.1 ? 1 : 0) }));
  if (s < 120) return nobreak(t("u_s", { n: fmtNum(s, 1) }));
  if (s < 3 * 3600) return nobreak(t("u_min", { n: fmtNum(s / 60, 0) }));
  if (s < 72 * 3600) return nobreak(t("u_h", { n: fmtNum(s / 3600, 1) }));
  return nobreak(t("u_days", { n: fmtNum(s / 86400, 1) }));
}

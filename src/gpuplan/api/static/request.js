/* gpuplan page: the request builder. The form's values, as typed, in; the workload the page POSTs out.
 * No DOM here: form.js reads the fields into a plain object and calls buildRequest(), and the tests run this
 * module on its own (tests/test_doors.py) to check that the page asks for the same workload as the CLI,
 * the Python API, REST and the wizard.
 *
 * "As published": an empty precision or quantization is left out, so the server reads them from the model
 * (a ...-GPTQ-Int4 checkpoint is planned as the GPTQ 4-bit model it is); a field left empty is left out,
 * so the server's defaults and search apply, exactly as for a workload file without that key. */
"use strict";

export const TRAINING_TASKS = ["pretrain", "full", "lora", "qlora"];
export const DEFAULT_CLOUD = "alibaba";
export const DEFAULT_CURRENCY = "CNY";

/* A number typed in a field: undefined when empty; the number when it reads as one; else the text itself, so
 * that the server names the field and says what it takes (the page never guesses). */
export function fieldNumber(raw) {
  const text = raw === undefined || raw === null ? "" : String(raw).trim();
  if (!text) return undefined;
  const v = Number(text);
  return Number.isFinite(v) ? v : text;
}

function put(obj, key, value) {
  if (value !== undefined && value !== "" && value !== null) obj[key] = value;
}

function merge(base, over) {
  const out = { ...(base || {}) };
  for (const [k, v] of Object.entries(over)) {
    out[k] = v && typeof v === "object" && !Array.isArray(v) && out[k] && typeof out[k] === "object"
      ? merge(out[k], v) : v;
  }
  return out;
}

/* The workload for the form's values.
 * f: { model, task, objective, precision, quantization, seq_len, batch_size, dataset_tokens, samples,
 *      tokens_per_sample, epochs, mode ("online" | "batch"), prompt_tokens, output_tokens, concurrency,
 *      requests_per_s, ttft_ms, tpot_ms, items, audio_hours, deadline_hours, budget, currency, cloud, region,
 *      billing (the checked modes) and billing_all (every mode offered), framework, gpu, max_gpus, lora_rank }
 *      (strings as typed; "" or missing = not set).
 * extra: keys the form does not show (a loaded file's, or the "other keys" box), kept; the form's values win. */
export function buildRequest(f, extra) {
  const task = f.task || "lora";
  const training = TRAINING_TASKS.includes(task);
  const w = { model: String(f.model || "").trim(), task };
  put(w, "objective", f.objective);
  put(w, "precision", f.precision);
  put(w, "quantization", f.quantization);
  put(w, "framework", f.framework);
  const c = {};
  if (training) {
    put(w, "seq_len", fieldNumber(f.seq_len));
    put(w, "batch_size", fieldNumber(f.batch_size));
    const d = {};
    put(d, "tokens", fieldNumber(f.dataset_tokens));
    if (d.tokens === undefined) {
      put(d, "samples", fieldNumber(f.samples));
      put(d, "tokens_per_sample", fieldNumber(f.tokens_per_sample));
    }
    if (Object.keys(d).length) {
      put(d, "epochs", fieldNumber(f.epochs));
      w.dataset = d;
    }
    const rank = fieldNumber(f.lora_rank);
    if (rank !== undefined && (task === "lora" || task === "qlora")) w.lora = { rank };
    put(c, "deadline_hours", fieldNumber(f.deadline_hours));   // without a dataset size the server notes it is unused
  } else {
    put(w, "prompt_tokens", fieldNumber(f.prompt_tokens));
    put(w, "output_tokens", fieldNumber(f.output_tokens));
    if (f.mode === "batch") {
      const d = {};
      put(d, "items", fieldNumber(f.items));
      put(d, "audio_hours", fieldNumber(f.audio_hours));
      if (Object.keys(d).length) w.dataset = d;
      put(c, "deadline_hours", fieldNumber(f.deadline_hours));
    } else {
      put(w, "batch_size", fieldNumber(f.concurrency));
      const s = {};
      for (const key of ["requests_per_s", "ttft_ms", "tpot_ms"]) put(s, key, fieldNumber(f[key]));
      if (Object.keys(s).length) w.serving = s;
    }
  }
  const gpu = String(f.gpu || "").trim();
  if (gpu) w.hardware = { gpu };
  put(c, "budget", fieldNumber(f.budget));
  if (f.currency && f.currency !== DEFAULT_CURRENCY) c.currency = f.currency;
  if (f.cloud && f.cloud !== DEFAULT_CLOUD) c.clouds = [f.cloud];
  if (f.region) c.regions = [f.region];
  const billing = f.billing || [];
  if (billing.length && f.billing_all && billing.length < f.billing_all) c.billing = [...billing];
  put(c, "max_gpus", fieldNumber(f.max_gpus));
  if (Object.keys(c).length) w.constraints = c;
  const out = extra ? merge(extra, w) : w;
  if (extra && typeof extra.model === "object" && !w.model) out.model = extra.model;
  return out;
}

/* gpuplan page: the figures of one plan, as [label, value] pairs for its details row.
 * Serving plans: engine, copies and instances, TTFT, TPOT, output rate, load at the peak and headroom,
 * against the targets. Training plans: micro-batch, accumulation, global batch, pipeline bubble, MFU,
 * activation checkpointing. They come from the plan's `serving` and `recipe` blocks; a plan made
 * before those blocks existed falls back to `performance`, `parallel` and `utilization`. */
"use strict";

import { fmtDuration, fmtGiB, fmtMoney, fmtNum, fmtPct, fmtRange, t, TRAINING } from "./util.js";

const has = (v) => v !== null && v !== undefined && !(typeof v === "number" && !isFinite(v));

function servingFacts(p, doc) {
  const s = p.serving || {}, perf = p.performance || {}, par = p.parallel || {};
  const want = (doc.workload || {}).serving || {};
  const out = [];
  const engine = s.engine || par.engine || (doc.workload || {}).framework;
  if (engine && engine !== "auto") out.push([t("d_engine"), engine]);
  out.push([t("d_copies"), fmtNum(s.engine_copies ?? p.replicas, 0)]);
  out.push([t("d_instances"), fmtNum(s.instances ?? p.instance_count, 0)]);
  const fmt = s.weight_format || (par.quantization && par.quantization !== "none" ? par.quantization : par.precision);
  if (fmt) out.push([t("d_weight_format"), fmt]);
  if (s.kv_cache_dtype || par.kv_cache_dtype) out.push([t("d_kv_dtype"), s.kv_cache_dtype || par.kv_cache_dtype]);
  if (has(s.max_num_seqs ?? par.max_num_seqs)) out.push([t("d_max_seqs"), fmtNum(s.max_num_seqs ?? par.max_num_seqs, 0)]);
  const ttftTarget = s.ttft_target_s ?? (has(want.ttft_ms) ? want.ttft_ms / 1000 : null);
  const tpotTarget = s.tpot_target_s ?? (has(want.tpot_ms) ? want.tpot_ms / 1000 : null);
  const target = (v) => (has(v) ? " (" + t("d_target", { t: fmtDuration(v) }) + ")" : "");
  const ttft = has(s.ttft_p50_s) && has(s.ttft_p90_s)
    ? t("d_ttft_p", { p50: fmtDuration(s.ttft_p50_s), p90: fmtDuration(s.ttft_p90_s) }) : fmtDuration(s.ttft_p50_s ?? perf.ttft_s);
  out.push([t("d_ttft"), ttft + target(ttftTarget)]);
  out.push([t("d_tpot"), fmtDuration(s.tpot_s ?? perf.tpot_s) + target(tpotTarget)]);
  const rate = s.output_tokens_per_s_per_replica ?? perf.output_tokens_per_s;
  if (has(rate)) out.push([t("d_tokens_per_s"), fmtNum(rate, 0)]);
  const load = s.utilization ?? p.utilization ?? perf.utilization;
  if (has(load)) {
    out.push([t("d_load"), fmtPct(load)]);
    out.push([t("d_headroom"), fmtPct(Math.max(0, 1 - load))]);
  }
  if (s.sla_met === true || s.sla_met === false) out.push([t("d_sla"), t(s.sla_met ? "sla_met" : "sla_missed")]);
  return out;
}

function trainingFacts(p, doc) {
  const r = p.recipe || {}, perf = p.performance || {}, par = p.parallel || {};
  const out = [];
  const mark = (field) => (r.pinned || []).includes(field) ? " (" + t("d_pinned") + ")"
    : (r.chosen || []).includes(field) ? " (" + t("d_chosen") + ")" : "";
  const micro = r.micro_batch ?? par.micro_batch, ga = r.gradient_accumulation ?? par.gradient_accumulation;
  if (has(micro)) out.push([t("d_micro_batch"), fmtNum(micro, 0) + mark("micro_batch")]);
  if (has(ga)) out.push([t("d_accumulation"), fmtNum(ga, 0) + mark("gradient_accumulation")]);
  const dp = r.dp ?? par.dp ?? 1;
  const seqs = r.global_batch_sequences ?? par.global_batch ?? (has(micro) && has(ga) ? micro * ga * dp : null);
  const seqLen = (doc.workload || {}).seq_len;
  const tokens = r.global_batch_tokens ?? (has(seqs) && has(seqLen) ? seqs * seqLen : null);
  if (has(seqs)) out.push([t("d_global_batch"), has(tokens) ? t(seqs === 1 ? "d_global_batch_v1" : "d_global_batch_v",
                                                                { seqs: fmtNum(seqs, 0), tokens: fmtNum(tokens, 0) })
                                                            : fmtNum(seqs, 0)]);
  const bubble = r.pipeline_bubble ?? perf.pipeline_bubble;
  if (has(bubble)) out.push([t("d_bubble"), fmtPct(bubble)]);
  const mfu = r.mfu ?? perf.mfu;
  if (has(mfu)) out.push([t("d_mfu"), fmtPct(mfu)]);
  const ckpt = r.checkpointing ?? par.checkpointing;
  if (ckpt) out.push([t("d_checkpointing"), t("ck_" + ckpt) + mark("checkpointing")]);
  return out;
}

export function planFacts(p, doc) {
  const training = TRAINING.has((doc.workload || {}).task);
  const facts = training ? trainingFacts(p, doc) : servingFacts(p, doc);
  const iv = p.intervals || {};
  const span = (pair, fmt) => { const r = fmtRange(pair, fmt); return r ? " (" + r + ")" : ""; };
  if (has(p.time_s)) facts.push([t("d_time"), fmtDuration(p.time_s) + span(iv.time_s, fmtDuration)]);
  const cost = p.total_cost ?? p.monthly_cost;
  const money = (x) => fmtMoney(x, p.currency);
  if (has(cost)) facts.push([t("d_cost"), fmtMoney(cost, p.currency) + (has(p.total_cost) ? "" : " " + t("per_month"))
                                          + span(has(p.total_cost) ? iv.total_cost : iv.monthly_cost, money)]);
  if (iv.memory_per_gpu_bytes) facts.push([t("d_memory_range", { coverage: "80%" }),
                                           fmtRange(iv.memory_per_gpu_bytes, fmtGiB)
                                           + (has(p.fit_confidence) ? " · " + t("d_fit_confidence", { p: fmtPct(p.fit_confidence) }) : "")]);
  return facts;
}

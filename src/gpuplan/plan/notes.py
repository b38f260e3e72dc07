"""The recommendation's global warnings (price age, currency conversion, missing dataset) and the
assumptions it states (memory headroom, spot model, fixed costs, ranking, serving sizing)."""

from __future__ import annotations

import datetime as dt

from gpuplan.errors import GpuplanError
from gpuplan.i18n import _
from gpuplan.plan.money import cost as costm
from gpuplan.plan.money import fixed_costs as fixedm
from gpuplan.plan.search import feasibility as fz
from gpuplan.plan.context import PlanContext, target_util
from gpuplan.plan.record import Plan


def global_warnings(ctx: PlanContext, shown: list[Plan], book: costm.PriceBook) -> list[str]:
    out: list[str] = []
    today = ctx.today or dt.date.today()
    for p in shown:
        out.extend(p.advice.warnings)
        as_of = p.cost.price_as_of
        if as_of:
            age = (today - dt.date.fromisoformat(as_of)).days
            if age > 180:
                out.append(_("prices date from {date} ({age} days old): refresh them (`gpuplan catalog refresh`) "
                             "or import your quote (`gpuplan catalog import FILE`)").format(date=as_of, age=age))
    out.extend(unlaunched_settings(ctx))
    if ctx.training and not ctx.w.dataset:
        out.append(_("no dataset size given: plans show time and cost per 1B tokens; total_cost is null"))
    if ctx.training and ctx.w.constraints and ctx.w.constraints.budget and not ctx.w.dataset:
        out.append(_("the budget cannot be checked without a dataset size"))
    if book.converted:
        out.append(_("prices converted to {cur} at {rate} CNY/USD ({date})").format(
            cur=book.currency, rate=book.fx.usd_cny, date=book.fx.as_of))
        stale = book.fx.staleness_warning(today)
        if stale:
            out.append(stale)
    return out


def unlaunched_settings(ctx: PlanContext) -> list[str]:
    """Workload settings `estimate` models but the bundle's launchers do not run: the plans are sized and timed as
    the bundle launches them, and the answer says so (never a silent substitution)."""
    out: list[str] = []
    par = ctx.w.parallel
    if not ctx.training and getattr(ctx.model, "kind", None) == "diffusion" and par is not None and par.cp > 1:
        # estimate times a context-parallel DiT (estimate/nonllm/diffusion.py); the bundle launches none
        out.append(_("parallel.cp {cp} is not launched: the bundle serves one diffusion pipeline per GPU "
                     "(data-parallel replicas), and the plans are sized and timed that way; `gpuplan estimate` "
                     "times the context-parallel split").format(cp=par.cp))
    if ctx.training and ctx.w.grad_checkpointing == "per-op":
        # plan/search/candidates.py Fixed: per-op is searched as full
        out.append(_("grad_checkpointing per-op (torchtitan's per-op selective recomputation) is not launched: the "
                     "bundle's launchers recompute whole layers, so the plans are sized and timed with full "
                     "recomputation; `gpuplan estimate` gives the per-op figures"))
    return out


def unlaunched_quantization(model, w) -> str | None:
    """The warning for a quantized diffusion denoiser at inference, or None: `estimate` counts its storage bytes
    (estimate/profile.py denoiser_weight_bytes); the bundle's pipelines load it in the compute dtype, so recommend
    plans it that way (it drops the workload's quantization before the search) and says so."""
    if getattr(model, "kind", None) != "diffusion" or (w.task or "inference") != "inference" \
            or w.quantization in (None, "none"):
        return None
    return _("quantization {q} is not launched for a diffusion pipeline: the bundle loads the denoiser in {dtype}, "
             "and the plans are sized and timed that way; `gpuplan estimate` counts the {q} weights").format(
        q=w.quantization, dtype=w.precision or "bf16")


def staging_assumption() -> str:
    """When a plan stages the weights in OSS instead of every node pulling them from the hub (plan/money/staging.py)."""
    from gpuplan.plan.advice.ops import load_ops
    from gpuplan.plan.money.staging import staging_price_per_hour

    ops = load_ops()
    cfg = ops["weights_staging"]
    return _("weights: staged once in your OSS bucket by a small machine in the region before the GPUs start "
             "(stage-weights.sh; {price} {currency}/h at Alibaba ECI's per-vCPU and per-GiB rates, data/ops.yaml) when "
             "the GPU idle time it saves costs more than that machine and is at least {min} h of instance-time; the "
             "nodes then copy them over the VPC at {oss} MB/s (assumed) instead of downloading them from the hub"
             ).format(price=f"{staging_price_per_hour(ops):.2f}", currency=cfg["currency"],
                      min=f"{float(cfg['min_saved_instance_s']) / 3600:g}",
                      oss=f"{float(ops['bundle_network']['oss_intranet_mb_s']):g}")


def assumptions(ctx: PlanContext, book: costm.PriceBook, headroom: float, spot: costm.SpotModel) -> list[str]:
    out = [_("a plan must leave {share} of each GPU's usable memory free").format(share=f"{headroom:.0%}"),
           _("host RAM: {share} of each instance's memory is kept for the OS").format(share=f"{fz.HOST_RESERVE:.0%}")]
    if "spot" in ctx.billings and (ctx.training or ctx.job):
        fractions = sorted({f"{f:.0%}" for f, _r, _s in (book.spot_fraction(c) for c in {i.cloud for i in ctx.insts})
                            if f})
        out.append(_("spot: {fraction} of pay-as-you-go when no spot price is known (estimated from one observed "
                     "level; range {low}-{high}), {rate} interruptions per hour, {min} min to restart (assumptions)")
                   .format(fraction="/".join(fractions) or _("no estimate"), low=f"{spot.fraction_range[0]:.0%}",
                           high=f"{spot.fraction_range[1]:.0%}", rate=f"{spot.interruptions_per_hour:g}",
                           min=f"{spot.restart_s / 60:.0f}"))
    fx = ctx.fixed
    if (ctx.training and ctx.w.dataset) or ctx.job:   # per-1B-token figures carry no fixed costs
        pull = fixedm.image_pull(fx, ctx.regions[0] if ctx.regions else None, training=ctx.training)
        start = fixedm.node_start()
        out.append(_("fixed costs per instance and job: {boot} min start-up, {driver} min for the NVIDIA driver's "
                     "install and reboot (the ECS bundle installs it at first boot, data/ops.yaml), the node image "
                     "({image} GiB compressed, data/environments.yaml) pulled at {pull} MB/s (an ECS node builds the "
                     "bundle's image from it over its public bandwidth), the model weights at {download} MB/s (the "
                     "bundle downloads them from the region's model hub over the same bandwidth), {tail} min idle tail "
                     "(assumed); per-second billing (Alibaba)").format(
            boot=f"{fx.boot_s / 60:.0f}", driver=f"{start.driver_install_s / 60:.0f}",
            image=f"{pull.image_bytes / 2 ** 30:g}", pull=f"{pull.bytes_per_s / 1e6:g}",
            download=f"{start.download_bytes_s / 1e6:g}", tail=f"{fx.idle_tail_s / 60:.0f}"))
        out.append(staging_assumption())
    if ctx.service:
        s = ctx.w.serving
        if ctx.llm and s and (s.ttft_ms or s.tpot_ms):
            out.append(_("serving: one model copy's capacity is the highest load at which its p90 TTFT (queueing for "
                         "a batch slot and for the prefill included) and its TPOT under load (prefill work sharing the "
                         "GPUs) meet the targets; replicas sized so utilisation of that capacity at the peak stays <= "
                         "{target}; cost per token on the stated traffic, not the peak; a month is 730 h; the budget "
                         "is read as per month").format(target=f"{target_util(ctx):.0%}"))
        else:
            out.append(_("serving: replicas sized so utilisation at the peak stays <= {target}; a month is 730 h; the "
                         "budget is read as per month").format(target=f"{target_util(ctx):.0%}"))
    out.append(_("subscription: monthly price x whole months; 1- and 3-year discounts are not bundled"))
    from gpuplan.providers import freshness

    for cloud in sorted({i.cloud for i in ctx.insts}):
        try:
            out.append(freshness(cloud))   # which price data (bundled snapshot or refreshed cache) and its date
        except GpuplanError:
            pass
    if book.currency != "CNY" or book.converted:
        out.append(_("exchange rate {rate} CNY/USD as of {date} ({source})").format(
            rate=book.fx.usd_cny, date=book.fx.as_of, source=book.fx.source))
    return out


def dedupe(xs: list[str]) -> list[str]:
    return list(dict.fromkeys(xs))


# Workload fields that mean nothing for a model without a transformer decoder (diffusion, speech, vision
# profiles): their defaults are filled in the resolved workload but not stated as assumptions.
LLM_ONLY_FIELDS = ("kv_cache_dtype", "prompt_tokens", "output_tokens", "flash_attention", "seq_len")
NON_LLM_SERVING_SKIP = ("framework", "quantization")   # the vLLM default is an LLM engine; no weight quantization


def applicable(notes: list[str], resolved, model) -> list[str]:
    """The resolver's "assumed ..." notes that apply to this model: none about KV caches, tokens or LLM
    engines for diffusion, speech and vision models."""
    from gpuplan.plan.search.candidates import is_llm

    if is_llm(model):
        return list(notes)
    keys = LLM_ONLY_FIELDS + (NON_LLM_SERVING_SKIP if (resolved.task or "inference") == "inference" else ())
    from gpuplan.fieldnames import field_label, value_text

    # the resolver's own wording (workload_defaults.resolve_defaults), so the two cannot drift apart
    drop = {_("assumed {key} {value}").format(key=field_label(k, with_key=True), value=value_text(getattr(resolved, k),
                                                                                                  key=k))
            for k in keys if getattr(resolved, k, None) is not None}
    return [n for n in notes if n not in drop]


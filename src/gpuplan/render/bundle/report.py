"""PLAN.md (English or Chinese), plan.json and the two SVG charts.

PLAN.md prints plan and estimate values through :func:`~gpuplan.render.bundle.safe.md`; only the
bundle's own fixed sentences are written as they are. Those sentences are msgids of the gettext
catalog (``locale/zh_CN/LC_MESSAGES/gpuplan.po``): templates with named placeholders, translated
with :func:`tr` and then formatted with escaped values.
"""

from __future__ import annotations

import json
import math
from typing import Any

from gpuplan import i18n
from gpuplan.i18n import N_
from gpuplan.plan.cost_breakdown import BILLING_NAMES as BILLING
from gpuplan.render import svg
from gpuplan.render.bundle.context import Ctx
from gpuplan.render.bundle.safe import Safe, md
from gpuplan.render.bundle.templates import render
from gpuplan.units import GIB, fmt_duration

SCHEMA_VERSION = 1

SPOT_NOTE = N_("Spot: a reclaimed instance is released, its data disk is kept (a separate disk, not deleted with "
               "the instance); after a reclaim, `terraform apply` creates a new instance, attaches the disk and "
               "`run-with-resume.sh` resumes from the newest checkpoint. Set the Terraform variable "
               "`oss_checkpoint_prefix` (oss://bucket/prefix) to copy each checkpoint to OSS as well.")

FILE_PURPOSES: dict[str, str] = {
    "PLAN.md": N_("this report"),
    "plan.json": N_("the plan, resolved workload and estimate (JSON contract)"),
    "memory.svg": N_("memory breakdown chart"),
    "cost-time.svg": N_("cost-versus-time chart with the Pareto front"),
    "launch.sh": N_("the plan's launcher (torchrun + train.py, or ms-swift Megatron for TP/PP); `--smoke` "
                    "rehearses it on CPU"),
    "train.py": N_("training entry point (PyTorch + transformers + peft; DDP, FSDP2, DeepSpeed; checkpoint/resume)"),
    "requirements.txt": N_("pinned Python packages for the node"),
    "data/train.jsonl": N_("sample dataset: replace with your data, same format"),
    "data/dataset_info.json": N_("LLaMA-Factory dataset entry for data/train.jsonl"),
    "data/": N_("training data: data/train.jsonl is a sample, replace it with yours (same format)"),
    "run-with-resume.sh": N_("checkpoint/resume wrapper (spot)"),
    "ds_config.json": N_("DeepSpeed config with the estimate's values"),
    "llamafactory.yaml": N_("LLaMA-Factory LoRA config"),
    "swift-sft.sh": N_("ms-swift LoRA alternative"),
    "nccl.env": N_("NCCL variables for the multi-node fabric, with sources"),
    "serve.sh": N_("vLLM server with the estimate's engine settings"),
    "Dockerfile": N_("the container image: every command the platform runs is inside"),
    "fetch-model.sh": N_("downloads the weights once (OSS, ModelScope or Hugging Face) and times it"),
    "serve_images.py": N_("online image server: FastAPI + diffusers, /v1/images/generations, /health, /metrics"),
    "function-compute/": N_("Function Compute definition: Serverless Devs s.yaml and Terraform"),
    "pai-eas/": N_("PAI-EAS service JSON with the autoscaler"),
    "serve-sglang.sh": N_("SGLang equivalent"),
    "healthcheck.sh": N_("health check for the server"),
    "cloud-init.yaml": N_("first boot: mounts, GPU check, monitoring agents"),
    "gpu-check.sh": N_("driver, CUDA, NCCL, topology and RDMA check"),
    "idle-stop.sh": N_("optional power-off when GPUs idle"),
    "terraform/": N_("VPC, vSwitch, security group, instances, disks (alicloud provider)"),
    "monitoring/": N_("Prometheus scrape config, alert rules, Grafana dashboard"),
    "k8s/": N_("ACK manifests"),
    "pai-dlc-job.json": N_("PAI-DLC CreateJob body"),
    ".service": N_("systemd unit"),
    "node-bootstrap.sh": N_("first-boot install: container runtime, NVIDIA Container Toolkit, eRDMA, driver + CUDA "
                            "(pinned)"),
    "generate_images.py": N_("diffusers batch image generation (not a chat server)"),
    "transcribe.py": N_("faster-whisper batch transcription (not a chat server)"),
    "requirements-serve.txt": N_("pinned Python packages for the batch script"),
    "autoscale/": N_("HPA, prometheus-adapter rule and ESS scaling group"),
}

# Memory components (estimate keys) as PLAN.md and memory.svg name them.
COMPONENTS = {"weights": N_("weights"), "gradients": N_("gradients"), "optimizer": N_("optimizer"),
              "activations": N_("activations"), "kv_cache": N_("kv_cache"), "adapters": N_("adapters"),
              "logits": N_("logits"), "overhead": N_("overhead")}


def tr(text: str, lang: str) -> Safe:
    """The bundle's own fixed text (trusted, not escaped), translated."""
    return Safe(i18n.tr(text, lang))


def say(text: Any, lang: str) -> Safe:
    """A sentence the plan or estimate wrote (in English: plan.json keeps it so), shown in ``lang`` and escaped."""
    return md(i18n.localize(str(text), lang))


def _money(value: Any, currency: str) -> str | None:
    if value is None or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return f"{value:,.2f} {currency}"


def _gib(value: Any) -> str:
    return f"{float(value) / GIB:.2f}" if isinstance(value, (int, float)) else "-"


def billing_label(code: str, lang: str) -> str:
    """The billing code in English (payg, spot, subscription); its name in Chinese."""
    return f"{tr(BILLING[code], lang)}" if lang != "en" and code in BILLING else code


def summary_rows(c: Ctx, plan: dict, estimate: dict) -> list[tuple[Safe, Safe]]:
    lang = c.lang
    cur = c.currency
    mem = estimate.get("memory") or {}
    if c.training:
        layout = tr("TP {tp}, PP {pp}, DP {dp}, ZeRO {zero}, FSDP {fsdp}, offload {offload}, micro-batch {micro}, "
                    "accumulation {accum}", lang).format(tp=c.tp, pp=c.pp, dp=c.dp, zero=c.zero,
                                                         fsdp=tr("none", lang) if c.fsdp == "none" else c.fsdp,
                                                         offload=tr("none", lang) if c.offload == "none" else c.offload,
                                                         micro=c.micro_batch, accum=c.grad_accum)
    else:
        layout = tr("TP {tp}, PP {pp}, {seqs} concurrent sequences, {tokens} tokens per sequence", lang).format(
            tp=c.tp, pp=c.pp, seqs=c.max_num_seqs, tokens=c.max_model_len)
    rows: list[tuple[str, str]] = [
        (N_("Platform"), str(plan.get("platform") or "ecs")),
        (N_("Instances"), f"{c.nodes} x {c.instance_type}"),
        (N_("GPUs"), f"{c.gpus_total} x {c.gpu}"),
        (N_("Parallel layout"), layout),
        (N_("Memory per GPU"), f"{_gib(plan.get('memory_per_gpu_bytes') or mem.get('per_gpu_bytes'))} GiB / "
                               f"{_gib(plan.get('capacity_per_gpu_bytes') or mem.get('capacity_bytes'))} GiB"),
    ]
    region = c.region
    if plan.get("price_region") and plan.get("price_region") != plan.get("region"):
        region = tr("{region} (price of region {price_region})", lang).format(
            region=c.region, price_region=plan.get("price_region"))
    rows.append((N_("Billing and region"), ("，" if lang == "zh" else ", ").join((billing_label(c.billing, lang), region))))
    inst_price = _money(plan.get("instance_price_per_hour"), cur)
    total_price = _money(plan.get("price_per_hour"), cur)
    if inst_price or total_price:
        rows.append((N_("Price"), tr("{instance}/h per instance, {total}/h total", lang).format(
            instance=inst_price or "-", total=total_price or "-")))
    else:
        rows.append((N_("Price"), str(tr("no price known", lang))))
    if plan.get("price_as_of"):
        rows.append((N_("Price as of"), str(plan["price_as_of"])))
    if plan.get("price_source"):
        rows.append((N_("Price source"), i18n.localize(str(plan["price_source"]), lang)))
    if c.training:
        rows.append((N_("Job time"),
                     fmt_duration(plan.get("time_s") or (estimate.get("performance") or {}).get("total_time_s"))))
        rows.append((N_("Total cost"), _money(plan.get("total_cost"), cur) or "-"))
    elif plan.get("serving"):
        sv = plan["serving"]
        rows.append((N_("Replicas"), tr("engine copies {copies}, instances {instances}", lang).format(
            copies=sv.get("engine_copies"), instances=sv.get("instances"))))
    else:
        rows.append((N_("Replicas"), str(c.replicas)))
    if not c.training:
        rows.append((N_("Monthly cost"), _money(plan.get("monthly_cost"), cur) or "-"))
        unit = plan.get("unit_cost") or {}
        if unit.get("unit") == "1M input tokens":    # prefill-only work: no output tokens to price
            rows.append((N_("Cost per million input tokens"), _money(unit.get("cost"), cur) or "-"))
        else:
            rows.append((N_("Cost per million output tokens"),
                         _money(plan.get("cost_per_million_output_tokens"), cur) or "-"))
    if plan.get("aliases"):
        rows.append((N_("Also sold as"), ", ".join(str(a) for a in plan["aliases"])))
    if plan.get("ranking_basis"):
        rows.append((N_("Ranked by"), i18n.localize(str(plan["ranking_basis"]), lang)))
    return [(tr(k, lang), md(v)) for k, v in rows]


SLA_WORDS = {True: N_("met ({targets})"), False: N_("missed ({targets})")}


def serving_items(sv: dict, lang: str) -> list[tuple[str, str | None]]:
    """What an LLM serving plan gives under its planned load (plan["serving"], plan/serving_report.py)."""
    def sec(x: Any) -> str | None:
        return tr("{value} s", lang).format(value=f"{x:.2f}") if isinstance(x, (int, float)) else None

    def ms(x: float) -> str:
        return tr("{value} ms", lang).format(value=f"{x * 1000:g}")

    ttft = (tr("{p50} (p50), {p90} (p90) under the planned load", lang).format(p50=sec(sv.get("ttft_p50_s")),
                                                                             p90=sec(sv.get("ttft_p90_s")))
            if sv.get("ttft_p90_s") is not None else None)
    target = [f"{tr('TTFT', lang)} {ms(sv['ttft_target_s'])}" if sv.get("ttft_target_s") else "",
              f"{tr('TPOT', lang)} {ms(sv['tpot_target_s'])}" if sv.get("tpot_target_s") else ""]
    sla = None
    if sv.get("sla_met") is not None:
        sla = tr(SLA_WORDS[bool(sv["sla_met"])], lang).format(
            targets=("，" if lang == "zh" else ", ").join(x for x in target if x))
    tpot = sv.get("tpot_s")
    return [(N_("TTFT"), ttft),
            (N_("TPOT"), tr("{ms} ms with the batch full", lang).format(ms=f"{tpot * 1000:.0f}") if tpot else None),
            (N_("Output tokens/s per replica"), f"{sv['output_tokens_per_s_per_replica']:,.0f}"
             if sv.get("output_tokens_per_s_per_replica") is not None else None),
            (N_("Load"), f"{sv['utilization']:.0%}" if sv.get("utilization") is not None else None),
            (N_("SLA"), sla),
            (N_("Engine"), tr("{engine}, {weights} weights, KV cache {kv}, batch limit {seqs}", lang).format(
                engine=sv.get("engine"), weights=str(sv.get("weight_format", "")).upper(),
                kv=sv.get("kv_cache_dtype"), seqs=sv.get("max_num_seqs")))]


def perf_rows(c: Ctx, estimate: dict, plan: dict | None = None) -> list[tuple[Safe, Safe]]:
    p = estimate.get("performance") or {}
    sv = (plan or {}).get("serving")

    def num(key: str, fmt: str) -> str | None:
        v = p.get(key)
        return fmt.format(v) if isinstance(v, (int, float)) and math.isfinite(v) else None

    if c.training:
        items = [(N_("Step time"), fmt_duration(p.get("step_time_s")) if p.get("step_time_s") else None),
                 (N_("Tokens/s"), num("tokens_per_s", "{:,.0f}")), (N_("MFU"), num("mfu", "{:.1%}")),
                 (N_("Communication share"), num("comm_fraction", "{:.0%}")),
                 (N_("Total time"), fmt_duration(p.get("total_time_s")) if p.get("total_time_s") else None),
                 (N_("GPU-hours"), num("gpu_hours", "{:,.1f}")),
                 (N_("Checkpoints"), tr("every {steps} steps (~{minutes} min) to {path}", c.lang).format(
                     steps=c.save_steps, minutes=c.checkpoint_minutes, path=c.checkpoint_dir))]
    elif sv:
        items = serving_items(sv, c.lang)
    else:
        items = [(N_("TTFT"), fmt_duration(p.get("ttft_s")) if p.get("ttft_s") else None),
                 (N_("TPOT"), fmt_duration(p.get("tpot_s")) if p.get("tpot_s") else None),
                 (N_("Output tokens/s"), num("output_tokens_per_s", "{:,.0f}")),
                 (N_("Max concurrency"), num("max_concurrency", "{:,.0f}")),
                 (N_("Max requests/s"), num("max_requests_per_s", "{:,.2f}"))]
    return [(tr(k, c.lang), md(v)) for k, v in items if v is not None]


def _component(key: str, lang: str) -> Safe:
    return tr(COMPONENTS[key], lang) if key in COMPONENTS else Safe(md(key))


def memory_rows(c: Ctx, estimate: dict) -> list[tuple[Safe, Safe]]:
    mem = estimate.get("memory") or {}
    comps = mem.get("components") or {}
    order = list(svg.COMPONENT_COLOURS)
    keys = sorted(comps, key=lambda k: (order.index(k) if k in order else len(order), k))
    rows = [(_component(k, c.lang), md(_gib(comps[k]))) for k in keys
            if isinstance(comps[k], (int, float)) and comps[k] > 0]
    rows.append((tr("Total", c.lang), md(_gib(mem.get("per_gpu_bytes")))))
    if mem.get("capacity_bytes"):
        rows.append((tr("capacity", c.lang), md(_gib(mem.get("capacity_bytes")))))
    return rows


def advice_lines(c: Ctx, plan: dict) -> list[Safe]:
    from gpuplan.render.bundle import report_ops

    lang = c.lang
    out: list[Safe] = []
    if c.platform in ("function-compute", "pai-eas"):   # no disks or nodes of ours: the platform runs the image
        return report_ops.platform_storage_lines(c)
    disk = ((plan.get("storage") or {}).get("disk") or {})
    details = [f"ESSD {c.data_disk_level}", f"{c.data_disk_gib} GiB"]
    if isinstance(disk.get("iops"), int):
        details.append(f"{disk['iops']:,} IOPS")
    if disk.get("throughput_mb_s"):
        details.append(f"{disk['throughput_mb_s']} MB/s")
    sep = "，" if lang == "zh" else ", "
    out.append(Safe(tr("Data disk: {details}, mounted at {path}", lang).format(
        details=md(sep.join(details)), path=md(c.data_dir))))
    if c.shared_kind:
        shared = c.shared_kind.upper() + (f" {c.shared_capacity_tib:g} TiB" if c.shared_capacity_tib else "")
        out.append(Safe(tr("Shared file system: {details}, mounted at {path}", lang).format(
            details=md(shared), path=md(c.shared_dir))))
    for note in (plan.get("storage") or {}).get("notes") or []:
        out.append(say(note, lang))
    if c.platform == "ecs":
        out += report_ops.download_lines(c, plan)
        ckpt = report_ops.checkpoint_line(c)
        if ckpt:
            out.append(ckpt)
    if c.spot and c.training and not c.shared_kind:
        out.append(tr(SPOT_NOTE, lang))
    net = plan.get("network") or {}
    if net.get("text"):
        out.append(Safe(tr("Network: {text}", lang).format(text=say(net["text"], lang))))
    host = plan.get("host")
    if isinstance(host, dict) and host:
        text = host.get("text") or ", ".join(f"{k} {v}" for k, v in host.items() if not isinstance(v, (dict, list)))
        out.append(Safe(tr("Host: {text}", lang).format(text=say(text, lang))))
    elif isinstance(host, str) and host:
        out.append(Safe(tr("Host: {text}", lang).format(text=say(host, lang))))
    return out


def _purpose(path: str, lang: str) -> Safe:
    for key, text in FILE_PURPOSES.items():
        if path == key or (key.endswith("/") and path.startswith(key)) or (key.startswith(".") and path.endswith(key)):
            return tr(text, lang)
    return Safe("")


def file_rows(paths: list[str], lang: str) -> list[tuple[Safe, Safe]]:
    seen: list[tuple[Safe, Safe]] = []
    for p in sorted(paths):
        shown = p.split("/")[0] + "/" if "/" in p else p
        if any(s[0] == shown for s in seen):
            continue
        seen.append((Safe(shown), _purpose(p, lang)))  # our own file names (slug is inert)
    return seen


def _code(text: str) -> Safe:
    """A command shown as Markdown code (the bundle's own command lines; values in them are inert)."""
    return Safe(f"`{text}`")


def platform_steps(c: Ctx, platform: str) -> list[Safe]:
    """How to launch a serving plan on ACK, Function Compute or PAI-EAS (no ECS Terraform)."""
    lang = c.lang
    if platform == "ack":
        from gpuplan.render.bundle import report_ops

        build = report_ops.image_steps(c) if c.model_kind == "diffusion" else []   # LLMs run the engine's image
        return build + [Safe(tr("Create an ACK Pro cluster with a GPU node pool of {instance_type} (pin the driver with the "
                        "node-pool label {label})", lang).format(
                    instance_type=md(c.instance_type), label="ack.aliyun.com/nvidia-driver-version")),
                _code("kubectl apply -f k8s/deployment.yaml"),
                Safe(tr("{cmd}, then {then}", lang).format(
                    cmd=_code("helm install prometheus-adapter prometheus-community/prometheus-adapter -f "
                              "autoscale/prometheus-adapter-rules.yaml"),
                    then=_code("kubectl apply -f autoscale/hpa.yaml"))),
                Safe(tr("{cmd} and delete the node pool when you are done (the ACK Pro fee runs while the cluster "
                        "exists)", lang).format(cmd=_code("kubectl delete -f k8s/deployment.yaml -f autoscale/hpa.yaml")))]
    from gpuplan.render.bundle import report_ops

    return report_ops.platform_steps(c, platform)


def steps(c: Ctx, platform: str = "ecs") -> list[Safe]:
    lang = c.lang
    if platform != "ecs" and not c.training:
        return platform_steps(c, platform)

    def step(template: str, cmd: str, **more: str) -> Safe:
        return Safe(tr(template, lang).format(cmd=_code(cmd), **{k: _code(v) for k, v in more.items()}))

    s = [step(N_("{cmd} (credentials from the environment)"),
              "cd terraform && terraform init && terraform apply -var key_name=... -var admin_cidr=..."),
         step(N_("{cmd} to every node, then {then}"), f"scp -r . root@<node>:/opt/gpuplan/{c.slug}",
              then="./gpu-check.sh")]
    if c.training:
        s.append(step(N_("{cmd} (rehearse the launcher, a checkpoint and a resume on CPU first)"),
                      "pip install -r requirements.txt && ./launch.sh --smoke"))
        if c.multi_node:
            s.append(step(N_("{cmd} on every node"), "NODE_RANK=<i> MASTER_ADDR=<node 0 private IP> ./run-with-resume.sh"))
        else:
            s.append(step(N_("{cmd} (or {alt})"), "./run-with-resume.sh", alt="./launch.sh"))
    elif c.model_kind == "diffusion" and not c.online:
        s.append(_code("pip install -r requirements-serve.txt && python3 generate_images.py --prompts prompts.txt "
                       "--out images/"))
    elif c.model_kind == "speech":
        s.append(_code("pip install -r requirements-serve.txt && python3 transcribe.py --out transcripts/ audio/*.mp3"))
    else:
        if c.model_kind != "diffusion":
            s.append(step(N_("{cmd} (checks the arguments and the model)"), "./serve.sh --dry-run"))
        unit = (f"cp gpuplan-{c.slug}.service /etc/systemd/system/ && "
                f"systemctl enable --now gpuplan-{c.slug}.service")
        s.append(step(N_("{cmd} on every node"), unit) if c.multi_node else _code(unit))
        s.append(_code("./healthcheck.sh"))
    s.append(Safe(tr("{cmd}, then import {file} into Grafana", lang).format(
        cmd=_code("promtool check config monitoring/prometheus.yml"), file="monitoring/grafana-dashboard.json")))
    s.append(step(N_("{cmd} when you are done (releases everything)"), "cd terraform && terraform destroy"))
    return s


def memory_svg(c: Ctx, estimate: dict) -> str:
    mem = estimate.get("memory") or {}
    raw = mem.get("components") or {}
    order = list(svg.COMPONENT_COLOURS)
    comps = {k: float(raw[k]) for k in sorted(raw, key=lambda k: (order.index(k) if k in order else len(order), k))
             if isinstance(raw[k], (int, float))}
    labels = {k: str(i18n.tr(COMPONENTS.get(k, k), c.lang)) for k in comps}
    return svg.memory_bar(comps, mem.get("capacity_bytes"), title=str(tr("Memory per GPU", c.lang)), labels=labels)


def _point(p: dict, chosen: bool) -> svg.Point | None:
    t, cost = p.get("time_s"), p.get("total_cost")
    if not isinstance(t, (int, float)) or not isinstance(cost, (int, float)):
        return None
    label = f"{p.get('instance_count', 1)} x {p.get('instance_type', '?')} {p.get('billing', '')}".strip()
    return svg.Point(x=t / 3600, y=float(cost), label=label, pareto=bool(p.get("pareto")), chosen=chosen)


def cost_time_svg(c: Ctx, plan: dict, pareto: list[dict] | None) -> str | None:
    points = [pt for pt in (_point(p, False) for p in (pareto or []) if p is not plan) if pt]
    mine = _point(plan, True)
    if mine is None:
        return None
    points = [p for p in points if not (p.x == mine.x and p.y == mine.y and p.label == mine.label)] + [mine]
    y_label = tr("Total cost ({currency})", c.lang).format(currency=c.currency)
    return svg.cost_time_scatter(points, title=str(tr("Cost versus time", c.lang)), x_label="h", y_label=y_label,
                                 empty=str(tr("no priced candidates", c.lang)))


def cost_rows(c: Ctx, breakdown: dict | None) -> tuple[list[dict], Safe | None]:
    """Whole-cost table rows (item, quantity, amount, source, as_of) and the total."""
    from gpuplan.plan.cost_breakdown import item_text

    if not breakdown:
        return [], None
    lang = c.lang
    rows = []
    for ln in breakdown["lines"]:
        money = _money(ln["amount"], c.currency)   # None: no price, or not a finite number
        if money is None:
            amount = str(tr("unknown", lang))
        elif ln.get("estimated"):
            amount = tr("{amount} (estimated)", lang).format(amount=money)
        else:
            amount = money
        if ln.get("note"):
            amount = tr("{amount} ({note})", lang).format(amount=amount, note=i18n.localize(str(ln["note"]), lang))
        item, quantity = item_text(ln, lang)
        source = ln.get("source")
        rows.append({"item": md(item), "quantity": md(quantity), "amount": md(amount),
                     "source": say(source, lang) if source and source != "not found" else md(tr("not found", lang)),
                     "as_of": md(ln.get("as_of") or "-")})
    total = _money(breakdown["total"], c.currency) or "-"
    per = N_("{total} per job") if breakdown["basis"] == "job" else N_("{total} per month")
    return rows, md(tr(per, lang).format(total=total))


def serving_notes(c: Ctx) -> list[Safe]:
    """What serves this model, and the quantized checkpoint it loads."""
    if c.training:
        return []
    from gpuplan.render.bundle.weights import checkpoint, is_llm

    lang = c.lang
    out: list[Safe] = []
    if c.model_kind == "diffusion" and c.online:
        from gpuplan.render.bundle import report_ops

        out.append(Safe(tr("{model} is a diffusion model: vLLM/SGLang cannot serve it. `serve_images.py` serves it "
                           "online: FastAPI + the diffusers `StableDiffusionXLPipeline`, one pipeline per GPU, "
                           "OpenAI-style {endpoint} (PNG as b64_json), {health} and {metrics}; the systemd unit and the "
                           "Deployment run it in the bundle's image (Dockerfile). `generate_images.py` stays for batch "
                           "jobs.", lang).format(model=md(c.model), endpoint="`POST /v1/images/generations`",
                                                 health="`/health`", metrics="`/metrics`")))
        out += report_ops.serving_layout_lines(c)
        return out
    if c.model_kind == "diffusion":
        out.append(Safe(tr("{model} is a diffusion model: vLLM/SGLang cannot serve it. `generate_images.py` runs the "
                           "diffusers `StableDiffusionXLPipeline` as a batch job (prompts file in, PNG files out): "
                           "{install}, then {run} ({dry_run} checks the arguments without a GPU).", lang).format(
            model=md(c.model), install="`pip install -r requirements-serve.txt`",
            run="`python3 generate_images.py --prompts prompts.txt --out images/`", dry_run="`--dry-run`")))
        return out
    if c.model_kind == "speech":
        out.append(Safe(tr("{model} is a speech model: `transcribe.py` runs faster-whisper's "
                           "`BatchedInferencePipeline` as a batch job (audio files in, .txt and .srt out): {install}, "
                           "then {run}.", lang).format(
            model=md(c.model), install="`pip install -r requirements-serve.txt`",
            run="`python3 transcribe.py --out transcripts/ audio/*.mp3`")))
        return out
    if not is_llm(c):
        out.append(md(tr("{model} is a {kind} model: no chat server is generated; serve it with your own "
                         "inference script (for example Triton or TorchServe alternatives) on these nodes.",
                         lang).format(model=c.model, kind=c.model_kind)))
        return out
    ck = checkpoint(c)
    if ck.quantized_from and ck.repo:
        out.append(md(tr("Quantized ({quantization}) plan: serve.sh loads the pre-quantized checkpoint {repo} "
                         "(of {base}; source {source}) and passes no --quantization flag, so vLLM "
                         "reads the method from its config.json and picks its Marlin kernel.", lang).format(
            quantization=c.quantization, repo=ck.repo, base=ck.quantized_from, source=ck.source)))
    elif ck.repo is None:
        out.append(md(tr("Quantized ({quantization}) plan: no official pre-quantized {quantization} checkpoint of "
                         "{model} is known, and vLLM cannot quantize to {quantization} at load time. Pick one "
                         "(or quantize with AutoAWQ / llm-compressor), check its config.json names the method, then "
                         "run MODEL=repo-or-path ./serve.sh; serve.sh stops with one line until MODEL is set.",
                         lang).format(quantization=c.quantization, model=c.model)))
    if c.multi_node:
        out.append(md(tr("One replica spans {nodes} nodes (TP {tp} x PP {pp} > {gpus} GPUs per "
                         "node): serve.sh forms a Ray cluster (rank 0 = head and API server) and runs vLLM with "
                         "--distributed-executor-backend ray; serve-sglang.sh uses "
                         "--nnodes/--node-rank/--dist-init-addr. NODE_RANK and MASTER_ADDR come from Terraform. No "
                         "Kubernetes Deployment or HPA is generated: a one-pod Deployment cannot span nodes (on ACK "
                         "use LeaderWorkerSet with the same serve.sh).", lang).format(
            nodes=c.job_nodes, tp=c.tp, pp=c.pp, gpus=c.gpus_per_node)))
    from gpuplan.render.bundle import report_ops

    out += report_ops.serving_layout_lines(c)
    return out


def node_notes(c: Ctx, platform: str = "ecs") -> list[Safe]:
    from gpuplan.render.bundle.infra import auto_release_hours, bootstrap_pins

    lang = c.lang
    if platform == "ack":
        return [md(tr("ACK GPU node pools install the NVIDIA driver and the container runtime themselves; pin the "
                      "driver with the node-pool label ack.aliyun.com/nvidia-driver-version (new and scaled-out "
                      "nodes only). The HPA adds pods; the cluster autoscaler adds nodes (minutes per GPU node).",
                      lang)),
                md(tr("Teardown: delete the Deployment and HPA, then the node pool (or the cluster); the ACK Pro "
                      "management fee is billed while the cluster exists.", lang))]
    if platform != "ecs":
        return [md(tr("No nodes to manage: the platform provides the GPU, driver and container runtime; it runs the "
                      "bundle's image (Dockerfile: the engine's image plus serve.sh). Teardown: delete the service.",
                      lang))]

    b = bootstrap_pins()
    d = b["driver"]
    values = dict(runtime=b["container_runtime"]["package"], toolkit=b["nvidia_container_toolkit"]["version"],
                  driver=d["driver_version"], cuda=d["cuda_version"], cudnn=d["cudnn_version"], script=d["script"])
    first_boot = (N_("First boot (cloud-init, node-bootstrap.sh): {runtime}, NVIDIA Container Toolkit {toolkit}, "
                     "the eRDMA driver, then NVIDIA driver {driver} + CUDA {cuda} + cuDNN {cudnn} with the Alibaba "
                     "Cloud auto-install script ({script}; it reboots the node, 10-20 minutes). After the reboot "
                     "gpuplan-node-ready.service runs gpu-check.sh (log /var/log/gpuplan-gpu-check.log) and starts "
                     "the DCGM exporter. The script version and driver triple are marked unconfirmed in ops.yaml: "
                     "check /var/log/gpuplan-bootstrap.log on the first node.") if c.erdma else
                  N_("First boot (cloud-init, node-bootstrap.sh): {runtime}, NVIDIA Container Toolkit {toolkit}, "
                     "then NVIDIA driver {driver} + CUDA {cuda} + cuDNN {cudnn} with the Alibaba Cloud auto-install "
                     "script ({script}; it reboots the node, 10-20 minutes). After the reboot "
                     "gpuplan-node-ready.service runs gpu-check.sh (log /var/log/gpuplan-gpu-check.log) and starts "
                     "the DCGM exporter. The script version and driver triple are marked unconfirmed in ops.yaml: "
                     "check /var/log/gpuplan-bootstrap.log on the first node."))
    out = [md(tr(first_boot, lang).format(**values))]
    if c.multi_node:
        out.append(Safe(tr("Multi-node: Terraform gives node i the private IP `cidrhost(vswitch_cidr, 10 + i)` and "
                           "writes `NODE_RANK` (`i mod {job_nodes}`) and `MASTER_ADDR` (rank 0 of its job) into "
                           "{env_file}; the systemd unit refuses to start without them instead of crash-looping.",
                           lang).format(job_nodes=c.job_nodes, env_file=f"`/etc/gpuplan/{c.slug}.env`")))
    if c.shared_kind == "cpfs":
        out.append(md(tr("Terraform creates the advised CPFS file system (alicloud_nas_file_system, protocol cpfs) "
                         "and its mount target; set cpfs_mount to mount an existing one instead.", lang)))
    elif c.shared_kind == "nas":
        out.append(md(tr("Terraform creates the advised NAS file system and its mount target.", lang)))
    from gpuplan.render.bundle import report_ops

    hours = auto_release_hours(c)
    release = report_ops.auto_release_line(c)
    if hours and release:
        out.append(release)
    elif c.billing != "subscription":
        out.append(md(tr("Auto-release: off for a long-running service (set auto_release_hours to release the "
                         "instances that many hours after apply); idle-stop.sh powers a node off when its GPUs idle "
                         "(IDLE_STOP_ENABLED=1).", lang)))
    else:
        out.append(md(tr("Subscription instances are not auto-released: they run until the period ends.", lang)))
    out.append(report_ops.teardown_line(c))
    return out


def plan_markdown(c: Ctx, plan: dict, estimate: dict, rejected: list[dict] | None, paths: list[str],
                  chart: bool, breakdown: dict | None = None) -> str:
    """PLAN.md in the bundle's language: sentences and units (durations: 秒, 小时) alike."""
    with i18n.use_lang(c.lang):
        return _plan_markdown(c, plan, estimate, rejected, paths, chart, breakdown)


def _plan_markdown(c: Ctx, plan: dict, estimate: dict, rejected: list[dict] | None, paths: list[str],
                   chart: bool, breakdown: dict | None) -> str:
    title = md(c.name) if c.name else Safe(c.slug)
    platform = str(plan.get("platform") or "ecs")
    rej = [{"instance_type": md(r.get("instance_type", "")), "code": md(r.get("code", "")),
            "reason": say(r.get("reason", ""), c.lang)} for r in (rejected or []) if isinstance(r, dict)]
    rows, total = cost_rows(c, breakdown)
    return render("PLAN.md.j2", _=lambda s: tr(s, c.lang), title=title, summary=summary_rows(c, plan, estimate),
                  why=[say(w, c.lang) for w in (plan.get("why") or [])], rejected=rej, memory_rows=memory_rows(c, estimate),
                  chart=chart, perf_rows=perf_rows(c, estimate, plan), advice=advice_lines(c, plan),
                  assumptions=[say(a, c.lang) for a in (estimate.get("assumptions") or [])],
                  warnings=[say(w, c.lang) for w in dict.fromkeys(list(plan.get("warnings") or []) +
                                                                  list(estimate.get("warnings") or []))],
                  files=file_rows(paths, c.lang), steps=steps(c, platform), cost_rows=rows,
                  cost_total=total, serving_notes=serving_notes(c),
                  node_notes=node_notes(c, platform), training=_training_rows(c), recipe=recipe_rows(c, plan))


def recipe_rows(c: Ctx, plan: dict) -> list[tuple[Safe, Safe]]:
    """PLAN.md's training recipe (the plan's ``recipe`` block): what runs per step, and which fields the search
    chose; empty for serving plans and plans written before the recipe search."""
    r = plan.get("recipe") or {}
    if not r:
        return []
    bubble = f"{r['pipeline_bubble']:.1%}" if (r.get("pp") or 1) > 1 else "-"
    mfu = f"{r['mfu']:.0%}" if r.get("mfu") is not None else "-"
    rows = [(N_("Micro-batch x accumulation x DP"), f"{r['micro_batch']} x {r['gradient_accumulation']} x {r['dp']}"),
            (N_("Global batch"), tr("{seqs} sequences, {tokens} tokens per optimizer step", c.lang).format(
                seqs=r["global_batch_sequences"], tokens=f"{r['global_batch_tokens']:,}")
             if r.get("global_batch_tokens") else tr("{seqs} samples per optimizer step", c.lang).format(
                seqs=r["global_batch_sequences"])),
            (N_("Optimizer steps"), str(r["optimizer_steps"]) if r.get("optimizer_steps") else "-"),
            (N_("Pipeline bubble (idle share of a step)"), bubble), ("MFU", mfu),
            (N_("Chosen by the search"), ", ".join(f"`{f}`" for f in r.get("chosen") or []) or "-"),
            (N_("Set by you"), ", ".join(f"`{f}`" for f in r.get("pinned") or []) or "-")]
    return [(tr(k, c.lang), Safe(v)) for k, v in rows]


def _training_rows(c: Ctx) -> list[tuple[str, Safe]]:
    """PLAN.md's training section (launcher and batch arithmetic), empty for serving."""
    if not c.training:
        return []
    from gpuplan.render.bundle.training import training_rows

    return training_rows(c)


def plan_json(c: Ctx, plan: dict, workload: Any, estimate: dict, rejected: list[dict] | None,
              pareto: list[dict] | None, paths: list[str], breakdown: dict | None = None) -> str:
    """The JSON contract: schema_version, plan, workload (resolved), estimate, rejected, pareto, bundle."""
    from gpuplan.render.bundle.infra import min_driver_major

    plan_out = dict(plan)
    plan_out.setdefault("ops", {"min_driver_version": str(min_driver_major(c.gpu)), "cuda_version": None})
    if breakdown:
        from gpuplan.plan.cost_breakdown import public

        plan_out["cost_breakdown"] = [public(ln) for ln in breakdown["lines"]]
        plan_out["cost_breakdown_total"] = {k: breakdown[k] for k in ("total", "basis", "hours", "currency", "unknown")}
    est = {k: v for k, v in estimate.items() if k != "workload"}
    doc = {
        "schema_version": SCHEMA_VERSION,
        "kind": "gpuplan-plan-bundle",
        "plan": plan_out,
        "workload": workload.model_dump(mode="json"),
        "estimate": est,
        "rejected": list(rejected or []),
        "pareto": list(pareto or []),
        "bundle": {"slug": c.slug, "lang": c.lang, "files": sorted(paths + ["plan.json"])},
    }
    return json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=False, default=str) + "\n"

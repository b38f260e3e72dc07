"""PLAN.md (English or Chinese): assembled from the tables (report_rows.py), notes (report_notes.py) and steps
(report_steps.py), with the list of the bundle's files. plan.json is plan_contract.py, the charts charts.py.
"""

from __future__ import annotations

from gpuplan import i18n
from gpuplan.i18n import N_
from gpuplan.render.bundle.context import Ctx
from gpuplan.render.bundle.planmd.report_notes import advice_lines, node_notes, serving_notes
from gpuplan.render.bundle.planmd.report_rows import cost_rows, memory_rows, perf_rows, recipe_rows, summary_rows
from gpuplan.render.bundle.planmd.report_steps import steps
from gpuplan.render.bundle.planmd.report_text import say, tr
from gpuplan.render.bundle.safe import Safe, md
from gpuplan.render.bundle.templates import render

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
    "stage-weights.sh": N_("stages the weights once in your OSS bucket before the GPUs start (run it on a small "
                           "machine in the region)"),
    "fetch-model.sh": N_("downloads the weights once (OSS, ModelScope or Hugging Face) and times it"),
    "serve_images.py": N_("online image server: FastAPI + diffusers, /v1/images/generations, /health, /metrics"),
    "function-compute/": N_("Function Compute definition: Serverless Devs s.yaml and Terraform"),
    "pai-eas/": N_("PAI-EAS service JSON with the autoscaler"),
    "serve-sglang.sh": N_("SGLang equivalent"),
    "router-pd.sh": N_("router joining the prefill and decode replicas (SGLang PD disaggregation)"),
    "healthcheck.sh": N_("health check for the server"),
    "cloud-init.yaml": N_("first boot: mounts, GPU check, monitoring agents"),
    "gpu-check.sh": N_("driver, CUDA, NCCL, topology and RDMA check"),
    "idle-stop.sh": N_("optional power-off when GPUs idle"),
    "terraform/": N_("VPC, vSwitch, security group, instances, disks, a load balancer for several replicas (alicloud "
                     "provider)"),
    "monitoring/": N_("Prometheus scrape config, alert rules, Grafana dashboard"),
    "k8s/": N_("ACK manifests"),
    "pai-dlc-job.json": N_("PAI-DLC CreateJob body with its data and checkpoint mounts"),
    ".service": N_("systemd unit"),
    "node-bootstrap.sh": N_("first-boot install: container runtime, NVIDIA Container Toolkit, eRDMA, driver + CUDA "
                            "(pinned)"),
    "generate_images.py": N_("diffusers batch image generation (not a chat server)"),
    "generate_videos.py": N_("diffusers batch video generation at the plan's frames, size, steps, batch and offload, "
                             "one process per GPU, MP4 out (not a chat server)"),
    "transcribe.py": N_("faster-whisper batch transcription (not a chat server)"),
    "embed.py": N_("sentence-transformers batch embeddings at the plan's batch, one process per GPU (not a server)"),
    "requirements-serve.txt": N_("pinned Python packages for the batch script"),
    "autoscale/": N_("HPA with its PodMonitor and metrics-adapter values, ESS scaling group behind a load balancer"),
}


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
    return render("PLAN.md.j2", _=lambda s: tr(s, c.lang), title=title, summary=summary_rows(c, plan, estimate, breakdown),
                  why=[say(w, c.lang) for w in (plan.get("why") or [])], rejected=rej, memory_rows=memory_rows(c, estimate),
                  chart=chart, perf_rows=perf_rows(c, estimate, plan), advice=advice_lines(c, plan),
                  assumptions=[say(a, c.lang) for a in (estimate.get("assumptions") or [])],
                  warnings=[say(w, c.lang) for w in dict.fromkeys(list(plan.get("warnings") or []) +
                                                                  list(estimate.get("warnings") or []))],
                  files=file_rows(paths, c.lang), steps=steps(c, platform), cost_rows=rows,
                  cost_total=total, serving_notes=serving_notes(c),
                  node_notes=node_notes(c, platform), training=_training_rows(c), recipe=recipe_rows(c, plan))


def _training_rows(c: Ctx) -> list[tuple[str, Safe]]:
    """PLAN.md's training section (launcher and batch arithmetic), empty for serving."""
    if not c.training:
        return []
    from gpuplan.render.bundle.training import training_rows

    return training_rows(c)


"""PLAN.md's notes: storage, network and host advice, what serves the model, and the nodes (first boot, teardown)."""

from __future__ import annotations

from gpuplan.i18n import N_
from gpuplan.plan.advice.storage import shared_fs_label
from gpuplan.render.bundle.context import Ctx
from gpuplan.render.bundle.planmd.report_text import say, tr
from gpuplan.render.bundle.safe import Safe, md

SPOT_NOTE = N_("Spot: a reclaimed instance is released, its data disk is kept (a separate disk, not deleted with "
               "the instance); after a reclaim, `terraform apply` creates a new instance, attaches the disk and "
               "`run-with-resume.sh` resumes from the newest checkpoint. Set the Terraform variable "
               "`oss_checkpoint_prefix` (oss://bucket/prefix) to copy each checkpoint to OSS as well.")


def advice_lines(c: Ctx, plan: dict) -> list[Safe]:
    from gpuplan.render.bundle.planmd import report_ops

    from gpuplan.render.bundle.planmd import report_env

    lang = c.lang
    out: list[Safe] = report_env.environment_lines(c) + report_env.weights_lines(c)
    if c.platform in ("function-compute", "pai-eas"):   # no disks or nodes of ours: the platform runs the image
        return out + report_ops.platform_storage_lines(c)
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
        shared = shared_fs_label(c.shared_kind, lang) + (
            f" {c.shared_capacity_gib:,} GiB" if c.shared_capacity_gib else
            f" {c.shared_capacity_tib:g} TiB" if c.shared_capacity_tib else "")
        out.append(Safe(tr("Shared file system: {details}, mounted at {path}", lang).format(
            details=md(shared), path=md(c.shared_dir))))
    for note in (plan.get("storage") or {}).get("notes") or []:
        out.append(say(note, lang))
    budget = report_env.storage_budget_line(c, plan)
    if budget:
        out.append(budget)
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


def _batch_steps(c: Ctx) -> dict[str, str]:
    """A batch job's two commands on the node: build the bundle's image, run the script in it (report_steps)."""
    from gpuplan.render.bundle.planmd.report_steps import batch_command

    build, run = batch_command(c).split(" && ", 1)
    return {"install": f"`{build}`", "run": f"`{run}`"}


def serving_notes(c: Ctx) -> list[Safe]:
    """What serves this model, and the quantized checkpoint it loads."""
    if c.training:
        return []
    from gpuplan.render.bundle.node.weights import checkpoint, is_llm
    from gpuplan.render.bundle.serving import image_launch, pooling_tokens

    lang = c.lang
    out: list[Safe] = []
    if c.model_kind == "diffusion" and c.online:
        from gpuplan.render.bundle.planmd import report_ops

        steps, height, width = image_launch(c)
        out.append(Safe(tr("{model} is a diffusion model: vLLM/SGLang cannot serve it. `serve_images.py` serves it "
                           "online: FastAPI + the diffusers pipeline its weights name (`DiffusionPipeline`), one "
                           "pipeline per GPU, {steps} steps at {width}x{height} px by default (what the plan timed), "
                           "OpenAI-style {endpoint} (PNG as b64_json), {health} and {metrics}; the systemd unit and the "
                           "Deployment run it in the bundle's image (Dockerfile). `generate_images.py` stays for batch "
                           "jobs.", lang).format(model=md(c.model), endpoint="`POST /v1/images/generations`",
                                                 health="`/health`", metrics="`/metrics`", steps=steps,
                                                 width=width, height=height)))
        out += report_ops.serving_layout_lines(c)
        return out
    if c.video:
        from gpuplan.render.bundle.video import video_launch

        v = video_launch(c)
        assert v is not None
        out.append(Safe(tr("{model} is a video diffusion model: vLLM/SGLang cannot serve it. `generate_videos.py` runs "
                           "its diffusers pipeline as a batch job (prompts file in, one H.264 MP4 per prompt out) with "
                           "what the plan estimated: {frames} frames at {width}x{height}, {steps} steps, {batch} "
                           "video(s) per pipeline call, CPU offload {offload}, one process per GPU: {install}, then "
                           "{run} ({dry_run} checks the arguments without a GPU).", lang).format(
            model=md(c.model), frames=v.frames, width=v.width, height=v.height, steps=v.steps,
            batch=max(1, c.max_num_seqs), offload=f"`{v.offload}`", **_batch_steps(c), dry_run="`--dry-run`")))
        return out
    if c.model_kind == "diffusion":
        steps, height, width = image_launch(c)
        out.append(Safe(tr("{model} is a diffusion model: vLLM/SGLang cannot serve it. `generate_images.py` runs the "
                           "diffusers pipeline its weights name (`DiffusionPipeline`) as a batch job (prompts file in, "
                           "PNG files out) at what the plan timed, {steps} steps at {width}x{height} px: {install}, "
                           "then {run} ({dry_run} checks the arguments without a GPU).", lang).format(
            model=md(c.model), **_batch_steps(c), dry_run="`--dry-run`", steps=steps, width=width, height=height)))
        return out
    if c.embed_job:
        out.append(Safe(tr("{model} is an embedding (encoder-only) model: `embed.py` runs sentence-transformers as a "
                           "batch job at the plan's {batch} texts per forward, one process per GPU (documents in as "
                           ".jsonl or text, float16 .npy parts out, resumable): {install}, then {run}.", lang).format(
            model=md(c.model), batch=c.max_num_seqs, **_batch_steps(c))))
        return out
    if c.model_kind == "speech":
        out.append(Safe(tr("{model} is a speech model: `transcribe.py` runs faster-whisper's "
                           "`BatchedInferencePipeline` as a batch job (audio files in, .txt and .srt out): {install}, "
                           "then {run}.", lang).format(
            model=md(c.model), **_batch_steps(c))))
        return out
    if c.model_kind == "encoder":    # an embedding / reranker service: vLLM's pooling runner, as an LLM's server
        out.append(Safe(tr("{model} is an encoder-only (embedding or reranker) model: `serve.sh` runs vLLM's pooling "
                           "runner ({runner}), which batches up to {batch} waiting prompts per forward ({seqs}, "
                           "{tokens}: the batch limit the plan's replicas were sized with) and answers {embed} "
                           "(embedding models) or {score} and {rerank} (rerankers); the systemd unit runs it in the "
                           "bundle's image (Dockerfile), `healthcheck.sh` checks it.", lang).format(
            model=md(c.model), runner="`--runner pooling`", batch=c.max_num_seqs,
            seqs=md(f"--max-num-seqs {c.max_num_seqs}"),
            tokens=md(f"--max-num-batched-tokens {pooling_tokens(c)}"), embed="`POST /v1/embeddings`",
            score="`POST /score`", rerank="`POST /rerank`")))
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
    if c.pd:
        out.append(md(tr("Prefill/decode disaggregation: of the {replicas} replicas, {prefill} read the prompts and "
                         "{decode} generate (their KV cache travels over RDMA by Mooncake). Start serve-sglang.sh with "
                         "PD_ROLE=prefill on the prefill replicas and PD_ROLE=decode on the decode replicas, then "
                         "router-pd.sh with their addresses: clients talk to the router.", lang).format(
            replicas=c.replicas, prefill=c.pd.get("prefill_replicas"), decode=c.pd.get("decode_replicas"))))
    from gpuplan.render.bundle.planmd import report_ops

    out += report_ops.serving_layout_lines(c)
    return out


def node_notes(c: Ctx, platform: str = "ecs") -> list[Safe]:
    from gpuplan.render.bundle.cloud.infra import auto_release_hours, bootstrap_pins

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
        # a review of a multi-node bundle: the nodes mount over NFS, which CPFS serves only through a protocol service
        out.append(md(tr("Terraform creates the advised CPFS General-purpose file system (advance_200, cpfs_capacity_gib "
                         "GiB) with an NFS protocol service and an export directory, and no POSIX mount target (that "
                         "needs the CPFS-POSIX client and creates three pay-as-you-go ECS instances). The provider does "
                         "not return the export's address, so the launch takes two applies (How to launch): the nodes "
                         "mount the export at cpfs_mount, and without it the training unit does not start. Alibaba lists "
                         "Ubuntu 20.04 and older for its CPFS-NFS client; the nodes' stock NFS client (Ubuntu 22.04) "
                         "mounts the export over NFSv3, unconfirmed by Alibaba. The file system, the protocol service "
                         "and the export bill until terraform destroy.", lang)))
    elif c.shared_kind == "nas":
        out.append(md(tr("Terraform creates the advised NAS file system and its mount target.", lang)))
    elif c.shared_kind == "extreme_nas":
        out.append(md(tr("Terraform creates the advised Extreme NAS file system (nas_capacity_gib GiB: its bandwidth "
                         "grows with the capacity) and its mount target; the nodes mount it over NFSv3 with the stock "
                         "client. It is billed on its capacity from creation until terraform destroy.", lang)))
    from gpuplan.render.bundle.planmd import report_ops

    hours = auto_release_hours(c)
    release = report_ops.auto_release_line(c)
    if hours and release:
        out.append(release)
    elif c.billing != "subscription":
        out.append(md(tr("Auto-release: off for a long-running service (set auto_release_hours to release the "
                         "instances that many hours after apply); idle-stop.sh powers a node off when its GPUs idle "
                         "(IDLE_STOP_ENABLED=1).", lang)))
    else:
        renew = "Normal" if c.training else "AutoRenewal"
        out.append(md(tr("Subscription instances are not auto-released: they run until the period ends, then "
                         "renewal_status decides ({renew} here: {what}; Normal lets them expire and stop).", lang).format(
            renew=renew, what=tr("renewed month by month, so the service keeps running", lang) if renew == "AutoRenewal"
            else tr("they expire unless renewed by hand", lang))))
    out.append(report_ops.teardown_line(c))
    return out


"""PLAN.md's operational sentences: downloads, checkpoints, auto-release, teardown, the serving layout and the
platform deployment steps. Fixed sentences are msgids (translated with :func:`tr`), values escaped with ``md``.
"""

from __future__ import annotations

from gpuplan.estimate.intervals import COVERAGE_TEXT
from gpuplan.i18n import N_
from gpuplan.plan.advice.storage import shared_fs_label
from gpuplan.render.bundle.context import Ctx
from gpuplan.render.bundle.safe import Safe, md
from gpuplan.units import fmt_duration

PLATFORM_NAMES = {"function-compute": N_("Function Compute"), "pai-eas": N_("PAI-EAS")}
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "image-server": "serve_images.py"}


def tr(text: str, lang: str) -> Safe:
    from gpuplan import i18n

    return Safe(i18n.tr(text, lang))


def _code(text: str) -> Safe:
    return Safe(f"`{text}`")


def _gb(n_bytes: float | None) -> str:
    return f"{(n_bytes or 0) / 1e9:,.0f}"


def download_lines(c: Ctx, plan: dict) -> list[Safe]:
    """Where the weights come from and how long the download takes on this plan's nodes (ECS): the figure the plan's
    fixed costs count (gpuplan.plan.money.transfer.node_start), and the OSS alternative."""
    from gpuplan.plan.money.transfer import MB, transfer_s
    from gpuplan.render.bundle.node.transfer import transfers

    t = transfers(c)
    lang = c.lang
    out: list[Safe] = []
    if t.download_bytes and t.download_s and c.weights_staged:
        ws = plan.get("weights_staging") or {}
        out.append(md(tr("Model download: the plan counts the weights ({gb} GB) staged once in your OSS bucket before "
                         "the GPUs start (./stage-weights.sh on a small machine in the region: about {stage}), then "
                         "copied by fetch-model.sh over the VPC at about {oss} MB/s: about {time} per node, instead of "
                         "{hub} per node from the hub at {mbit} Mbit/s. fetch-model.sh refuses to start without "
                         "MODEL_OSS (Terraform variable model_oss_prefix).", lang).format(
            gb=_gb(t.download_bytes), stage=fmt_duration(ws.get("staging_s") or 0.0), oss=f"{t.oss_mb_s:g}",
            time=fmt_duration(t.download_s), hub=fmt_duration(ws.get("hub_download_s") or 0.0),
            mbit=t.bandwidth_mbit)))
    elif t.download_bytes and t.download_s:
        oss_s = transfer_s(t.download_bytes, t.oss_mb_s * MB)
        out.append(md(tr("Model download: {gb} GB per node at {mbit} Mbit/s of public bandwidth (pay-by-traffic; inbound "
                         "traffic is free): about {time}. With the weights staged in OSS (Terraform variable "
                         "model_oss_prefix), fetch-model.sh copies them over the VPC at about {oss} MB/s ({oss_time}).",
                         lang).format(gb=_gb(t.download_bytes), mbit=t.bandwidth_mbit, time=fmt_duration(t.download_s),
                                      oss=f"{t.oss_mb_s:g}", oss_time=fmt_duration(oss_s))))
    return out


def platform_storage_lines(c: Ctx) -> list[Safe]:
    """Function Compute / PAI-EAS: the weights are staged once in OSS and mounted read-only at every start."""
    from gpuplan.render.bundle.cloud.deploy import MODEL_MOUNT

    lang = c.lang
    where = "function-compute/s.yaml" if c.platform == "function-compute" else "pai-eas/service.json"
    return [Safe(tr("Each instance loads the weights ({gb} GB) from your OSS bucket, mounted read-only at {path} "
                  "(MODEL_DIR), so no start downloads them: stage them once (run {fetch} in the region with MODEL_DIR "
                  "set to a local folder, then {copy}) and name the bucket in {file}.", lang).format(
        gb=_gb(c.model_bytes), path=_code(MODEL_MOUNT), fetch=_code("./fetch-model.sh"),
        copy=_code("ossutil cp -r <folder>/ oss://<bucket>/models/" + c.slug + "/"), file=_code(where)))]


def checkpoint_line(c: Ctx) -> Safe | None:
    """Where a training run's checkpoints live, and why they outlive the instance."""
    if not c.training:
        return None
    lang = c.lang
    if c.shared_kind:
        text = tr("Checkpoints: {path} on the shared {kind} file system, which outlives the instances; set the "
                  "Terraform variable oss_checkpoint_prefix to copy each one to OSS as well.", lang)
        return md(text.format(path=c.checkpoint_dir, kind=shared_fs_label(c.shared_kind, lang)))
    text = tr("Checkpoints: {path} on the data disk, a separate ESSD (alicloud_ecs_disk, delete_with_instance = false) "
              "that survives an auto-release or a spot reclaim and is attached again by the next terraform apply; set "
              "oss_checkpoint_prefix to copy each one to OSS as well.", lang)
    return md(text.format(path=c.checkpoint_dir))


def auto_release_line(c: Ctx) -> Safe | None:
    from gpuplan.render.bundle.node.transfer import transfers

    t = transfers(c)
    if not t.release_hours:
        return None
    text = (N_("Auto-release: ECS releases the instances {hours} h after terraform apply: first boot {boot} (start-up "
               "{start} + the driver install and its reboot {driver} + image pull {pull}, as the plan's fixed costs "
               "count them) + your launch steps {operator} + model download {download} + the input copied from OSS "
               "{input} + the run {run} + the output upload to OSS {upload}, rounded up (auto_release_time; variable auto_release_hours, 0 = never). "
               "The data disk and the outputs on it survive the release. idle-stop.sh can also power a node off when "
               "its GPUs stay idle (IDLE_STOP_ENABLED=1).") if c.batch_job else
            N_("Auto-release: ECS releases the instances {hours} h after terraform apply: first boot {boot} (start-up "
               "{start} + the driver install and its reboot {driver} + image pull {pull}, as the plan's fixed costs "
               "count them) + your launch steps {operator} + model download {download} + the run {run} + checkpoint "
               "upload {upload}, rounded up (auto_release_time; variable auto_release_hours, 0 = never). idle-stop.sh can also power a node off "
               "when its GPUs stay idle (IDLE_STOP_ENABLED=1)."))
    if t.release_at_high_end:
        run = tr(N_("{wait} (the high end of its {cover} range; {job} estimated)"), c.lang).format(
            wait=_duration(t.release_run_s), cover=COVERAGE_TEXT, job=_duration(t.job_s))
    else:
        run = f"{_duration(t.job_s)} x {1 + t.margin:g}"
    return md(tr(text, c.lang).format(
        hours=t.release_hours, boot=_duration(t.bootstrap_s), start=_duration(t.boot_s), pull=_duration(t.image_pull_s),
        driver=_duration(t.driver_install_s), download=_duration(t.download_s), input=_duration(t.input_s),
        run=run, upload=_duration(t.upload_s), operator=_duration(t.operator_s)))


def _duration(seconds: float | None) -> str:
    """fmt_duration, with nothing to move shown as 0 s (not "0.0 ms")."""
    return fmt_duration(seconds) if seconds and seconds >= 1 else "0 s"


def teardown_line(c: Ctx) -> Safe:
    lang = c.lang
    text = (N_("Teardown: terraform destroy (in terraform/) releases the instances, the data disks, the shared file "
               "system and the network. The data disks survive an auto-release or a spot reclaim, not a destroy: copy "
               "checkpoints or outputs you need to OSS first.") if c.shared_kind else
            N_("Teardown: terraform destroy (in terraform/) releases the instances, the data disks and the network. The "
               "data disks survive an auto-release or a spot reclaim, not a destroy: copy checkpoints or outputs you "
               "need to OSS first."))
    out = tr(text, lang)
    if c.billing == "subscription":
        out = Safe(out + " " + tr("Subscription instances are destroyed with force_delete = true: the unused part of "
                                  "the paid period is refunded only under Alibaba Cloud's unsubscription rules "
                                  "(assume it is not).", lang))
    return md(out)


def serving_layout_lines(c: Ctx) -> list[Safe]:
    """How the planned model copies are started: one engine with its DP flag per node, one pod per copy on ACK."""
    from gpuplan.render.bundle.cloud.k8s import pod_layout
    from gpuplan.render.bundle.cloud.monitoring import served_engine
    from gpuplan.render.bundle.serving import engine_dp, engine_values

    lang = c.lang
    engine = served_engine(c)
    if not engine:
        return []
    out: list[Safe] = []
    if c.engine_planned != c.engine and engine != "image-server":
        out.append(md(tr("The plan names the {planned} engine; the bundle renders vLLM and SGLang only, so it serves "
                         "with vLLM (same layout and limits).", lang).format(planned=c.engine_planned)))
    dp = engine_dp(c)
    if engine != "image-server" and dp > 1:
        flag = "--dp-size" if c.engine == "sglang" else "--data-parallel-size"
        out.append(md(tr("Each node serves {dp} data-parallel copies of TP {tp} x PP {pp} ({gpus} GPUs) from one engine "
                         "behind one endpoint ({flag} {dp}).", lang).format(
            dp=dp, tp=c.tp, pp=c.pp, gpus=dp * c.tp * c.pp, flag=flag)))
    if c.platform in ("ecs", "ack") and not c.multi_node:
        pods, gpus, _dp = pod_layout(c)
        if c.copies_per_node > 1:
            out.append(md(tr("On ACK each model copy is a pod ({gpus} GPU(s), {cpu} vCPUs and {mem} GiB requested: "
                             "the node's share for one of its {copies} copies) and the Service spreads requests over "
                             "the {pods} pods.", lang).format(
                gpus=gpus, cpu=_share(c.vcpus, gpus, c), mem=_share(c.memory_gib, gpus, c), copies=c.copies_per_node,
                pods=pods)))
    note = engine_values(c)["dtype_note"] if engine != "image-server" else None
    if note:
        out.append(md(str(note)))
    name = ENGINE_NAMES.get(engine, engine)
    if c.platform in ("ecs", "ack"):   # the bundles that carry monitoring/ (FC and EAS bring their own)
        out.append(md(tr("Monitoring: Prometheus scrapes the deployed server only ({engine} on port {port}, /metrics); "
                         "alerts fire on p95 latency above the SLA and on long queues.", lang).format(
            engine=name, port=c.serve_port)))
    return out


def _share(total: float | int | None, gpus: int, c: Ctx) -> str:
    from gpuplan.render.bundle.cloud.k8s import NODE_ALLOCATABLE_SHARE

    if not total:
        return "-"
    return str(max(1, int(total * NODE_ALLOCATABLE_SHARE * min(1.0, gpus / max(1, c.gpus_per_node)))))


def image_steps(c: Ctx) -> list[Safe]:
    from gpuplan.render.bundle.node.images import image_ref

    ref = image_ref(c)
    return [Safe(tr("{cmd} (replace your-namespace with your Container Registry namespace in {region})", c.lang).format(
        cmd=_code(f"docker build -t {ref} . && docker push {ref}"), region=md(c.region)))]


def platform_steps(c: Ctx, platform: str) -> list[Safe]:
    """How to deploy a serving plan on Function Compute or PAI-EAS from the bundle's definition files."""
    lang = c.lang
    name = tr(PLATFORM_NAMES.get(platform, "PAI-EAS"), lang)
    steps = [Safe(tr("{cmd} (checks the arguments and the model)", lang).format(cmd=_code("./serve.sh --dry-run")))]
    # every instance mounts the weights from OSS read-only: an empty prefix crash-loops the billed instances
    where = "function-compute/s.yaml" if platform == "function-compute" else "pai-eas/service.json"
    steps.append(Safe(tr("Stage the weights once in your OSS bucket before the service starts: {fetch} on a machine in "
                         "the region with MODEL_DIR set to a local folder, then {copy}; name the bucket in {file} (its "
                         "instances mount it read-only and download nothing)", lang).format(
        fetch=_code("MODEL_DIR=/data/stage ./fetch-model.sh"),
        copy=_code("ossutil cp -r /data/stage/ oss://<bucket>/models/" + c.slug + "/"), file=_code(where))))
    steps += image_steps(c)
    if platform == "function-compute":
        steps.append(Safe(tr("{cmd} (Serverless Devs; IMAGE=<the pushed image>, optional API_KEY and HF_TOKEN in your "
                             "environment) or {alt}", lang).format(
            cmd=_code("cd function-compute && s deploy"),
            alt=_code("cd function-compute/terraform && terraform init && terraform apply"))))
    else:
        steps.append(Safe(tr("{cmd} (the service JSON with the instance type, replicas and the QPS autoscaler)",
                             lang).format(cmd=_code("eascmd create pai-eas/service.json"))))
    steps.append(Safe(tr("Delete the {platform} service when you are done (billing follows the instances it keeps)",
                         lang).format(platform=name)))
    return steps

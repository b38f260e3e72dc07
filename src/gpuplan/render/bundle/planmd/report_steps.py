"""PLAN.md's steps: the commands that launch the plan, on ECS (Terraform) or on a serving platform."""

from __future__ import annotations

from gpuplan.i18n import N_
from gpuplan.render.bundle.context import Ctx
from gpuplan.render.bundle.planmd.report_text import tr
from gpuplan.render.bundle.safe import Safe, md


def _code(text: str) -> Safe:
    """A command shown as Markdown code (the bundle's own command lines; values in them are inert)."""
    return Safe(f"`{text}`")


def platform_steps(c: Ctx, platform: str) -> list[Safe]:
    """How to launch a serving plan on ACK, Function Compute or PAI-EAS (no ECS Terraform)."""
    lang = c.lang
    if platform == "ack":
        from gpuplan.render.bundle.cloud.infra import bootstrap_pins, required_driver_major
        from gpuplan.render.bundle.planmd import report_ops

        # every pod runs the bundle's image (the Deployment names it): built and pushed to the region's registry first
        return report_ops.image_steps(c) + [
                Safe(tr("Create an ACK Pro cluster with a GPU node pool of {instance_type} that auto scales up to "
                        "{nodes} node(s) (autoscale/README.md: the pool's minimum; the image's CUDA needs NVIDIA "
                        "driver {major} or newer: pin it with the node-pool label {label}, e.g. {pinned}, the version "
                        "ECS nodes of this plan install), and let its nodes pull from your registry namespace (the ACK "
                        "add-on aliyun-acr-credential-helper, or an imagePullSecret)", lang).format(
                    instance_type=md(c.instance_type), nodes=c.nodes, label="ack.aliyun.com/nvidia-driver-version",
                    major=required_driver_major(c), pinned=bootstrap_pins()["driver"]["driver_version"])),
                _code("kubectl apply -f k8s/deployment.yaml"),
                Safe(tr("Metrics for the autoscaler: enable the ACK add-ons ack-arms-prometheus and "
                        "ack-alibaba-cloud-metrics-adapter (its values: {values}, with your Prometheus address), "
                        "then {cmd}", lang).format(
                    values=_code("autoscale/metrics-adapter-values.yaml"),
                    cmd=_code("kubectl apply -f autoscale/podmonitor.yaml -f autoscale/hpa.yaml"))),
                Safe(tr("{cmd} and delete the node pool when you are done (the ACK Pro fee runs while the cluster "
                        "exists)", lang).format(cmd=_code("kubectl delete -f k8s/deployment.yaml -f autoscale/hpa.yaml")))]
    from gpuplan.render.bundle.planmd import report_ops

    return report_ops.platform_steps(c, platform)


def local_image(c: Ctx) -> str:
    """The tag the node builds the bundle's image under (the systemd unit's, so a build is reused)."""
    return f"gpuplan/{c.slug}:bundle"


BATCH_RUNS = {"speech": "transcribe.py --out {data}/transcripts {data}/audio/*.mp3",
              "diffusion": "generate_images.py --prompts {data}/prompts.txt --out {data}/images/",
              "video": "generate_videos.py --prompts {data}/prompts.txt --out {data}/videos/",
              "encoder": "embed.py --out {data}/embeddings {data}/docs/*.jsonl"}


def batch_container(c: Ctx) -> str:
    """The name a batch job's container runs under (docker logs / docker wait read it)."""
    return f"gpuplan-{c.slug}-job"


def batch_command(c: Ctx) -> str:
    """A batch job (speech, diffusion, embeddings) on an ECS node: its script in the bundle's image on the GPUs, with the data disk
    (weights in MODEL_DIR, inputs, outputs) mounted at the same path. Detached (an SSH session that drops does not stop
    it) and restarted after a failure: the scripts skip the parts already written."""
    from gpuplan.render.bundle.cloud.infra import docker_volumes

    run = BATCH_RUNS["video" if c.video else c.model_kind].format(data=c.data_dir)
    return (f"docker build -t {local_image(c)} . && docker run -d --name {batch_container(c)} --restart on-failure:3 "
            f"--gpus all {docker_volumes(c)} {local_image(c)} python3 /opt/gpuplan/{run}")


def steps(c: Ctx, platform: str = "ecs") -> list[Safe]:
    lang = c.lang
    if platform != "ecs" and not c.training:
        return platform_steps(c, platform)

    def step(template: str, cmd: str, **more: str) -> Safe:
        return Safe(tr(template, lang).format(cmd=_code(cmd), **{k: _code(v) for k, v in more.items()}))

    s = [step(N_("{cmd} on a small machine in the region with ossutil, before any GPU starts (the plan counted the "
                 "weights staged once in OSS, not downloaded from the hub by every node)"),
              "MODEL_OSS=oss://<bucket>/<prefix> ./stage-weights.sh")] if c.weights_staged else []
    oss_var = " -var model_oss_prefix=oss://<bucket>/<prefix>" if c.weights_staged else ""
    if c.shared_kind == "cpfs":
        # the provider creates the CPFS NFS export without returning its address: a first apply creates the file
        # system and its export, the user reads the address, the second apply starts the nodes with it
        s.append(step(N_("{cmd} (credentials from the environment): the CPFS file system, its NFS protocol service and "
                         "export, no GPU yet"),
                      "cd terraform && terraform init && terraform apply -target=alicloud_nas_protocol_mount_target.cpfs"))
        s.append(Safe(tr("read the export's mount address and path (CPFS console: the file system > Protocol Service > "
                         "Export Directory) and pass it as {var} below", lang).format(var=_code("cpfs_mount"))))
        oss_var += " -var cpfs_mount=<address>:<path>"
    s += [step(N_("{cmd} (credentials from the environment)"),
               f"cd terraform && terraform init && terraform apply -var key_name=... -var admin_cidr=...{oss_var}"),
          step(N_("{cmd} to every node, then {then}"), f"scp -r . root@<node>:/opt/gpuplan/{c.slug}",
               then="./gpu-check.sh")]
    unit = (f"cp gpuplan-{c.slug}.service /etc/systemd/system/ && "
            f"systemctl enable --now gpuplan-{c.slug}.service")
    if c.training:
        # Everything runs in the bundle's image (the node's Python is not the image's): the rehearsal, then the unit,
        # which builds the same image, fetches the weights and runs run-with-resume.sh in it (NODE_RANK and
        # MASTER_ADDR come from cloud-init's env file on every node).
        s.append(step(N_("{cmd} (rehearse the launcher, a checkpoint and a resume on CPU first)"),
                      f"docker build -t {local_image(c)} . && docker run --rm --ipc=host {local_image(c)} bash "
                      "/workspace/launch.sh --smoke"))
        s.append(step(N_("{cmd} on every node"), unit) if c.multi_node else _code(unit))
    elif (c.model_kind in ("diffusion", "speech") and not c.online) or c.embed_job:
        s.append(_code(batch_command(c)))
        s.append(step(N_("{cmd} follows it (the job runs detached: a dropped SSH session does not stop it, and a failed "
                         "run restarts up to 3 times, skipping the parts already written); {wait} returns when it ends"),
                      f"docker logs -f {batch_container(c)}", wait=f"docker wait {batch_container(c)}"))
    else:
        if c.model_kind != "diffusion":
            s.append(step(N_("{cmd} (checks the arguments and the model)"), "./serve.sh --dry-run"))
        s.append(step(N_("{cmd} on every node"), unit) if c.multi_node else _code(unit))
        s.append(_code("./healthcheck.sh"))
        from gpuplan.render.bundle.cloud.infra import behind_load_balancer

        if behind_load_balancer(c):
            s.append(step(N_("{cmd}: the one address of all replicas (the load balancer sends requests only to "
                             "replicas whose /health answers)"), "cd terraform && terraform output api_endpoint"))
    s.append(Safe(tr("{cmd}, then import {file} into Grafana", lang).format(
        cmd=_code("promtool check config monitoring/prometheus.yml"), file="monitoring/grafana-dashboard.json")))
    s.append(step(N_("{cmd} when you are done (releases everything)"), "cd terraform && terraform destroy"))
    return s


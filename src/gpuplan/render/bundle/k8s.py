"""Kubernetes (ACK) manifests and the PAI-DLC job specification.

- Training: an Indexed Job (one pod per node, ``JOB_COMPLETION_INDEX`` = node rank) behind a
  headless Service so node 0 is reachable as ``<job>-0.<job>``
  (https://kubernetes.io/docs/concepts/workloads/controllers/job/#completion-mode).
- Serving: a Deployment and a ClusterIP Service, probes on vLLM's /health.
- eRDMA on ACK: pods request ``aliyun/erdma`` (ACK eRDMA controller), run with hostNetwork and
  the IPC_LOCK capability (https://www.alibabacloud.com/help/en/ack/ack-managed-and-ack-dedicated/user-guide/add-an-erdma-node-to-the-ack ,
  https://github.com/AliyunContainerService/alibabacloud-erdma-controller).
- GPUs: ``nvidia.com/gpu`` limits; nodes chosen by the well-known label
  ``node.kubernetes.io/instance-type``.
- PAI-DLC: the body of the CreateJob API
  (https://www.alibabacloud.com/help/en/pai/developer-reference/api-pai-dlc-2020-12-03-createjob), with
  ``DataSources`` (CreateJobRequestDataSources: ``Uri``, ``MountPath``, ``MountAccess``; an OSS URI
  ``oss://<bucket>.oss-<region>-internal.aliyuncs.com/<path>/`` or a NAS/CPFS URI ``nas://<file-system-id>.<region>/``,
  alibabacloud pai-dlc 2020-12-03 SDK models and ALIYUN::PAI::Dataset ``Uri``): the data disk's folder (dataset,
  weights, checkpoints without shared storage) and the shared file system (checkpoints) outlive the job's pods.
- Training data and output on ACK: the PersistentVolumeClaims ``<job>-data`` (at the data folder: dataset, weights)
  and ``<job>-checkpoints`` (at the checkpoint folder), NAS or CPFS volumes the user creates.

Kubernetes expands ``$(VAR)`` in command, args and env values; user strings are written with
``$`` doubled (:func:`k8s_text`) so they stay literal.
"""

from __future__ import annotations

import json

import yaml

from gpuplan.render.bundle.context import Ctx
from gpuplan.render.bundle.images import image_ref

# Placeholders the user replaces (PLAN.md, like the image namespace): the OSS bucket and the NAS/CPFS file system
# the PAI-DLC job mounts.
BUCKET_PLACEHOLDER = "your-bucket"
FILE_SYSTEM_PLACEHOLDER = "your-file-system-id"


def k8s_text(text: str) -> str:
    """A string Kubernetes will not expand: ``$`` becomes ``$$``."""
    return text.replace("$", "$$")


def _labels(c: Ctx) -> dict:
    return {"app.kubernetes.io/name": c.slug, "app.kubernetes.io/managed-by": "gpuplan"}


def _meta(c: Ctx, name: str) -> dict:
    meta = {"name": name, "labels": _labels(c)}
    if c.name:
        meta["annotations"] = {"gpuplan.dev/job-name": c.name}
    return meta


# Share of a node's vCPUs and memory pods may request: the rest is left for the kubelet, the container runtime,
# system daemons and ACK's node reservations (assumed; ACK reserves more on larger nodes).
NODE_ALLOCATABLE_SHARE = 0.8


def _resources(c: Ctx, gpus: int) -> dict:
    """GPU limit, and CPU/memory requests in proportion to the pod's share of the node's GPUs, so every pod
    the node is planned to hold (one per model copy) fits on it."""
    limits: dict = {"nvidia.com/gpu": gpus}
    requests: dict = {}
    share = NODE_ALLOCATABLE_SHARE * min(1.0, gpus / max(1, c.gpus_per_node))
    if c.vcpus:
        requests["cpu"] = str(max(1, int(c.vcpus * share)))
    if c.memory_gib:
        requests["memory"] = f"{max(1, int(c.memory_gib * share))}Gi"
    if c.erdma:
        limits["aliyun/erdma"] = 1
    out = {"limits": limits}
    if requests:
        out["requests"] = requests
    return out


def _shm(c: Ctx, pods_per_node: int = 1) -> tuple[dict, dict]:
    size = max(1, min(64, int((c.memory_gib or 64) / 4 / pods_per_node)))
    return ({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{size}Gi"}},
            {"name": "dshm", "mountPath": "/dev/shm"})


def _pod_extras(c: Ctx, spec: dict, container: dict, pods_per_node: int = 1) -> None:
    spec["nodeSelector"] = {"node.kubernetes.io/instance-type": c.instance_type}
    spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    vol, mount = _shm(c, pods_per_node)
    spec["volumes"] = [vol]
    container["volumeMounts"] = [mount]
    if c.erdma:
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
        container["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}


def dataset_path(c: Ctx) -> str:
    """Where the training job reads the user's dataset on the data mount (ACK PVC, PAI-DLC data source)."""
    return f"{c.data_dir}/datasets/{c.slug}/train.jsonl"


def training_manifests(c: Ctx) -> list[dict]:
    from gpuplan.render.bundle.weights import model_dir

    master = f"{c.slug}-0.{c.slug}"
    # launch.sh (the bundle, mounted at /workspace) runs the plan's launcher with these variables.
    args = ["launch.sh"]
    env = [{"name": "JOB_NAME", "value": k8s_text(c.name or c.slug)},
           {"name": "NNODES", "value": str(c.nodes)}, {"name": "NPROC_PER_NODE", "value": str(c.gpus_per_node)},
           {"name": "NODE_RANK", "valueFrom": {"fieldRef": {
               "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
           {"name": "MASTER_ADDR", "value": master}, {"name": "MASTER_PORT", "value": str(c.ports["rdzv"])},
           {"name": "OUTPUT_DIR", "value": k8s_text(c.checkpoint_dir)}, {"name": "SAVE_STEPS", "value": str(c.save_steps)},
           {"name": "MODEL_DIR", "value": k8s_text(model_dir(c))}, {"name": "DATA", "value": k8s_text(dataset_path(c))}]
    if c.multi_node:
        env += [{"name": v.name, "value": v.value} for v in c.nccl_vars]
    container: dict  # mixed values; volumeMounts is appended to below
    container = {"name": "trainer", "image": image_ref(c), "workingDir": "/workspace",
                 "command": ["bash"], "args": args, "env": env,
                 "ports": [{"name": "rdzv", "containerPort": c.ports["rdzv"]}],
                 "resources": _resources(c, c.gpus_per_node)}
    pod_spec: dict = {"subdomain": c.slug, "restartPolicy": "Never", "containers": [container]}
    _pod_extras(c, pod_spec, container)
    # Dataset and weights, and the checkpoints, on shared volumes that outlive the pods (create NAS/CPFS-backed
    # PVCs with these names first).
    pod_spec["volumes"] += [{"name": "data", "persistentVolumeClaim": {"claimName": f"{c.slug}-data"}},
                            {"name": "checkpoints", "persistentVolumeClaim": {"claimName": f"{c.slug}-checkpoints"}}]
    container["volumeMounts"] += [{"name": "data", "mountPath": c.data_dir},
                                  {"name": "checkpoints", "mountPath": c.checkpoint_dir}]
    service = {"apiVersion": "v1", "kind": "Service", "metadata": _meta(c, c.slug),
               "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                        "selector": {"app.kubernetes.io/name": c.slug},
                        "ports": [{"name": "rdzv", "port": c.ports["rdzv"], "targetPort": c.ports["rdzv"]}]}}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta(c, c.slug),
           "spec": {"completionMode": "Indexed", "completions": c.nodes, "parallelism": c.nodes,
                    "backoffLimit": 3 if c.spot else 0,
                    "template": {"metadata": {"labels": _labels(c)}, "spec": pod_spec}}}
    return [service, job]


def pod_layout(c: Ctx) -> tuple[int, int, int]:
    """(pods, GPUs per pod, engine DP size inside a pod). Independent model copies get a pod each behind the
    Service (the Service is the router); expert parallel and SGLang DP attention keep their DP ranks in one
    engine, so one pod holds them all."""
    from gpuplan.render.bundle.serving import engine_dp

    copies = c.copies_per_node
    if c.model_kind == "diffusion":   # one pipeline (one GPU) per pod
        return c.replicas * copies, 1, 1
    if copies > 1:
        return c.replicas * copies, c.tp * c.pp, 1
    dp = engine_dp(c)
    gpus = c.tp * c.pp if c.dp_attention else c.tp * c.pp * dp
    return c.replicas, min(gpus, c.gpus_per_node), dp


def _engine_container(c: Ctx, dp: int, gpus: int) -> dict:
    """The deployed engine's own command (the image contains it); model download settings in the environment.
    The image server runs serve_images.py in the bundle's image."""
    from gpuplan.render.bundle.serving import sglang_args, vllm_args
    from gpuplan.render.bundle.weights import checkpoint

    model = k8s_text(checkpoint(c).repo or c.model)
    if c.model_kind == "diffusion":
        name, image = "image-server", image_ref(c)
        command, args = ["python3", "/opt/gpuplan/serve_images.py"], ["--devices", "cuda:0"]
    elif c.engine == "sglang":
        name, image = "sglang", c.images["sglang"]
        command = ["python3", "-m", "sglang.launch_server"]
        args = ["--model-path", model, *sglang_args(c, dp=dp)]
    else:
        name, image = "vllm", c.images["vllm"]
        command = ["vllm", "serve"]
        args = [model, *vllm_args(c, dp=dp)]
    env: list[dict] = [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": f"{c.slug}-hf-token", "key": "HF_TOKEN",
                                                                            "optional": True}}}]
    if c.hub == "modelscope":
        env += [{"name": "VLLM_USE_MODELSCOPE", "value": "True"}, {"name": "SGLANG_USE_MODELSCOPE", "value": "true"}]
    probe = {"httpGet": {"path": "/health", "port": c.serve_port}, "periodSeconds": 10, "timeoutSeconds": 5}
    return {"name": name, "image": image, "command": command, "args": args, "env": env,
            "ports": [{"name": "http", "containerPort": c.serve_port}],
            "resources": _resources(c, gpus),
            "startupProbe": {**probe, "failureThreshold": 360},
            "readinessProbe": {**probe, "failureThreshold": 3},
            "livenessProbe": {**probe, "failureThreshold": 6}}


def serving_manifests(c: Ctx) -> list[dict]:
    pods, gpus, dp = pod_layout(c)
    container = _engine_container(c, dp, gpus)
    pod_spec: dict = {"containers": [container]}
    _pod_extras(c, pod_spec, container, pods_per_node=max(1, c.gpus_per_node // max(1, gpus)))
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(c, c.slug),
                  "spec": {"replicas": pods, "selector": {"matchLabels": {"app.kubernetes.io/name": c.slug}},
                           "template": {"metadata": {"labels": _labels(c)}, "spec": pod_spec}}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": _meta(c, c.slug),
               "spec": {"type": "ClusterIP", "selector": {"app.kubernetes.io/name": c.slug},
                        "ports": [{"name": "http", "port": c.serve_port, "targetPort": c.serve_port}]}}
    return [deployment, service]


def dlc_data_sources(c: Ctx) -> list[dict]:
    """The job's mounts: an OSS folder at the data folder (dataset, weights; the checkpoints too without shared
    storage) and, when the plan advises NAS or CPFS, that file system at the shared folder (the checkpoints)."""
    sources = [{"Uri": f"oss://{BUCKET_PLACEHOLDER}.oss-{c.region}-internal.aliyuncs.com/{c.slug}/",
                "MountPath": c.data_dir, "MountAccess": "RW"}]
    if c.shared_kind:
        sources.append({"Uri": f"nas://{FILE_SYSTEM_PLACEHOLDER}.{c.region}/", "MountPath": c.shared_dir,
                        "MountAccess": "RW"})
    return sources


def pai_dlc(c: Ctx) -> dict:
    """CreateJob body: PAI sets MASTER_ADDR, MASTER_PORT, WORLD_SIZE (pods) and RANK (pod index)
    in PyTorchJob pods; launch.sh reads them through NNODES / NODE_RANK. The data sources are mounted in every pod:
    the dataset and weights are read from them and the checkpoints written to them, so they outlive the job."""
    from gpuplan.render.bundle.weights import model_dir

    envs = {"PYTHONUNBUFFERED": "1", "JOB_NAME": c.name or c.slug, "OUTPUT_DIR": c.checkpoint_dir,
            "MODEL_DIR": model_dir(c), "DATA": dataset_path(c)}
    if c.multi_node:
        envs.update({v.name: v.value for v in c.nccl_vars})
    return {
        "DisplayName": c.slug,
        "JobType": "PyTorchJob",
        "JobSpecs": [{"Type": "Worker", "Image": image_ref(c), "PodCount": c.nodes,
                      "EcsSpec": c.instance_type}],
        # The image (Dockerfile) holds the bundle in /workspace and everything launch.sh calls.
        "UserCommand": "cd /workspace && NNODES=$WORLD_SIZE NODE_RANK=$RANK bash launch.sh",
        "Envs": envs,
        "DataSources": dlc_data_sources(c),
    }


def files(c: Ctx) -> dict[str, str]:
    from gpuplan.render.bundle.weights import is_llm

    if not c.training and not is_llm(c) and not (c.model_kind == "diffusion" and c.online):
        return {}   # speech and batch diffusion: batch scripts, not a server Deployment
    if not c.training and c.multi_node:
        return {}   # one replica spans nodes: a one-pod Deployment cannot hold it (PLAN.md: LeaderWorkerSet)
    docs = training_manifests(c) if c.training else serving_manifests(c)
    name = "k8s/job.yaml" if c.training else "k8s/deployment.yaml"
    if c.training:
        head = (f"# ACK manifests for {c.slug} (Indexed Job on {c.instance_type}). The image is the bundle's Dockerfile "
                f"pushed to ACR (PLAN.md); create the PVCs {c.slug}-data (dataset at {dataset_path(c)}, weights) and "
                f"{c.slug}-checkpoints (NAS or CPFS) first.\n")
    else:
        pods, gpus, dp = pod_layout(c)
        head = (f"# ACK manifests for {c.slug}: a Deployment of {pods} pod(s) x {gpus} GPU(s) on {c.instance_type} "
                f"({c.copies_per_node} per node), the Service spreads requests over them. Optional Secret "
                f"{c.slug}-hf-token (key HF_TOKEN) for gated models.\n")
    out = {name: head + yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True, width=1000)}
    if c.training:
        out["pai-dlc-job.json"] = json.dumps(pai_dlc(c), indent=2, ensure_ascii=False) + "\n"
    return out

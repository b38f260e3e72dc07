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
import math

import yaml

from gpuplan.render.bundle.context import Ctx
from gpuplan.render.bundle.node.images import APP_DIR, image_ref
from gpuplan.render.bundle.node.weights import local_folder_model, model_dir, models_mount
from gpuplan.units import GIB


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
    if local_folder_model(c):
        # a local model folder is loaded where it is on the node (node/weights.model_dir): the pod mounts that node
        # folder read-only at the same path, as the ECS unit's containers do
        spec["volumes"].append({"name": "local-model", "hostPath": {"path": c.model, "type": "Directory"}})
        container["volumeMounts"].append({"name": "local-model", "mountPath": c.model, "readOnly": True})
    if c.erdma:
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
        container["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}


def dataset_path(c: Ctx) -> str:
    """Where the training job reads the user's dataset on the data mount (ACK PVC, PAI-DLC data source)."""
    return f"{storage_base(c)}/datasets/{c.slug}/train.jsonl"


def training_manifests(c: Ctx) -> list[dict]:
    from gpuplan.render.bundle.node.weights import model_dir

    master = f"{c.slug}-0.{c.slug}"
    # launch.sh (the bundle, mounted at /workspace) runs the plan's launcher with these variables.
    args = ["launch.sh"]
    env = [{"name": "JOB_NAME", "value": k8s_text(c.name or c.slug)},
           {"name": "NNODES", "value": str(c.nodes)}, {"name": "NPROC_PER_NODE", "value": str(c.gpus_per_node)},
           {"name": "NODE_RANK", "valueFrom": {"fieldRef": {
               "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
           {"name": "MASTER_ADDR", "value": master}, {"name": "MASTER_PORT", "value": str(c.ports["rdzv"])},
           {"name": "OUTPUT_DIR", "value": k8s_text(c.checkpoint_dir)}, {"name": "SAVE_STEPS", "value": str(c.save_steps)},
           {"name": "MODEL_DIR", "value": k8s_text(model_dir(c))}, {"name": "DATA", "value": k8s_text(dataset_path(c))},
           # the weights' OSS copy (ConfigMap <slug>-model, key MODEL_OSS): required where the plan counted them staged
           # there (fetch-model.sh refuses to start without it), optional otherwise
           {"name": "MODEL_OSS", "valueFrom": {"configMapKeyRef": {"name": f"{c.slug}-model", "key": "MODEL_OSS",
                                                                   "optional": not c.weights_staged}}}]
    if c.multi_node:
        env += [{"name": v.name, "value": v.value} for v in c.nccl_vars]
    container: dict  # mixed values; volumeMounts is appended to below
    container = {"name": "trainer", "image": image_ref(c), "workingDir": "/workspace",
                 "command": ["bash"], "args": args, "env": env,
                 "ports": [{"name": "rdzv", "containerPort": c.ports["rdzv"]}],
                 "resources": _resources(c, c.gpus_per_node)}
    pod_spec: dict = {"subdomain": c.slug, "restartPolicy": "Never", "containers": [container]}
    _pod_extras(c, pod_spec, container)
    # Weights (staged once by fetch-model.sh) and checkpoints on a shared volume: create a NAS/CPFS-backed
    # ReadWriteMany PVC with this name first; it outlives the Job.
    pod_spec["volumes"].append({"name": "storage", "persistentVolumeClaim": {"claimName": storage_claim(c)}})
    container["volumeMounts"].append({"name": "storage", "mountPath": storage_base(c)})
    service = {"apiVersion": "v1", "kind": "Service", "metadata": _meta(c, c.slug),
               "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                        "selector": {"app.kubernetes.io/name": c.slug},
                        "ports": [{"name": "rdzv", "port": c.ports["rdzv"], "targetPort": c.ports["rdzv"]}]}}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta(c, c.slug),
           "spec": {"completionMode": "Indexed", "completions": c.nodes, "parallelism": c.nodes,
                    "backoffLimit": 3 if c.spot else 0,
                    "template": {"metadata": {"labels": _labels(c)}, "spec": pod_spec}}}
    return [service, job]


def storage_base(c: Ctx) -> str:
    """The folder holding models/ and checkpoints/ (the shared file system when the plan has one, else the data
    disk's path): one volume in the ACK pods and the PAI-DLC job."""
    return c.shared_dir if (c.training and c.shared_kind) else c.data_dir


def storage_claim(c: Ctx) -> str:
    return f"{c.slug}-storage"


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
    """The deployed engine's own command in the bundle's image (requirements-serve.txt pins the engine), loading
    the local copy fetch-model.sh staged (the init container) with the hubs offline. The image server runs
    serve_images.py in the same image."""
    from gpuplan.render.bundle.serving import sglang_args, vllm_args

    local = k8s_text(model_dir(c))
    image = image_ref(c)
    if c.model_kind == "diffusion":
        name = "image-server"
        command, args = ["python3", f"{APP_DIR}/serve_images.py"], ["--devices", "cuda:0", "--model", local]
    elif c.engine == "sglang":
        name = "sglang"
        command = ["python3", "-m", "sglang.launch_server"]
        args = ["--model-path", local, *sglang_args(c, dp=dp)]
    else:
        name = "vllm"
        command = ["vllm", "serve"]
        args = [local, *vllm_args(c, dp=dp)]
    env: list[dict] = [{"name": "HF_HUB_OFFLINE", "value": "1"}, {"name": "TRANSFORMERS_OFFLINE", "value": "1"}]
    probe = {"httpGet": {"path": "/health", "port": c.serve_port}, "periodSeconds": 10, "timeoutSeconds": 5}
    return {"name": name, "image": image, "command": command, "args": args, "env": env,
            "ports": [{"name": "http", "containerPort": c.serve_port}],
            "resources": _resources(c, gpus),
            "startupProbe": {**probe, "failureThreshold": 360},
            "readinessProbe": {**probe, "failureThreshold": 3},
            "livenessProbe": {**probe, "failureThreshold": 6}}


def _fetch_container(c: Ctx) -> dict:
    """Init container: fetch-model.sh puts the weights once into the shared models volume (the first pod downloads,
    the others wait for its marker); ModelScope in mainland regions, MODEL_OSS when set."""
    env: list[dict] = [{"name": "MODEL_DIR", "value": k8s_text(model_dir(c))},
                       {"name": "MODEL_HUB", "value": c.hub},
                       # required where the plan counted the weights staged in OSS (fetch-model.sh refuses without it)
                       {"name": "MODEL_OSS", "valueFrom": {"configMapKeyRef": {"name": f"{c.slug}-model", "key": "MODEL_OSS",
                                                                               "optional": not c.weights_staged}}}]
    if c.hub != "modelscope":
        env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": f"{c.slug}-hf-token", "key": "HF_TOKEN",
                                                                        "optional": True}}})
    return {"name": "fetch-model", "image": image_ref(c), "command": ["bash", f"{APP_DIR}/fetch-model.sh"], "env": env,
            "volumeMounts": [{"name": "models", "mountPath": models_mount(c)}]}


def serving_manifests(c: Ctx) -> list[dict]:
    pods, gpus, dp = pod_layout(c)
    container = _engine_container(c, dp, gpus)
    pod_spec: dict = {"initContainers": [_fetch_container(c)], "containers": [container]}
    _pod_extras(c, pod_spec, container, pods_per_node=max(1, c.gpus_per_node // max(1, gpus)))
    # The weights, staged once for every pod: a NAS-backed ReadWriteMany PVC (create it first, PLAN.md).
    pod_spec["volumes"].append({"name": "models", "persistentVolumeClaim": {"claimName": f"{c.slug}-models"}})
    container["volumeMounts"].append({"name": "models", "mountPath": models_mount(c), "readOnly": True})
    # Each pod holds whole GPUs of a node pool sized to the peak's pods: a rolling update replaces a pod in place
    # (no surge pod, which would wait for a node the pool may not have).
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(c, c.slug),
                  "spec": {"replicas": pods, "selector": {"matchLabels": {"app.kubernetes.io/name": c.slug}},
                           "strategy": {"type": "RollingUpdate",
                                        "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
                           "template": {"metadata": {"labels": _labels(c)}, "spec": pod_spec}}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": _meta(c, c.slug),
               "spec": {"type": "ClusterIP", "selector": {"app.kubernetes.io/name": c.slug},
                        "ports": [{"name": "http", "port": c.serve_port, "targetPort": c.serve_port}]}}
    return [models_claim(c), deployment, service]


# ACK's default StorageClass for NAS managed by CNFS (created when the cluster is made with CNFS-managed NAS;
# https://www.alibabacloud.com/help/en/container-service-for-kubernetes/latest/cnfs-dynamicallynas): any other
# ReadWriteMany class works the same.
NAS_STORAGE_CLASS = "alibabacloud-cnfs-nas"


def models_claim(c: Ctx) -> dict:
    """The ReadWriteMany claim every pod mounts the weights from (the init container stages them there once):
    the checkpoint's bytes and a fifth more, in whole GiB."""
    gib = max(1, math.ceil((c.model_bytes or GIB) * 1.2 / GIB))
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": _meta(c, f"{c.slug}-models"),
            "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": NAS_STORAGE_CLASS,
                     "resources": {"requests": {"storage": f"{gib}Gi"}}}}


def pai_dlc(c: Ctx) -> dict:
    """CreateJob body: PAI sets MASTER_ADDR, MASTER_PORT, WORLD_SIZE (pods) and RANK (pod index)
    in PyTorchJob pods; launch.sh reads them through NNODES / NODE_RANK."""
    envs = {"PYTHONUNBUFFERED": "1", "JOB_NAME": c.name or c.slug, "MODEL_DIR": model_dir(c),
            "OUTPUT_DIR": c.checkpoint_dir, "MODEL_HUB": c.hub, "DATA": dataset_path(c)}
    if c.multi_node:
        envs.update({v.name: v.value for v in c.nccl_vars})
    if c.weights_staged:   # the plan counted the weights staged in OSS: fetch-model.sh copies them from there
        envs["MODEL_OSS"] = f"oss://your-bucket/gpuplan/{c.slug}/model/"
    return {
        "DisplayName": c.slug,
        "JobType": "PyTorchJob",
        "JobSpecs": [{"Type": "Worker", "Image": image_ref(c), "PodCount": c.nodes,
                      "EcsSpec": c.instance_type}],
        # The image (Dockerfile) holds the bundle in /workspace and everything launch.sh calls; launch.sh fetches
        # the weights once into MODEL_DIR and writes checkpoints to OUTPUT_DIR, both on the mounted storage.
        "UserCommand": "cd /workspace && NNODES=$WORLD_SIZE NODE_RANK=$RANK bash launch.sh",
        "Envs": envs,
        # The weights and the checkpoints live on this mount, not in the job's containers: they outlive the job.
        # Replace the placeholder with your bucket (OSS, VPC endpoint) or your NAS/CPFS file system.
        "DataSources": [{"Uri": dlc_storage_uri(c), "MountPath": storage_base(c)}],
    }


def dlc_storage_uri(c: Ctx) -> str:
    """The PAI-DLC data source for the job's storage (a placeholder to replace): the shared NAS/CPFS file system a
    multi-node plan writes its checkpoints to, else an OSS bucket over the VPC-internal endpoint (CreateJob
    DataSources Uri: oss://<bucket>.<endpoint>/<path>, nas://<file system id>.<region>/<path>)."""
    if c.shared_kind:
        return f"nas://your-file-system-id.{c.region}/gpuplan/{c.slug}/"
    return f"oss://your-bucket.oss-{c.region}-internal.aliyuncs.com/gpuplan/{c.slug}/"


def files(c: Ctx) -> dict[str, str]:
    from gpuplan.render.bundle.node.weights import serves_engine

    if not c.training and not serves_engine(c) and not (c.model_kind == "diffusion" and c.online):
        return {}   # speech and batch diffusion: batch scripts, not a server Deployment
    if not c.training and c.multi_node:
        return {}   # one replica spans nodes: a one-pod Deployment cannot hold it (PLAN.md: LeaderWorkerSet)
    docs = training_manifests(c) if c.training else serving_manifests(c)
    name = "k8s/job.yaml" if c.training else "k8s/deployment.yaml"
    if c.training:
        head = (f"# ACK manifests for {c.slug} (Indexed Job on {c.instance_type}). The image is the bundle's Dockerfile "
                f"pushed to ACR (PLAN.md); create the ReadWriteMany PVC {storage_claim(c)} (NAS or CPFS) first: it holds "
                f"the weights ({model_dir(c)}), the dataset ({dataset_path(c)}) and the checkpoints "
                f"({c.checkpoint_dir}).\n"
                + (f"# The plan counted the weights staged once in OSS (./stage-weights.sh): create the ConfigMap "
                   f"{c.slug}-model with key MODEL_OSS (oss://<bucket>/<prefix>) before the Job, or its pods wait.\n"
                   if c.weights_staged else ""))
    else:
        pods, gpus, dp = pod_layout(c)
        head = (f"# ACK manifests for {c.slug}: a Deployment of {pods} pod(s) x {gpus} GPU(s) on {c.instance_type} "
                f"({c.copies_per_node} per node), the Service spreads requests over them. The ReadWriteMany PVC "
                f"{c.slug}-models (first document: NAS through StorageClass {NAS_STORAGE_CLASS}, ACK's CNFS default; "
                f"set yours) holds the weights the init container stages there once; "
                f"{'required' if c.weights_staged else 'optional'} ConfigMap "
                f"{c.slug}-model (key MODEL_OSS: your OSS copy of the weights).\n")
    out = {name: head + yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True, width=1000)}
    if c.training:
        out["pai-dlc-job.json"] = json.dumps(pai_dlc(c), indent=2, ensure_ascii=False) + "\n"
    return out

"""Infrastructure files: Terraform for the alicloud provider, cloud-init.yaml, gpu-check.sh,
idle-stop.sh and the systemd unit.

Terraform resources and arguments follow the alicloud provider docs
(https://registry.terraform.io/providers/aliyun/alicloud/latest/docs): alicloud_instance
(spot_strategy / spot_price_limit / spot_duration, data_disks.performance_level),
alicloud_ecs_network_interface (network_interface_traffic_mode = "HighPerformance" is an Elastic
RDMA Interface, provider 1.223.0+), alicloud_nas_file_system / alicloud_nas_mount_target.
cloud-init keys: https://cloudinit.readthedocs.io/en/latest/reference/modules.html .
"""

from __future__ import annotations

import yaml

from gpuplan.render.bundle.cloud import lb, monitoring
from gpuplan.render.bundle.context import Ctx
from gpuplan.render.bundle.node.nccl import ECS_ERDMA_DOC
from gpuplan.render.bundle.templates import render
from gpuplan.render.bundle.node.transfer import script_duration, transfers
from gpuplan.render.bundle.safe import Safe
from gpuplan.render.bundle.node.weights import model_dir, serves_engine, stage_weights_script

# nvidia-smi product-name fragment per GPU id prefix (what gpu-check.sh matches).
GPU_NAME_FRAGMENTS = (("A100", "A100"), ("A800", "A800"), ("H100", "H100"), ("H800", "H800"), ("H200", "H200"),
                      ("H20-", "H20"), ("L20", "L20"), ("L40S", "L40S"), ("L40", "L40"), ("A10G", "A10G"),
                      ("A10-", "A10"), ("A30", "A30"), ("T4", "T4"), ("V100", "V100"), ("P100", "P100"),
                      ("P4-", "P4"), ("A16", "A16"), ("L4-", "L4"), ("B200", "B200"), ("RTX4090", "4090"))
# Lowest driver branch per architecture that supports it (CUDA 12 needs R525+; Hopper R525+,
# Blackwell R570+): https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html Table 3.
MIN_DRIVER_MAJOR = {"Blackwell": 570}
DEFAULT_MIN_DRIVER_MAJOR = 525


def gpu_name(gpu_id: str) -> str:
    for prefix, frag in GPU_NAME_FRAGMENTS:
        if gpu_id.startswith(prefix):
            return frag
    return gpu_id.split("-")[0]


def min_driver_major(gpu_id: str) -> int:
    try:
        from gpuplan.catalog.hardware.gpus import resolve_gpu

        spec, _ = resolve_gpu(gpu_id)
        return MIN_DRIVER_MAJOR.get(spec.architecture, DEFAULT_MIN_DRIVER_MAJOR)
    except Exception:  # noqa: BLE001 - unknown GPU: the generic floor
        return DEFAULT_MIN_DRIVER_MAJOR


def required_driver_major(c: Ctx) -> int:
    """The driver branch the node needs: the GPU architecture's floor, and the one the image's CUDA needs."""
    return max(min_driver_major(c.gpu), c.env.min_driver_major if c.env else 0)


def auto_release_hours(c: Ctx) -> int:
    """Hours after `terraform apply` at which ECS releases a pay-as-you-go training or batch node: first boot + model
    download (+ a batch job's input) + the run at the high end of its time range (at least x (1 + margin)) +
    checkpoint or output upload (render/bundle/node/transfer.py); 0 = never (serving, subscription)."""
    return transfers(c).release_hours


def unit_name(c: Ctx) -> str:
    return f"gpuplan-{c.slug}.service"


def gpu_check(c: Ctx) -> str:
    return render("gpu-check.sh.j2", c=c, gpu_name=gpu_name(c.gpu), min_driver_major=required_driver_major(c),
                  erdma_doc=ECS_ERDMA_DOC)


def bootstrap_pins() -> dict:
    """node_bootstrap of data/ops.yaml: pinned driver / CUDA / toolkit / eRDMA versions."""
    from gpuplan.plan.advice.ops import load_ops

    return load_ops()["node_bootstrap"]


def node_bootstrap(c: Ctx) -> str:
    return render("node-bootstrap.sh.j2", c=c, b=bootstrap_pins())


def _dcgm_command(c: Ctx) -> str:
    return (f"docker rm -f dcgm-exporter >/dev/null 2>&1; docker run -d --name dcgm-exporter --restart unless-stopped "
            f"--gpus all --cap-add SYS_ADMIN -p {c.ports['dcgm_exporter']}:9400 "
            f"-v /etc/gpuplan/dcgm-counters.csv:/etc/dcgm-exporter/gpuplan.csv:ro {c.env.dcgm_exporter_image if c.env else ''} "
            f"-f /etc/dcgm-exporter/gpuplan.csv")


def node_ready_unit(c: Ctx) -> str:
    """Runs on every boot once the driver is there (the driver install reboots the node): gpu-check.sh,
    then the DCGM exporter."""
    return ("[Unit]\n"
            f"Description=gpuplan {c.slug}: GPU check and DCGM exporter\n"
            "After=network-online.target docker.service\n"
            "Wants=network-online.target\n"
            "ConditionPathExists=/usr/bin/nvidia-smi\n\n"
            "[Service]\nType=oneshot\nRemainAfterExit=yes\n"
            "ExecStart=/bin/sh -c '/usr/local/sbin/gpuplan-gpu-check.sh > /var/log/gpuplan-gpu-check.log 2>&1 || true'\n"
            f"ExecStart=/bin/sh -c '{_dcgm_command(c)}'\n\n"
            "[Install]\nWantedBy=multi-user.target\n")


def env_file(c: Ctx) -> str:
    """/etc/gpuplan/<slug>.env: Terraform fills the @@...@@ placeholders per instance (rank, master). No secret
    goes here: HF_TOKEN belongs in /etc/gpuplan/secrets.env, which the user creates (PLAN.md)."""
    return ("SHARED_MOUNT='@@SHARED_MOUNT@@'\nCKPT_REMOTE='@@CKPT_REMOTE@@'\nMODEL_OSS='@@MODEL_OSS@@'\n"
            f"MODEL_DIR={model_dir(c)}\nMODEL_HUB={c.hub}\n"
            f"NNODES={c.job_nodes}\nNODE_RANK=@@NODE_RANK@@\nMASTER_ADDR=@@MASTER_ADDR@@\n"
            f"MASTER_PORT={c.ports['rdzv']}\n")


def cloud_init(c: Ctx) -> str:
    """#cloud-config: mounts, node bootstrap (runtime, toolkit, eRDMA, driver), the GPU check and exporters.

    Placeholders (@@SHARED_MOUNT@@, @@CKPT_REMOTE@@, @@NODE_RANK@@, @@MASTER_ADDR@@) are filled by
    Terraform's replace(), per instance."""
    packages = ["curl", "wget", "gnupg", "prometheus-node-exporter"]
    if c.shared_kind:
        packages.append("nfs-common")
    doc = {
        "package_update": True,
        "packages": packages,
        "write_files": [
            {"path": f"/etc/gpuplan/{c.slug}.env", "permissions": "0644", "content": env_file(c)},
            {"path": "/usr/local/sbin/gpuplan-mount-data.sh", "permissions": "0755",
             "content": render("mount-data.sh.j2", c=c)},
            {"path": "/usr/local/sbin/gpuplan-mount-shared.sh", "permissions": "0755",
             "content": render("mount-shared.sh.j2", c=c)},
            {"path": "/usr/local/sbin/gpuplan-bootstrap.sh", "permissions": "0755", "content": node_bootstrap(c)},
            {"path": "/usr/local/sbin/gpuplan-gpu-check.sh", "permissions": "0755", "content": gpu_check(c)},
            {"path": "/etc/gpuplan/dcgm-counters.csv", "permissions": "0644", "content": monitoring.DCGM_COUNTERS},
            {"path": "/etc/systemd/system/gpuplan-node-ready.service", "permissions": "0644",
             "content": node_ready_unit(c)},
        ],
        "runcmd": [
            ["/usr/local/sbin/gpuplan-mount-data.sh"],
            ["/usr/local/sbin/gpuplan-mount-shared.sh"],
            ["systemctl", "daemon-reload"],
            ["systemctl", "enable", "gpuplan-node-ready.service"],
            ["systemctl", "enable", "--now", "prometheus-node-exporter"],
            ["sh", "-c", "/usr/local/sbin/gpuplan-bootstrap.sh || echo 'gpuplan: bootstrap failed, see "
                         "/var/log/gpuplan-bootstrap.log' >&2"],
            ["systemctl", "start", "gpuplan-node-ready.service"],
        ],
        "final_message": f"gpuplan {c.slug}: first boot finished; bootstrap log /var/log/gpuplan-bootstrap.log, "
                         "GPU check in /var/log/gpuplan-gpu-check.log",
    }
    header = ("#cloud-config\n"
              f"# First boot of every {c.instance_type} node of {c.slug}: mounts, driver/runtime bootstrap, GPU check, "
              "monitoring agents.\n"
              "# Terraform passes this file as user_data (terraform/main.tf fills the @@...@@ placeholders per node).\n")
    return header + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=1000)


def terraform(c: Ctx) -> dict[str, str]:
    from gpuplan.plan.advice.storage import extreme_nas_bandwidth_mb_s, shared_capacity_gib
    from gpuplan.render.bundle.node.oss import node_policy, node_role

    t = transfers(c)
    nas_gib = shared_capacity_gib("extreme_nas", c.shared_capacity_gib or 0)
    values = {"c": c, "instance_count": c.nodes, "tag_name": c.name or c.slug, "t": t,
              "auto_release_hours": t.release_hours,
              "download_gb": f"{(t.download_bytes or 0) / 1e9:.0f}",
              "download_text": script_duration(t.download_s),
              # the plan's capacity, rounded to what the kind sells (the same rule its sizing used)
              "cpfs_capacity_gib": shared_capacity_gib("cpfs", c.shared_capacity_gib or 0),
              "nas_capacity_gib": nas_gib,
              "nas_bandwidth": f"{extreme_nas_bandwidth_mb_s(nas_gib):,.0f}",
              "node_role": node_role(c), "node_policy": node_policy(c)}
    out = {f"terraform/{n}": render(f"terraform/{n}.j2", **values)
           for n in ("versions.tf", "variables.tf", "main.tf", "outputs.tf", "terraform.tfvars.example")}
    if behind_load_balancer(c):
        out["terraform/lb.tf"] = load_balancer_tf(c)
    return out


def api_nodes(c: Ctx) -> int:
    """Instances that answer API requests: the rank-0 node of every replica."""
    return c.nodes // max(1, c.job_nodes)


def behind_load_balancer(c: Ctx) -> bool:
    """Several replicas of a server need one address in front of them (training and batch jobs do not)."""
    return monitoring.served_engine(c) is not None and api_nodes(c) > 1


def load_balancer_tf(c: Ctx) -> str:
    """terraform/lb.tf: a CLB with a health-checked TCP listener on the serve port, every replica's API node
    (rank 0 of its replica) in its vServer group."""
    step = max(1, c.job_nodes)
    # (Written with functions only, like main.tf: the rank-0 node of replica i is the first of its chunk of nodes.)
    server = ("alicloud_instance.gpu[count.index].id" if step == 1
              else f"alicloud_instance.gpu[chunklist(range(var.instance_count), {step})[count.index][0]].id")
    count = "var.instance_count" if step == 1 else f"length(chunklist(range(var.instance_count), {step}))"
    return (f"# {api_nodes(c)} replicas of {c.slug} behind one load balancer (render/bundle/cloud/lb.py).\n"
            + lb.variables_hcl() + "\n"
            + lb.load_balancer_hcl(name="local.name", vswitch="alicloud_vswitch.this.id", port=c.serve_port) + "\n"
            + "# The API node of every replica (rank 0 of its replica) serves behind the load balancer.\n"
            'resource "alicloud_slb_server_group_server_attachment" "api" {\n'
            f"  count           = {count}\n"
            "  server_group_id = alicloud_slb_server_group.api.id\n"
            f"  server_id       = {server}\n"
            f"  port            = {c.serve_port}\n"
            "  weight          = 100\n"
            "}\n\n" + lb.outputs_hcl(c.serve_port))


def files(c: Ctx) -> dict[str, str]:
    out = terraform(c)
    out["cloud-init.yaml"] = cloud_init(c)
    out["gpu-check.sh"] = gpu_check(c)
    out["node-bootstrap.sh"] = node_bootstrap(c)
    if c.billing != "subscription":   # a prepaid period bills whether the node runs or not: nothing to save
        out["idle-stop.sh"] = render("idle-stop.sh.j2", c=c, unit=unit_name(c))
    if c.weights_staged:    # the plan counted the weights staged once in OSS (plan.weights_staging)
        out["stage-weights.sh"] = stage_weights_script(c)
    if c.training or serves_engine(c) or (c.model_kind == "diffusion" and c.online):   # not for batch scripts
        out[unit_name(c)] = render("unit.service.j2", c=c, unit_name=unit_name(c), start_timeout_s=start_timeout_s(c),
                                   health_checks=health_wait_s(c) // 10, volumes=Safe(docker_volumes(c)))
    return out


def docker_volumes(c: Ctx) -> str:
    """The node's data disk (and shared file system) mounted at the same paths in the container: weights, data,
    checkpoints and the DeepSpeed NVMe offload live there, not in the container; a local model folder outside them
    read-only at its own path (the path every launcher loads, node/weights.model_dir)."""
    from gpuplan.render.bundle.node.weights import local_folder_model

    vols = [c.data_dir] + ([c.shared_dir] if c.shared_kind else [])
    out = [f"-v {v}:{v}" for v in vols]
    if local_folder_model(c) and not any(c.model == v or c.model.startswith(v.rstrip("/") + "/") for v in vols):
        out.append(f"-v {c.model}:{c.model}:ro")
    return " ".join(out)


def start_timeout_s(c: Ctx) -> int:
    """systemd's limit for starting the unit: the base image pull of the image build and the weights' download
    (twice the plan's times: pay-by-traffic bandwidth is a cap, not a guarantee) plus 100 s of build and, for
    servers, the health checks' wait (:func:`health_wait_s`)."""
    t = transfers(c)
    return int(100 + (1200 if c.training else health_wait_s(c)) + 2 * (t.image_pull_s + (t.download_s or 0)))


# What a server takes to answer its health check once its weights are on the data disk, beside reading them: CUDA
# graph capture, torch.compile and the KV cache's profiling run (vLLM / SGLang start-up), and, multi-node, the
# workers joining the Ray cluster (serve.sh waits up to 15 minutes for them).
SERVER_WARMUP_S = 600
CLUSTER_JOIN_S = 900


def health_wait_s(c: Ctx) -> int:
    """How long the unit's start waits for the server's first healthy answer before systemd restarts it: the
    weights read from the data disk at its rate (the ESSD level and size the plan chose), twice (an engine may
    read every shard on each node), plus the engine's warm-up and, multi-node, the cluster's join; at least 20
    minutes. A fixed 20 minutes restarted a DeepSeek-V3 service (673 GB on a 180 MB/s disk: an hour to load)
    before it ever answered (a review of 2026-12-06)."""
    from gpuplan.plan.advice.storage import essd_levels

    rate = next((lv.throughput_mb_s(c.data_disk_gib) for lv in essd_levels() if lv.level == c.data_disk_level), 0.0)
    load = (c.model_bytes or 0.0) / (rate * 1e6) if rate else 0.0
    wait = 2.0 * load + SERVER_WARMUP_S + (CLUSTER_JOIN_S if c.multi_node else 0.0)
    return int(max(1200, -(-wait // 10) * 10))

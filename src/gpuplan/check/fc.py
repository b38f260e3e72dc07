"""Function Compute: the function within what the CreateFunction API accepts (platforms.yaml ``function_limits``:
memory 128 MB-32 GB in 64 MB steps, 0.05-16 vCPU in 0.05 steps, 1-4 GB of memory per vCPU, disk 512 or 10240 MB,
GPU memory in 1024 MB steps up to the card), and the Serverless Devs ``s.yaml`` and the Terraform file deploying the
same function (one source of the numbers: the plan)."""

from __future__ import annotations

from gpuplan.check import hcl
from gpuplan.check.bundle import Bundle, Finding
from gpuplan.check.locate import yaml_line
from gpuplan.i18n import _

S_YAML = "function-compute/s.yaml"
TF_MAIN = "function-compute/terraform/main.tf"
# (s.yaml props path, Terraform resource, Terraform attribute path)
PAIRS = (
    (("cpu",), "alicloud_fcv3_function", ("cpu",)),
    (("memorySize",), "alicloud_fcv3_function", ("memory_size",)),
    (("diskSize",), "alicloud_fcv3_function", ("disk_size",)),
    (("timeout",), "alicloud_fcv3_function", ("timeout",)),
    (("instanceConcurrency",), "alicloud_fcv3_function", ("instance_concurrency",)),
    (("gpuConfig", "gpuType"), "alicloud_fcv3_function", ("gpu_config", "gpu_type")),
    (("gpuConfig", "gpuMemorySize"), "alicloud_fcv3_function", ("gpu_config", "gpu_memory_size")),
    (("customContainerConfig", "port"), "alicloud_fcv3_function", ("custom_container_config", "port")),
    (("concurrencyConfig", "reservedConcurrency"), "alicloud_fcv3_concurrency_config", ("reserved_concurrency",)),
    (("provisionConfig", "defaultTarget"), "alicloud_fcv3_provision_config", ("target",)),
)


def _card_mb() -> dict[str, float]:
    from gpuplan.plan.deploy.platform_data import fc_gpu_types

    return {g.gpu_type: g.card_memory_gib * 1024 for g in fc_gpu_types()}


def limit_problems(memory_mb, vcpu, disk_mb=None, gpu_type=None, gpu_memory_mb=None) -> list[str]:
    """What in one function's size the CreateFunction API refuses (empty: within the limits)."""
    from gpuplan.plan.deploy.platform_data import fc_function_limits

    lim = fc_function_limits()
    out = []
    if not isinstance(memory_mb, int) or not lim["memory_mb_min"] <= memory_mb <= lim["memory_mb_max"] \
            or memory_mb % lim["memory_mb_step"]:
        out.append(_("memory {memory} MB is outside {low}-{high} MB in {step} MB steps").format(
            memory=memory_mb, low=lim["memory_mb_min"], high=lim["memory_mb_max"], step=lim["memory_mb_step"]))
    if not isinstance(vcpu, (int, float)) or not lim["vcpu_min"] <= vcpu <= lim["vcpu_max"] \
            or abs(round(vcpu / lim["vcpu_step"]) * lim["vcpu_step"] - vcpu) > 1e-9:
        out.append(_("{vcpu} vCPU is outside {low}-{high} in {step} steps").format(
            vcpu=vcpu, low=lim["vcpu_min"], high=lim["vcpu_max"], step=lim["vcpu_step"]))
    elif isinstance(memory_mb, int) and not (lim["memory_gb_per_vcpu_min"] <= memory_mb / 1024 / vcpu
                                             <= lim["memory_gb_per_vcpu_max"]):
        out.append(_("{memory} MB for {vcpu} vCPU is outside {low}-{high} GB of memory per vCPU").format(
            memory=memory_mb, vcpu=vcpu, low=lim["memory_gb_per_vcpu_min"], high=lim["memory_gb_per_vcpu_max"]))
    if disk_mb is not None and disk_mb not in lim["disk_mb"]:
        out.append(_("disk {disk} MB is not one of {allowed} MB").format(
            disk=disk_mb, allowed=", ".join(map(str, lim["disk_mb"]))))
    card = _card_mb().get(str(gpu_type))
    if gpu_memory_mb is not None and (not isinstance(gpu_memory_mb, int) or gpu_memory_mb % lim["gpu_memory_mb_step"]
                                      or (card and gpu_memory_mb > card)):
        out.append(_("GPU memory {memory} MB is not a multiple of {step} MB within the {card} MB card of {gpu}").format(
            memory=gpu_memory_mb, step=lim["gpu_memory_mb_step"], card=f"{card:g}" if card else "?", gpu=gpu_type))
    return out


def _dig(d, path):
    for p in path:
        d = d.get(p) if isinstance(d, dict) else None
    return d


def _tf_value(blocks: dict[str, hcl.Block], rtype: str, path: tuple[str, ...]):
    """(literal value, line) of ``path`` in the first resource of ``rtype``, or (None, None)."""
    blk = next((b for key, b in blocks.items() if key.startswith(rtype + ".")), None)
    for part in path[:-1]:
        blk = blk.child(part) if blk else None
    if not blk or path[-1] not in blk.attrs:
        return None, None
    text, line = blk.attrs[path[-1]]
    return hcl.literal(text), line


def check(b: Bundle) -> list[Finding]:
    if not b.has(S_YAML):
        return []
    docs, err = b.yaml_docs(S_YAML)
    if err:
        return [err]
    text = b.text(S_YAML) or ""
    resources = (docs[0] or {}).get("resources") if docs and isinstance(docs[0], dict) else None
    functions = [(name, r.get("props") or {}) for name, r in (resources or {}).items()
                 if isinstance(r, dict) and r.get("component") == "fc3"]
    out: list[Finding] = []
    if not functions:
        return [Finding(S_YAML, yaml_line(text, ["resources"]), "fc-limit",
                        _("s.yaml defines no fc3 function resource."))]
    name, props = functions[0]
    where = ["resources", name, "props"]
    for problem in limit_problems(props.get("memorySize"), props.get("cpu"), props.get("diskSize"),
                                  _dig(props, ("gpuConfig", "gpuType")), _dig(props, ("gpuConfig", "gpuMemorySize"))):
        out.append(Finding(S_YAML, yaml_line(text, [*where, "memorySize"]), "fc-limit",
                           _("Function Compute refuses this function: {problem}.").format(problem=problem)))
    if not b.has(TF_MAIN):
        return out
    blocks = hcl.resources(hcl.parse(b.text(TF_MAIN) or ""))
    tf_fn = next((blk for key, blk in blocks.items() if key.startswith("alicloud_fcv3_function.")), None)
    if tf_fn is None:
        out.append(Finding(TF_MAIN, None, "fc-mismatch", _("The Terraform file defines no alicloud_fcv3_function.")))
        return out
    for s_path, rtype, tf_path in PAIRS:
        s_val = _dig(props, s_path)
        tf_val, tf_line = _tf_value(blocks, rtype, tf_path)
        if s_val is None and tf_val is None:
            continue
        same = (_numeric(s_val, tf_val) and float(s_val) == float(tf_val)) or s_val == tf_val
        if not same:
            out.append(Finding(TF_MAIN, tf_line or tf_fn.line, "fc-mismatch", _(
                "{tf} is {tf_value} here but {key} is {s_value} in s.yaml: the two files deploy different functions."
            ).format(tf=".".join(tf_path), tf_value=tf_val, key=".".join(s_path), s_value=s_val)))
    return out


def _numeric(a, b) -> bool:
    return isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool)

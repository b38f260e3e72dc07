"""Operational advice carried by every plan: image, driver and CUDA for the instance family, UEFI,
auto-release of pay-as-you-go training instances, checkpoint and log locations, TensorBoard,
data loading for small-file datasets, and compliance notes for serving from mainland-China regions.

Data: ``data/ops.yaml`` (drivers, CUDA, images, UEFI, with NVIDIA and Alibaba sources) and
``data/compliance.yaml`` (ICP filing, algorithm filing, the generative-AI interim measures; information
with sources and dates, never legal advice). Both are read lazily, once.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from importlib.resources import files
from typing import Any

from gpuplan.catalog.hardware.regions import is_mainland, load_compliance  # noqa: F401 - re-exported (one rule)
from gpuplan.files.datafiles import load_data
from gpuplan.i18n import _
from gpuplan.plan.money.transfer import job_transfers, plan_staged
from gpuplan.plan.record import high
from gpuplan.units import HOUR_S

TRAIN_TASKS = ("pretrain", "full", "lora", "qlora")


@functools.cache
def load_ops() -> dict[str, Any]:
    return load_data((files("gpuplan") / "data" / "ops.yaml"))


def family_of(instance_type: str | None) -> str | None:
    """``ecs.gn7i-c8g1.2xlarge`` -> ``gn7i`` (catalog first, then the naming rule)."""
    if not instance_type:
        return None
    try:
        from gpuplan.catalog.hardware.instances import get_instance

        return get_instance(instance_type).family
    except Exception:  # noqa: BLE001 - unknown types fall back to the naming rule
        pass
    name = instance_type.lower().removeprefix("ecs.")
    m = re.match(r"^([a-z]+\d+[a-z]*(?:-(?:tee|vws))?)", name)
    return m.group(1) if m else None


def generation_for(family: str | None) -> dict | None:
    """The ops.yaml generation entry that lists ``family``."""
    if not family:
        return None
    for g in load_ops()["generations"]:
        if family in g["families"]:
            return g
    return None


def compliance_notes(region: str | None, task: str) -> list[dict]:
    """Notes for a serving plan in a mainland region (empty otherwise)."""
    if task != "inference" or not is_mainland(region):
        return []
    doc = load_compliance()
    out = []
    for n in doc["notes"]:
        out.append({"id": n["id"], "title": n["title"], "applies_to": n["applies_to"], "summary": " ".join(n["summary"].split()),
                    "effective": str(n["effective"]), "as_of": str(n["as_of"]), "sources": list(n["sources"]),
                    "disclaimer": " ".join(doc["disclaimer"].split())})
    return out


def job_data_bytes(plan: dict) -> tuple[float | None, float | None]:
    """(input, output) bytes of a batch job's data on its disks (plan.storage.budget: the figures that sized them)."""
    budget = (plan.get("storage") or {}).get("budget") or {}
    return budget.get("dataset_bytes") or None, budget.get("output_bytes") or None


def plan_transfers(plan: dict, *, training: bool, model_bytes: float | None):
    """The plan's transfers and auto-release hours (gpuplan.plan.money.transfer.job_transfers, which the bundle's
    Terraform and PLAN.md use too) from its own figures: fixed costs, storage budget, time."""
    batch = not training and bool(plan.get("job"))
    input_bytes, output_bytes = job_data_bytes(plan) if batch else (None, None)
    return job_transfers(load_ops(), training=training, billing=plan.get("billing"), model_bytes=model_bytes,
                         checkpoint_bytes=(plan.get("storage") or {}).get("checkpoint_bytes"), time_s=plan.get("time_s"),
                         fixed=plan.get("fixed_costs"), batch=batch, input_bytes=input_bytes, output_bytes=output_bytes,
                         platform=plan.get("platform") or "ecs", staged_in_oss=plan_staged(plan),
                         time_high_s=high(plan.get("intervals"), "time_s", None))


def auto_release(plan: dict, task: str, now: dt.datetime | None = None, model_bytes: float | None = None) -> dict | None:
    """Auto-release for pay-as-you-go/spot training and batch jobs: first boot (start-up, driver install, image
    pull) + model download (+ a batch job's input) + the run at the high end of its time range (at least the
    estimate x (1 + margin)) + checkpoint or output upload, rounded up to the hour (gpuplan.plan.money.transfer: the
    same hours the bundle's Terraform sets)."""
    training = task in TRAIN_TASKS
    if not (training or plan.get("job")) or plan.get("billing") not in ("payg", "spot") \
            or plan.get("platform", "ecs") != "ecs":
        return None
    ops = load_ops()
    cfg = ops["training"]["auto_release"]
    time_s = plan.get("time_s")
    if not time_s:
        return {"hours": None, "text": _("set an auto-release time once the run length is known (no dataset size given)"),
                "api_field": cfg["api_field"], "terraform_argument": cfg["terraform_argument"], "source": cfg["source"]}
    t = plan_transfers(plan, training=training, model_bytes=model_bytes)
    hours = t.release_hours
    out = {"hours": hours, "margin": cfg["margin"], "api_field": cfg["api_field"],
           "terraform_argument": cfg["terraform_argument"], "source": cfg["source"],
           "first_boot_s": round(t.bootstrap_s, 1), "driver_install_s": t.driver_install_s,
           "image_pull_s": t.image_pull_s, "download_s": None if t.download_s is None else round(t.download_s, 1),
           "input_s": None if t.input_s is None else round(t.input_s, 1), "run_s": round(t.job_s or 0.0, 1),
           "release_run_s": round(t.release_run_s, 1), "operator_s": t.operator_s,
           "upload_s": None if t.upload_s is None else round(t.upload_s, 1)}
    args = {"hours": hours, "run": f"{(t.job_s or 0) / HOUR_S:.1f}", "wait": f"{t.release_run_s / HOUR_S:.1f}"}
    if training:
        out["text"] = _("release the instances {hours} h after launch: first boot, your launch steps, model download, the "
                        "run ({run} h; {wait} h at the high end of its range) and the checkpoint upload; checkpoints "
                        "must be on OSS/CPFS before then").format(**args)
    else:
        out["text"] = _("release the instances {hours} h after launch: first boot, your launch steps, model download, the "
                        "input copied from OSS, the run ({run} h; {wait} h at the high end of its range) and the output "
                        "upload; outputs must be on OSS or the data disk (kept after a release) before then").format(**args)
    if now is not None:
        at = (now.astimezone(dt.timezone.utc) + dt.timedelta(hours=hours)).replace(second=0, microsecond=0)
        out["release_at_utc"] = at.strftime("%Y-%m-%dT%H:%M:00Z")
    return out


def _driver_block(plan: dict) -> dict:
    ops = load_ops()
    platform = plan.get("platform", "ecs")
    if platform == "function-compute":
        return {"family": None, "generation": None,
                "image": [_("custom container image (Function Compute manages the host driver)")],
                "driver": _("managed by Function Compute"),
                "cuda": _("the container's CUDA must not exceed the host driver's (not published)"),
                "uefi": False, "sources": load_platform_sources()}
    fam = family_of(plan.get("instance_type"))
    gen = generation_for(fam)
    if gen is None:
        return {"family": fam, "generation": None, "image": list(ops["images"]["default"]), "driver": None, "cuda": None,
                "uefi": None, "sources": list(ops["images"]["sources"])}
    images = list((gen.get("image_overrides") or {}).get(fam, gen["images"]))
    uefi = bool(gen.get("uefi")) or fam in (gen.get("uefi_families") or ())
    if uefi:
        images = [i if "UEFI" in i else f"{i} (UEFI)" for i in images]
    vgpu = fam in ops["vgpu"]["families"]
    driver = (ops["vgpu"]["driver"] if vgpu else _(">= {version} (NVIDIA datacenter driver)").format(
        version=gen["min_driver"]))
    if gen.get("max_cuda"):
        cuda = _(">= {min} (recommended {recommended}); stay on CUDA {max}").format(
            min=gen["min_cuda"], recommended=gen["recommended_cuda"], max=gen["max_cuda"])
    else:
        cuda = _(">= {min} (recommended {recommended})").format(min=gen["min_cuda"], recommended=gen["recommended_cuda"])
    return {"family": fam, "generation": gen["generation"], "image": images, "driver": driver, "cuda": cuda,
            "min_cuda": gen["min_cuda"], "recommended_cuda": gen["recommended_cuda"], "min_driver": gen["min_driver"],
            "uefi": uefi, "notes": gen.get("notes"), "unconfirmed": list(gen.get("unconfirmed") or ()),
            "sources": list(gen["sources"]) + ([ops["vgpu"]["source"]] if vgpu else [])}


def load_platform_sources() -> list[str]:
    from gpuplan.plan.deploy.platform_data import load_platforms

    return list(load_platforms()["function_compute"]["sources"])


def _data_loading(workload) -> dict | None:
    cfg = load_ops()["training"]["data_loading"]
    ds = getattr(workload, "dataset", None)
    if ds is None:
        return None
    small = False
    per = ds.bytes_per_sample
    if per is None and ds.size_gib and ds.samples:
        per = ds.size_gib * (1024 ** 3) / ds.samples
    if per is not None and per < cfg["small_file_threshold_bytes"]:
        small = True
    text = " ".join(cfg["advice"].split())
    return {"small_files": small, "bytes_per_sample": per, "advice": text if small or per is None else
            "samples are large enough to read directly; keep them on CPFS/NAS or stream from OSS", "sources": cfg["sources"]}


def ops_advice(plan: dict, workload, *, now: dt.datetime | None = None, model_bytes: float | None = None) -> dict:
    """Operational advice for one plan (dict in the recommend contract) and its workload; ``model_bytes``: the
    weights each node downloads (for the auto-release time)."""
    ops = load_ops()
    task = (getattr(workload, "task", None) or "inference")
    training = task in TRAIN_TASKS
    region = plan.get("region")
    if region is None:
        cons = getattr(workload, "constraints", None)
        region = cons.regions[0] if cons and cons.regions else None
    drv = _driver_block(plan)
    tcfg = ops["training"]
    nodes = (plan.get("parallel") or {}).get("nodes_per_replica") or plan.get("instance_count") or 1
    ck = tcfg["checkpoints"]["multi_node"] if training and nodes > 1 else tcfg["checkpoints"]["single_node"]
    out = {
        "image": drv["image"], "driver": drv["driver"], "cuda": drv["cuda"], "uefi": drv["uefi"],
        "family": drv.get("family"), "generation": drv.get("generation"),
        "auto_release": auto_release(plan, task, now, model_bytes),
        "checkpoint_location": ck if training else _("model weights on OSS or NAS, mounted read-only into every replica"),
        "logs": {"service": tcfg["logs"]["service"], "how": tcfg["logs"]["how"], "source": tcfg["logs"]["source"]},
        "tensorboard": ({"how": tcfg["tensorboard"]["how"], "source": tcfg["tensorboard"]["source"]} if training else None),
        "data_loading": _data_loading(workload) if training else None,
        "compliance": compliance_notes(region, task),
        "sources": drv["sources"],
        "unconfirmed": drv.get("unconfirmed", []),
    }
    if drv.get("notes"):
        out["notes"] = drv["notes"]
    return out

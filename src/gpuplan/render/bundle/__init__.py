"""The plan bundle: a folder of ready-to-run files for one plan.

Call :func:`build_bundle` with a plan (one entry of ``recommend``'s ``plans``), the resolved
workload and the estimate of that plan's hardware and layout. It writes a new folder atomically
(rendered into a temporary sibling folder, then renamed), refuses to overwrite an existing one
unless ``force=True``, and returns its path. Contents: docs/plan-bundle.md.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.i18n import _
from gpuplan.render.bundle import plan_contract, serving, training
from gpuplan.render.bundle.cloud import deploy, infra, k8s, monitoring
from gpuplan.render.bundle.node import images
from gpuplan.render.bundle.planmd import charts, report
from gpuplan.render.bundle.context import Ctx
from gpuplan.render.bundle.context_build import build_context

__all__ = ["build_bundle", "render_bundle", "Ctx"]

EXECUTABLE_SUFFIXES = (".sh",)
# Alibaba Cloud AccessKey IDs start with "LTAI"; other cloud key shapes for good measure.
SECRET_PATTERNS = (re.compile(r"LTAI[0-9A-Za-z]{12,30}"), re.compile(r"AKIA[0-9A-Z]{16}"),
                   re.compile(r"AKID[0-9A-Za-z]{13,40}"))
SECRET_ENV = ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALICLOUD_ACCESS_KEY",
              "ALICLOUD_SECRET_KEY", "ALIBABA_CLOUD_SECURITY_TOKEN", "ALICLOUD_SECURITY_TOKEN", "OSS_ACCESS_KEY_ID",
              "OSS_ACCESS_KEY_SECRET", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "HF_TOKEN",
              "HUGGING_FACE_HUB_TOKEN")


def render_bundle(plan: dict, workload: Any, estimate: dict, *, lang: str = "en",
                  rejected: list[dict] | None = None, pareto: list[dict] | None = None) -> dict[str, str]:
    """Every bundle file as {relative path: text}, without touching the disk."""
    estimate = estimate or {}   # FC / EAS / ACK plans carry no ECS estimate
    c = build_context(plan, workload, estimate, lang=lang)
    files: dict[str, str] = {}
    if c.training:
        files.update(training.files(c))
    else:
        files.update(serving.files(c))
    files.update(images.files(c))          # the Dockerfile: an image with every command the platform runs
    platform = c.platform
    if platform in ("ecs", "ack"):
        # ECS instances: Terraform, cloud-init bootstrap, GPU check, systemd unit; ACK: the node pool runs them.
        files.update(infra.files(c) if platform == "ecs" else {})
        files.update(monitoring.files(c))
        files.update(k8s.files(c))
    # Function Compute / PAI-EAS: their own definition files (s.yaml / Terraform, service JSON) run the image.
    files.update(deploy.files(c, plan, workload))
    from gpuplan.render.autoscale import autoscale_files

    engine = monitoring.served_engine(c)
    if engine:
        # {} for training and serverless plans; multi-node replicas: no Deployment to scale, ESS only
        from gpuplan.render.bundle.node.oss import node_role
        from gpuplan.render.bundle.node.transfer import transfers

        node = {"disk_gib": c.data_disk_gib, "disk_level": c.data_disk_level, "bandwidth_mbit": transfers(c).bandwidth_mbit, "role": node_role(c),
                "data_dir": c.data_dir}
        files.update(autoscale_files(plan, workload, k8s=not c.multi_node, lang=c.lang, engine=engine,
                                     copies=1 if c.copies_per_node > 1 else None, port=c.serve_port, node=node))
    files["memory.svg"] = charts.memory_svg(c, estimate)
    chart = charts.cost_time_svg(c, plan, pareto)
    if chart is not None:
        files["cost-time.svg"] = chart
    paths = sorted([*files, "PLAN.md"])
    from gpuplan.plan.money.cost_breakdown import cost_breakdown

    breakdown = cost_breakdown(plan, workload)
    files["PLAN.md"] = report.plan_markdown(c, plan, estimate, rejected, paths, chart is not None, breakdown=breakdown)
    files["plan.json"] = plan_contract.plan_json(c, plan, workload, estimate, rejected, pareto, paths, breakdown=breakdown)
    _refuse_secrets(files)
    return dict(sorted(files.items()))


def _refuse_secrets(files: dict[str, str]) -> None:
    """Stop before writing if any file holds something shaped like a cloud credential or the value of
    a credential environment variable (the message never repeats the value)."""
    values = [v for v in (os.environ.get(k) for k in SECRET_ENV) if v and len(v) >= 8]
    for path, text in files.items():
        if any(p.search(text) for p in SECRET_PATTERNS) or any(v in text for v in values):
            raise GpuplanError(_("Refusing to write the plan bundle: {path} would contain something that looks "
                                 "like an access key or secret.").format(path=path),
                               hint=_("Remove credentials from the workload (name, model path) and the plan; "
                                      "credentials belong in environment variables only."))


def build_bundle(plan: dict, workload: Any, estimate: dict, out_dir: Path | str, *, lang: str = "en",
                 force: bool = False, rejected: list[dict] | None = None,
                 pareto: list[dict] | None = None) -> Path:
    """Write the plan bundle for ``plan`` into the new folder ``out_dir`` and return its path.

    ``workload`` is the resolved Workload (``resolve_defaults``); ``estimate`` is
    ``Estimate.to_dict()`` for the plan's hardware and layout. The folder is rendered in a
    temporary sibling and renamed into place, so a failure leaves nothing behind. An existing
    ``out_dir`` is an error unless ``force`` (then it is replaced, after the new one is complete).
    """
    out = Path(out_dir).expanduser()
    if out.exists() and not force:
        raise GpuplanError(_("{path} already exists.").format(path=out),
                           hint=_("Choose a new folder, or pass --force to replace it."))
    if out.exists() and not out.is_dir():
        raise GpuplanError(_("{path} exists and is not a folder.").format(path=out),
                           hint=_("Choose a folder path for --out."))
    files = render_bundle(plan, workload, estimate, lang=lang, rejected=rejected, pareto=pareto)
    parent = out.parent if str(out.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=parent))
    except OSError as exc:
        raise GpuplanError(_("Cannot create {path}: {reason}.").format(path=out, reason=exc.strerror or exc),
                           hint=_("Check the path and permissions.")) from None
    try:
        for rel, text in files.items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", newline="\n")
            mode = 0o755 if rel.endswith(EXECUTABLE_SUFFIXES) else 0o644
            path.chmod(mode)
        tmp.chmod(0o755)
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=parent))
            old.rmdir()
            out.rename(old)
            tmp.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(out)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise GpuplanError(_("Cannot write the plan bundle to {path}: {reason}.").format(path=out,
                                                                                        reason=exc.strerror or exc),
                           hint=_("Check free space and permissions.")) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out



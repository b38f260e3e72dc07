"""Storage that holds the whole training run (or batch job): checkpoint rotation is set in the launch files and keeps the number the
plan's storage was sized for, and the plan's own storage figure fits the disks the bundle creates.

Reads what the plan wrote (docs/plan-bundle.md, "Storage for the whole run"): ``plan.storage.budget`` (the bytes the
run keeps, counted once by gpuplan.plan.advice.storage.storage_budget: ``checkpoints_kept``, ``disk_needed_bytes`` on each
node's data disk, ``shared_needed_bytes`` on the shared file system) and ``bundle.checkpoint_rotation`` (the
``save_total_limit`` the launchers were written with). The check does not count the bytes again: it compares the
plan's figures with the rotation in the launch files and with the disks in the files the cloud reads (Terraform's
``data_disk_gib`` and ``cpfs_capacity_gib``; the plan's ``disk_bytes`` / ``shared_bytes`` where the bundle has no
Terraform). A batch job's input and output are in the same budget (``dataset_bytes``, ``output_bytes``): its data disk
is checked the same way.
"""

from __future__ import annotations

import re

from gpuplan.check.bundle import Bundle, Finding
from gpuplan.i18n import _
from gpuplan.units import GIB

LAUNCH_FILES = ("launch.sh", "swift-sft.sh", "llamafactory.yaml", "run-with-resume.sh", "k8s/job.yaml", "pai-dlc-job.json")
ROTATION = re.compile(r"save[_-]total[_-]limit\W{1,4}(\d+)", re.I)
# the setting handed to the trainer: --save_total_limit (train.py, ms-swift, Megatron) or save_total_limit: (YAML)
PASSED = re.compile(r"--save_total_limit\b|\bsave_total_limit\s*[:=]|\"save_total_limit\"")
TF_VARIABLES = "terraform/variables.tf"


def _rotation(b: Bundle) -> tuple[list[tuple[str, int, int]], bool]:
    """(file, line, kept) of every rotation number in the launch files (a flag's value or the default of the variable
    passed to it), and whether any launch file passes the setting to its trainer at all."""
    out, passed = [], False
    for rel in LAUNCH_FILES:
        for i, line in enumerate(b.lines(rel), 1):
            if line.lstrip().startswith("#"):
                continue
            passed = passed or bool(PASSED.search(line))
            for m in ROTATION.finditer(line):
                out.append((rel, i, int(m.group(1))))
    return out, passed


# The Terraform variable holding the capacity of the shared file system the bundle creates, by its kind
SHARED_CAPACITY_VARS = {"cpfs": "cpfs_capacity_gib", "extreme_nas": "nas_capacity_gib"}


def tf_default(b: Bundle, name: str) -> tuple[float, int] | None:
    """(default, line) of a numeric Terraform variable in terraform/variables.tf."""
    lines = b.lines(TF_VARIABLES)
    start = next((i for i, ln in enumerate(lines) if re.match(rf'\s*variable\s+"{re.escape(name)}"\s*\{{', ln)), None)
    if start is None:
        return None
    for i in range(start + 1, len(lines)):
        if re.match(r"\s*variable\s+\"", lines[i]):
            return None
        m = re.match(r"\s*default\s*=\s*([0-9.]+)\s*$", lines[i])
        if m:
            return float(m.group(1)), i + 1
    return None


def _fits(b: Bundle, shared: bool, need: float, planned: float) -> Finding | None:
    """The plan's need against the disk the bundle creates (Terraform's variable, else the plan's own figure)."""
    kind = b.field("plan.storage.shared.kind", None) if shared else None
    name = SHARED_CAPACITY_VARS.get(str(kind), "cpfs_capacity_gib") if shared else "data_disk_gib"
    tf = tf_default(b, name) if b.has(TF_VARIABLES) else None
    have, where, line = (tf[0] * GIB, TF_VARIABLES, tf[1]) if tf else (planned, "plan.json", None)
    if need <= have:
        return None
    text = (_("The run keeps {need:.0f} GiB on the shared file system (plan.storage.budget: weights, dataset, "
              "checkpoints kept, final export) but it holds {have:.0f} GiB: the job stops with no space left.")
            if shared else
            _("The run keeps {need:.0f} GiB on each node's data disk (plan.storage.budget: weights, dataset, "
              "checkpoints kept, final export, scratch) but the disk holds {have:.0f} GiB: the job stops with no "
              "space left."))
    return Finding(where, line, "storage", text.format(need=need / GIB, have=have / GIB))


def _batch_fits(b: Bundle) -> list[Finding]:
    """A batch job's input and output (plan.storage.budget) against the data disk the bundle creates."""
    budget = b.field("plan.storage.budget", None)
    if not b.field("plan.job", None) or not isinstance(budget, dict):
        return []
    need = float(budget.get("disk_needed_bytes") or 0)
    tf = tf_default(b, "data_disk_gib") if b.has(TF_VARIABLES) else None
    have, where, line = (tf[0] * GIB, TF_VARIABLES, tf[1]) if tf else (float(budget.get("disk_bytes") or 0), "plan.json", None)
    if need <= have:
        return []
    return [Finding(where, line, "storage", _(
        "The batch job keeps {need:.0f} GiB on each node's data disk (plan.storage.budget: weights, the job's input "
        "and output, scratch) but the disk holds {have:.0f} GiB: the job stops with no space left.").format(
            need=need / GIB, have=have / GIB))]


def check(b: Bundle) -> list[Finding]:
    if not b.training:
        return _batch_fits(b)
    out: list[Finding] = []
    kept = int(b.field("plan.storage.budget.checkpoints_kept"))
    rotation = b.field("bundle.checkpoint_rotation", None)
    if rotation is not None and int(rotation) != kept:
        out.append(Finding("plan.json", b.line_of("plan.json", '"checkpoint_rotation"'), "rotation", _(
            "bundle.checkpoint_rotation is {n}; the plan's storage was sized for {kept} checkpoints.").format(
                n=rotation, kept=kept)))
    found, passed = _rotation(b)
    launcher = next((f for f in LAUNCH_FILES if b.has(f)), "launch.sh")
    if not passed:
        out.append(Finding(launcher, None, "rotation", _(
            "No launch file sets checkpoint rotation (--save_total_limit or its equivalent): every checkpoint is "
            "kept until the disk is full; the plan keeps {kept}.").format(kept=kept)))
    for rel, line, n in found:
        if n != kept:
            out.append(Finding(rel, line, "rotation", _(
                "This keeps {n} checkpoints; the plan's storage was sized for {kept}.").format(n=n, kept=kept)))
    budget = b.field("plan.storage.budget")
    disk_need = float(b.field("plan.storage.budget.disk_needed_bytes"))
    shared_need = float(b.field("plan.storage.budget.shared_needed_bytes", 0) or 0)
    for shared, need, planned in ((False, disk_need, budget.get("disk_bytes")),
                                  (True, shared_need, budget.get("shared_bytes"))):
        f = _fits(b, shared, need, float(planned or 0)) if need > 0 else None
        if f:
            out.append(f)
    return out

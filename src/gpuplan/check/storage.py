"""Storage that holds the whole training run: checkpoint rotation is set in the launch files and matches the plan,
and the weights + dataset + the checkpoints kept fit the planned disks (data disk + shared file system).

Reads plan.json ``plan.storage``: ``checkpoints_kept`` (the rotation: ``--save_total_limit`` and its equivalents),
``checkpoint_bytes``, ``weights_bytes``, ``dataset_bytes`` (null: no dataset size given), ``disk.size_gib`` and
``shared.capacity_tib`` (docs/plan-bundle.md).
"""

from __future__ import annotations

import re

from gpuplan.check.bundle import Bundle, Finding
from gpuplan.i18n import _
from gpuplan.units import GIB, TIB

LAUNCH_FILES = ("launch.sh", "swift-sft.sh", "llamafactory.yaml", "run-with-resume.sh", "k8s/job.yaml", "pai-dlc-job.json")
ROTATION = re.compile(r"save[_-]total[_-]limit\W{1,4}(\d+)", re.I)


def _rotation(b: Bundle) -> list[tuple[str, int, int]]:
    """(file, line, kept) of every rotation setting in the launch files."""
    out = []
    for rel in LAUNCH_FILES:
        for i, line in enumerate(b.lines(rel), 1):
            if line.lstrip().startswith("#"):
                continue
            for m in ROTATION.finditer(line):
                out.append((rel, i, int(m.group(1))))
    return out


def check(b: Bundle) -> list[Finding]:
    if not b.training:
        return []
    out: list[Finding] = []
    kept = int(b.field("plan.storage.checkpoints_kept"))
    found = _rotation(b)
    launcher = next((f for f in LAUNCH_FILES if b.has(f)), "launch.sh")
    if not found:
        out.append(Finding(launcher, None, "rotation", _(
            "No launch file sets checkpoint rotation (--save_total_limit or its equivalent): every checkpoint is "
            "kept until the disk is full; the plan keeps {kept}.").format(kept=kept)))
    for rel, line, n in found:
        if n != kept:
            out.append(Finding(rel, line, "rotation", _(
                "This keeps {n} checkpoints; the plan's storage was sized for {kept}.").format(n=n, kept=kept)))
    ckpt = float(b.field("plan.storage.checkpoint_bytes"))
    weights = float(b.field("plan.storage.weights_bytes"))
    dataset = float(b.field("plan.storage.dataset_bytes", 0) or 0)
    disk = float(b.field("plan.storage.disk.size_gib")) * GIB
    shared = float(b.field("plan.storage.shared.capacity_tib", 0) or 0) * TIB
    need = weights + dataset + kept * ckpt
    if need > disk + shared:
        out.append(Finding("plan.json", None, "storage", _(
            "The run needs {need:.0f} GiB (weights {weights:.0f} + dataset {dataset:.0f} + {kept} checkpoints of "
            "{ckpt:.0f} GiB) but the plan's disks hold {have:.0f} GiB: the job stops with no space left.").format(
                need=need / GIB, weights=weights / GIB, dataset=dataset / GIB, kept=kept, ckpt=ckpt / GIB,
                have=(disk + shared) / GIB)))
    return out

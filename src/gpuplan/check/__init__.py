"""``gpuplan check DIR``: a preflight that reads a plan bundle as the cloud and the node would, before anyone pays.

Each module checks one concern and returns :class:`Finding` records (file, line, what is wrong):

- ``kube``: Kubernetes manifests against the API schemas (kubernetes-validate, optional), the PodMonitor, the HPA
  or KEDA maximum against the plan's peak replicas and the metrics pipeline it reads;
- ``fc``: Function Compute within the CreateFunction limits, s.yaml and its Terraform identical;
- ``terraform``: every alicloud resource's arguments against the provider's schema (vendored), references,
  ``auto_release_hours = 0`` meaning never, several instances of a service behind a load balancer;
- ``scripts``: ``bash -n`` and shellcheck (when installed) on every shell script, cloud-init's included;
- ``schemas``: cloud-init, DeepSpeed, PAI-DLC and fc3 JSON schemas (jsonschema, optional);
- ``mainland``: in mainland regions nothing that runs on the node names Docker Hub, nvcr.io or huggingface.co;
- ``pins``: every requirements pin installable on the declared Python (``environment.python``) and consistent with
  the other pins (packaging metadata shipped in data/pin_metadata.json, no network);
- ``storage``: checkpoint rotation set; weights + dataset + kept checkpoints within the planned disks;
- ``weights``: every launcher loads the local copy fetch-model.sh writes.

A check whose optional validator is not installed says so in ``Report.notes`` and passes that part.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gpuplan.check import fc, kube, mainland, pins, schemas, scripts, storage, terraform, weights
from gpuplan.check.bundle import Bundle, Finding, MissingField
from gpuplan.errors import GpuplanError
from gpuplan.i18n import _

__all__ = ["Finding", "Report", "check_bundle", "CHECKS"]

CHECKS: tuple[tuple[str, Callable[[Bundle], list[Finding]]], ...] = (
    ("scripts", scripts.check), ("schemas", schemas.check), ("kube", kube.check), ("fc", fc.check),
    ("terraform", terraform.check), ("mainland", mainland.check), ("pins", pins.check),
    ("storage", storage.check), ("weights", weights.check),
)


@dataclass(frozen=True)
class Report:
    """What the preflight found (sorted by file and line) and what it could not check (notes)."""

    path: str
    findings: tuple[Finding, ...]
    notes: tuple[str, ...]
    checked_files: int

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_dict(self) -> dict:
        return {"schema_version": 1, "path": self.path, "ok": self.ok, "checked_files": self.checked_files,
                "findings": [f.to_dict() for f in self.findings], "notes": list(self.notes)}


def _missing(name: str) -> Finding:
    return Finding("plan.json", None, "plan-field", _(
        "plan.json has no {field}, which the preflight needs; rewrite the bundle with this gpuplan version "
        "(`gpuplan plan`).").format(field=name))


def check_bundle(path: Path | str, only: tuple[str, ...] | None = None) -> Report:
    """Run every check (or the named ones) over the bundle folder ``path``."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise GpuplanError(_("{path} is not a folder.").format(path=root),
                           hint=_("Pass the folder `gpuplan plan --out` wrote."))
    b = Bundle(root)
    out: list[Finding] = []
    if not b.has("plan.json"):
        out.append(Finding("plan.json", None, "plan-missing", _(
            "The bundle has no plan.json; the preflight reads the plan from it.")))
    else:
        _doc, err = b.json("plan.json")
        if err:
            out.append(err)
    seen: set[str] = set()
    for name, run in CHECKS:
        if only and name not in only:
            continue
        try:
            out.extend(run(b))
        except MissingField as exc:
            if exc.name not in seen and b.plan_json:
                seen.add(exc.name)
                out.append(_missing(exc.name))
    unique = {(f.path, f.line, f.code, f.message): f for f in out}
    findings = tuple(sorted(unique.values(), key=lambda f: (f.path, f.line or 0, f.code, f.message)))
    return Report(str(root), findings, tuple(dict.fromkeys(b.notes)), len(b.files))

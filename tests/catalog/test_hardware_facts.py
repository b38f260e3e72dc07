"""docs/hardware-facts.md stays in sync with the catalogs.

The doc's `gpu-claims` YAML block is checked against gpus.yaml (every correct value equals the
catalog, every wrong value differs); its `family-claims` block is checked against the Alibaba
instance catalog, read directly as CSV (skipped until that file exists).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
import yaml

from gpuplan.catalog.hardware.gpus import load_gpus

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "hardware-facts.md"
INSTANCES_CSV = ROOT / "src" / "gpuplan" / "data" / "clouds" / "alibaba" / "instances.csv"


def _yaml_block(marker: str) -> list[dict]:
    """The fenced ```yaml block whose first line is the comment `# <marker>: ...`."""
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    for block in blocks:
        if block.lstrip().startswith(f"# {marker}:"):
            data = yaml.safe_load(block)
            assert isinstance(data, list) and data, f"{marker} block is empty"
            return data
    raise AssertionError(f"no ```yaml block starting with '# {marker}:' in {DOC}")


GPU_CLAIMS = _yaml_block("gpu-claims")
FAMILY_CLAIMS = _yaml_block("family-claims")


def _same(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b or a == b and type(a) is type(b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(float(a) - float(b)) <= 1e-6 * max(1.0, abs(float(b)))
    return a == b


def test_claim_blocks_are_well_formed():
    for c in GPU_CLAIMS:
        assert set(c) == {"claim", "gpu", "field", "wrong_value", "correct_value", "source"}, c
        assert str(c["source"]).startswith("https://"), c
    for c in FAMILY_CLAIMS:
        assert set(c) == {"claim", "family", "correct_gpu"}, c


@pytest.mark.parametrize("claim", GPU_CLAIMS, ids=lambda c: f"{c['gpu']}.{c['field']}")
def test_gpu_claim_correct_value_matches_catalog(claim):
    gpus = load_gpus()
    assert claim["gpu"] in gpus, f"unknown GPU id {claim['gpu']!r}"
    record = gpus[claim["gpu"]].to_dict()
    assert claim["field"] in record, f"unknown field {claim['field']!r}"
    actual = record[claim["field"]]
    assert _same(actual, claim["correct_value"]), (
        f"{claim['gpu']}.{claim['field']}: doc says {claim['correct_value']!r}, catalog has {actual!r}"
    )
    assert not _same(actual, claim["wrong_value"]), f"the guide's wrong value {claim['wrong_value']!r} is in the catalog"


@pytest.mark.parametrize("claim", [c for c in FAMILY_CLAIMS if c["correct_gpu"]], ids=lambda c: c["family"])
def test_family_claim_gpu_ids_exist(claim):
    assert claim["correct_gpu"] in load_gpus()


def _instance_rows() -> list[dict[str, str]]:
    if not INSTANCES_CSV.exists():
        pytest.skip(f"{INSTANCES_CSV.relative_to(ROOT)} does not exist yet (written by the Alibaba catalog task)")
    with INSTANCES_CSV.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and {"instance_type", "family", "gpu"} <= set(rows[0]), "instances.csv lacks family/gpu columns"
    return rows


@pytest.mark.parametrize("claim", FAMILY_CLAIMS, ids=lambda c: c["family"])
def test_family_claim_matches_alibaba_catalog(claim):
    rows = [r for r in _instance_rows() if r["family"].strip() == claim["family"]]
    if claim["correct_gpu"] is None:
        gpu_rows = [r["instance_type"] for r in rows if r["gpu"].strip()]
        assert not gpu_rows, f"{claim['family']} should have no GPU instance types, catalog has {gpu_rows}"
    else:
        assert rows, f"family {claim['family']} missing from {INSTANCES_CSV.name}"
        wrong = {r["instance_type"]: r["gpu"] for r in rows if r["gpu"].strip() != claim["correct_gpu"]}
        assert not wrong, f"{claim['family']} should be {claim['correct_gpu']}: {wrong}"

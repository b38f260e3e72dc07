"""Golden files: a single-GPU LoRA job, a two-node eRDMA training job, a vLLM service (Chinese
PLAN.md), a spot job and an image batch job (FLUX.1-schnell). Regenerate with UPDATE_GOLDEN=1 after an intended change and review the diff."""

from __future__ import annotations

import shutil

import pytest

from gpuplan.render.bundle import render_bundle

from .scenarios import GOLDEN, GOLDEN_SCENARIOS, LANG, PARETO, REJECTED, UPDATE, inputs


@pytest.mark.parametrize("name", GOLDEN_SCENARIOS)
def test_bundle_matches_golden_files(name):
    plan, workload, est = inputs(name)
    files = render_bundle(plan, workload, est, lang=LANG.get(name, "en"), rejected=REJECTED.get(name),
                          pareto=PARETO.get(name))
    folder = GOLDEN / name
    if UPDATE:
        shutil.rmtree(folder, ignore_errors=True)
        for rel, text in files.items():
            path = folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", newline="\n")
    assert folder.is_dir(), f"no golden files for {name}: run UPDATE_GOLDEN=1 pytest tests/bundle"
    on_disk = {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}
    assert on_disk == set(files), "the set of bundle files changed (UPDATE_GOLDEN=1 to accept)"
    for rel, text in files.items():
        expected = (folder / rel).read_text(encoding="utf-8")
        assert text == expected, f"{name}/{rel} differs from its golden file (UPDATE_GOLDEN=1 to accept)"

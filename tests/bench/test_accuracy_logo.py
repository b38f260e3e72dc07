"""bench/accuracy.py: leave-one-group-out cross-validation through the efficiency-table seam.

Runs on three small groups of bench/data/measurements.csv (13 rows) so it stays fast."""

import math
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rows(acc):
    all_rows = acc.load([ROOT / "bench" / "data" / "measurements.csv"])
    return [r for r in all_rows if r["group"] in ("hfquant", "peft", "vllmci")]


def test_every_knob_names_existing_efficiency_keys(acc):
    warn: list[str] = []
    for knob in acc.KNOBS:
        assert acc.expand_keys(knob, warn), knob.name
    assert warn == []


def test_a_renamed_key_is_skipped_with_a_warning_not_a_crash(acc):
    warn: list[str] = []
    assert acc.expand_keys(acc.Knob("gone", "memory", ("memory.no_such_constant",)), warn) == {}
    assert warn and "no_such_constant" in warn[0]


def test_logo_scores_each_group_with_knobs_fitted_without_it(acc, rows):
    res = acc.cross_validate(rows)
    assert {r.group for r in res.logo} == {"hfquant", "peft", "vllmci"}
    assert len(res.logo) == len(rows) == len(res.shipped)
    assert set(res.fold_knobs) == {"hfquant", "peft", "vllmci"}
    # a fold's multipliers come from the grid; the held-out rows have real predictions
    for kv in res.fold_knobs.values():
        assert all(v in acc.GRID for v in kv.values())
    assert all(r.predicted is not None and math.isfinite(r.error) for r in res.logo)
    # the in-sample refit can only lower the fitted loss relative to the shipped constants
    groups = {r.group for r in res.shipped}
    mem_groups = {r.group for r in res.shipped if r.kind == "memory"}
    assert acc.loss([r for r in res.insample if r.kind == "memory"], mem_groups) <= \
        acc.loss([r for r in res.shipped if r.kind == "memory"], mem_groups) + 1e-12
    assert groups == {"hfquant", "peft", "vllmci"}
    text = acc.summarize(res, ["subset"])
    assert "## Headline (LOGO, out of sample)" in text and "| memory |" in text


def test_classes(acc, rows):
    by_id = {r["id"]: acc.classify(r) for r in rows}
    assert by_id["H439-peft"] in ("full fine-tuning", "LoRA / QLoRA")
    assert all(c == "serving: vllm" for i, c in by_id.items() if i.endswith("vllmci"))


def test_folds_in_forked_workers_give_the_same_rows_as_one_process(acc, rows):
    one, two = acc.cross_validate(rows), acc.cross_validate(rows, jobs=2)
    assert [(r.id, r.metric, r.predicted) for r in one.logo] == [(r.id, r.metric, r.predicted) for r in two.logo]
    assert one.fold_knobs == two.fold_knobs


def test_bands_skip_rows_whose_stated_conditions_did_not_run(acc):
    def row(group, metric):
        return acc.Row(f"X-{group}", group, "c", metric, 1.0, 1.0, 0.0, True)

    kept = acc.band_rows([row("swspd", "train_samples_per_s"), row("swspd", "peak_mem_gib_per_gpu"),
                          row("torchtune", "peak_mem_gib_per_gpu"), row("llamafactory", "train_samples_per_s"),
                          row("peft", "train_samples_per_s")])
    # swspd's samples/s cannot be compared (unknown kept lengths) but its memory rows can; torchtune's memory
    # rows did not run the stated config; llamafactory's samples are far shorter than the stated 1,024 tokens
    assert [(r.group, r.kind) for r in kept] == [("swspd", "memory"), ("peft", "speed")]


def test_a_knob_leaves_its_shipped_value_only_for_a_real_gain(acc, monkeypatch):
    """A flat loss (the activation factor's: within 0.03 % from 0.8 to 1.4) keeps the shipped constant; a loss
    MIN_GAIN or more lower moves it."""
    class Ev:
        knobs = (acc.Knob("k", "memory", ("memory.workspace_bytes",)),)
        base = [{"memory.workspace_bytes": 1.0}]

    def flat(_ev, idx, _groups):
        return 1.0 - 0.0003 * abs(idx[0] - acc.ONE) / len(acc.GRID)

    monkeypatch.setattr(acc, "_objective", flat)
    assert acc.fit(Ev(), {"g"}) == (acc.ONE,)
    best = acc.GRID.index(0.8)

    def steep(_ev, idx, _groups):
        return 1.0 - (0.01 if idx[0] == best else 0.0)

    monkeypatch.setattr(acc, "_objective", steep)
    assert acc.fit(Ev(), {"g"}) == (best,)


def test_each_held_out_set_is_scored_and_reported_on_its_own(acc, tmp_path, monkeypatch):
    import interval_report as ir

    src = [r for r in acc.load([ROOT / "bench" / "data" / "measurements.csv"]) if r["group"] == "peft"][:2]
    paths = {}
    for label, row in zip(("held-out 1", "held-out 2"), src, strict=True):
        p = tmp_path / f"{label[-1]}.csv"
        import csv

        with p.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(row))
            w.writeheader()
            w.writerow(row)
        paths[label] = p
    paths["held-out 3"] = tmp_path / "missing.csv"          # a set whose file is absent is skipped, not an error
    monkeypatch.setattr(ir, "HOLDOUT_SETS", paths)
    sets = acc.score_holdout_sets()
    assert list(sets) == ["held-out 1", "held-out 2"]
    assert [r.id for r in sets["held-out 2"]] == [src[1]["id"]]
    lines = ir.holdout_summary("held-out 2", paths["held-out 2"], sets["held-out 2"], acc._stats, acc._fit_share)
    assert lines[0].startswith("## Held-out 2 (bench/data/holdout/2.csv")


def test_sets_in_the_bands_are_reported_nested_and_a_later_set_against_the_shipped_bands(acc, tmp_path, monkeypatch):
    """A held-out set already scored (interval_report.BAND_SETS) makes the bands with the project table, so its
    coverage is read against bands built without each of its groups; a set gathered later is read against the bands
    as shipped (its first, unseen scoring)."""
    import interval_report as ir

    def row(i, group, value):
        return acc.Row(id=f"{group}{i}", group=group, cls="x", metric="train_tokens_per_s_per_gpu", measured=value,
                       predicted=100.0, error=None, fits=True, icls="train/full")

    dev = [row(i, f"d{g}", 100.0 * (1.0 + 0.05 * g)) for g in range(6) for i in range(3)]
    old = [row(i, "oldset", 300.0) for i in range(3)]       # 3x faster than estimated: outside every band
    new = [row(i, "newset", 300.0) for i in range(3)]
    monkeypatch.setattr(ir, "BAND_SETS", ("held-out 1",))
    path = tmp_path / "intervals.json"
    doc = ir.write_intervals(dev + old, ["m.csv"], set(), {}, {r.group for r in dev + old}, path=path)
    text = ir.report(doc, dev + old, {"held-out 1": old, "held-out 2": new})
    assert "held-out 1 (nested)" in text and "held-out 2:" in text and "held-out 2 (nested)" not in text
    assert doc["groups"]["time"] == 7                           # the set's group is one of the bands' groups

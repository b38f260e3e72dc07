"""Terminal output that fits: at COLUMNS=100 (and 80) the recommend, serving, instances and compare
tables show every instance type whole and no line is wider than the terminal (measured in cells:
a Chinese character is two); ``--wide`` shows every column; estimated prices carry a mark and a
legend; warnings that repeat per plan are said once."""

from __future__ import annotations

import glob
import json
import re
from pathlib import Path

import pytest
import yaml
from rich.cells import cell_len

from clirun import run_cli
from gpuplan.render.fit import Column, choose, said_once

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(glob.glob(str(ROOT / "examples" / "*.yaml")))
BURSTY = {"name": "bursty-chat", "model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "prompt_tokens": 512,
          "output_tokens": 256, "serving": {"requests_per_s": 0.005}, "constraints": {"regions": ["cn-hangzhou"]}}


def run(monkeypatch, columns: int | None, *args: str) -> tuple[int, str, str]:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", str(columns))
    return run_cli(*args)


@pytest.fixture(scope="module")
def bursty_file(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("w") / "bursty.yaml"
    path.write_text(yaml.safe_dump(BURSTY))
    return str(path)


def _widest(text: str) -> int:
    return max((cell_len(line) for line in text.splitlines()), default=0)


def _short(instance_type: str) -> str:
    return instance_type.removeprefix("ecs.")


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("which", [*[Path(e).stem for e in EXAMPLES], "bursty-serving"])
def test_recommend_fits_100_columns_and_shows_whole_instance_types(monkeypatch, bursty_file, which, lang):
    path = bursty_file if which == "bursty-serving" else str(ROOT / "examples" / f"{which}.yaml")
    code, out, err = run(monkeypatch, 100, "recommend", path, "--lang", lang)
    assert code in (0, 1) and "Internal error" not in out + err
    assert _widest(out) <= 100, max(out.splitlines(), key=cell_len)
    code, js, _ = run(monkeypatch, 100, "recommend", path, "--json")
    plans = json.loads(js)["plans"]
    assert plans
    table = out.split("\n\n")[0]
    for p in plans:
        assert _short(p["instance_type"]) in out, p["instance_type"]
    # the instance type column is never cut with an ellipsis
    assert "…" not in "\n".join(line for line in table.splitlines()[:3 + 3 * len(plans)])


def test_recommend_at_80_columns_does_not_crash_and_fits(monkeypatch, bursty_file):
    for path in [*EXAMPLES, bursty_file]:
        for lang in ("en", "zh"):
            code, out, err = run(monkeypatch, 80, "recommend", path, "--lang", lang)
            assert code in (0, 1) and "Internal error" not in out + err, path
            assert _widest(out) <= 80, (path, lang, max(out.splitlines(), key=cell_len))


def test_wide_shows_every_column_and_the_narrow_table_folds_them(monkeypatch, bursty_file):
    _, narrow, _ = run(monkeypatch, 100, "recommend", bursty_file)
    _, wide, _ = run(monkeypatch, 100, "recommend", bursty_file, "--wide")
    head = lambda text: next(line for line in text.splitlines() if "Instance type" in line)  # noqa: E731
    for col in ("Platform", "Instances", "GPU", "Layout", "Memory/GPU", "Billing", "Per hour", "Replicas", "Monthly",
                "per 1M output tokens", "Pareto"):
        assert col in head(wide), col
    assert "Layout" not in head(narrow)                       # folded ...
    assert "Layout TP1, " in narrow                            # ... into the detail line under its plan
    assert _widest(wide) > 100


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("args", [(), ("--family", "gn7i"), ("--gpu", "A100"), ("--region", "cn-beijing")])
def test_instances_fit_100_columns_with_every_type_whole(monkeypatch, args, lang):
    code, out, err = run(monkeypatch, 100, "instances", *args, "--lang", lang)
    assert code == 0, err
    assert _widest(out) <= 100, max(out.splitlines(), key=cell_len)
    _, js, _ = run(monkeypatch, 100, "instances", *args, "--json")
    types = [i["instance_type"] for i in json.loads(js)["instances"]]
    lines = out.splitlines()
    for t in types:
        assert any(line.split()[:1] == [t] for line in lines), t   # whole, at the start of its row
    code, out80, _ = run(monkeypatch, 80, "instances", *args, "--lang", lang)
    assert code == 0 and _widest(out80) <= 80


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_compare_fits_100_columns(monkeypatch, lang):
    path = str(ROOT / "examples" / "qwen2.5-7b-lora.yaml")
    code, out, err = run(monkeypatch, 100, "compare", path, "--lang", lang)
    assert code in (0, 1) and "Internal error" not in out + err
    assert _widest(out) <= 100
    _, js, _ = run(monkeypatch, 100, "compare", path, "--json")
    for c in json.loads(js)["clouds"]:
        if c.get("plan"):
            assert c["plan"]["instance_type"] in out
    code, out80, _ = run(monkeypatch, 80, "compare", path, "--lang", lang)
    assert code in (0, 1) and _widest(out80) <= 80


@pytest.mark.parametrize("example", ["qwen2.5-7b-lora", "qwen-7b-full-zero"])
def test_estimated_prices_are_marked_and_others_are_not(monkeypatch, example):
    # the LoRA example allows spot; no spot price is bundled, so spot is payg x 30 % (an estimate);
    # the full fine-tuning example is pay-as-you-go only
    path = str(ROOT / "examples" / f"{example}.yaml")
    _, js, _ = run(monkeypatch, 100, "recommend", path, "--json", "--top", "8")
    plans = json.loads(js)["plans"]
    assert plans
    _, out, _ = run(monkeypatch, 160, "recommend", path, "--top", "8", "--wide")
    rows = {}
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0].isdigit():
            rows[int(parts[0])] = line
    for p in plans:
        row = rows[p["rank"]]
        money = re.findall(r"CNY ([\d,.]+~?)", row)
        assert money and all(w.endswith("~") == p["price_estimated"] for w in money), row
    estimated = any(p["price_estimated"] for p in plans)
    assert any(line.startswith("~ estimated price") for line in out.splitlines()) == estimated
    if example == "qwen2.5-7b-lora":
        assert estimated
        _, zh, _ = run(monkeypatch, 100, "recommend", path, "--lang", "zh")
        assert "~ 估算价格" in zh


def test_repeated_warnings_are_said_once(monkeypatch, bursty_file):
    _, js, _ = run(monkeypatch, 100, "recommend", bursty_file, "--json")
    dated = [w for w in json.loads(js)["warnings"] if w.startswith("prices date from")]
    assert len(dated) > 1                                      # one per price date in the JSON ...
    _, out, _ = run(monkeypatch, 100, "recommend", bursty_file)
    warnings = out.split("Warnings\n")[1].split("Assumptions\n")[0]
    bullets = [b for b in warnings.split("\n  - ") if "prices date from" in b]
    assert len(bullets) == 1 and f"(and {len(dated) - 1} more like it)" in bullets[0]   # ... said once here


def test_said_once_merges_by_name_and_by_shape():
    lines = ["no spot price for gn7i-c8g1.2xlarge in cn-hangzhou: using the cn-shanghai price as a proxy",
             "no spot price for gn8is.2xlarge in cn-hangzhou: using the cn-shanghai price as a proxy",
             "gn7-c13g1.26xlarge has no eRDMA/RoCE: 8 nodes talk over the VPC network",
             "gn7-c13g1.26xlarge has no eRDMA/RoCE: 4 nodes talk over the VPC network",
             "a different warning"]
    out = said_once(lines, ["gn7i-c8g1.2xlarge", "gn8is.2xlarge", "gn7-c13g1.26xlarge"], lambda n: f"(+{n})")
    assert out == ["no spot price for gn7i-c8g1.2xlarge, gn8is.2xlarge in cn-hangzhou: using the cn-shanghai price "
                   "as a proxy",
                   "gn7-c13g1.26xlarge has no eRDMA/RoCE: 8 nodes talk over the VPC network (+1)",
                   "a different warning"]


def test_choose_keeps_priority_zero_columns_and_fits_when_it_can():
    cols = [Column("#", 0), Column("Instance type", 0), Column("Layout", 5), Column("Cost", 0), Column("GPU", 2)]
    rows = [["1", "gn7i-c32g1.16xlarge", "TP2, PP1, DP1, ckpt none, mb 1 x ga 16", "CNY 12,775.95", "2 x A10-24GB"]]
    for width in (20, 40, 60, 80, 100, 200):
        keep = choose(cols, rows, width)
        assert {0, 1, 3} <= set(keep)
        shown = 1 + sum(max(len(cols[i].header), len(rows[0][i])) for i in keep) + 2 * (len(keep) - 1)
        assert shown <= width or keep == [0, 1, 3]
    assert choose(cols, rows, 10, wide=True) == [0, 1, 2, 3, 4]
    assert choose(cols, rows, 60) == [0, 1, 3, 4]             # GPU fits where Layout does not

"""`units.parse_amount`: the one reader of amounts as people type them (the wizard's answers); `units.fmt_rate`: rates shown."""

from __future__ import annotations

import io

import pytest

from gpuplan.ask import ask_lines, build_workload
from gpuplan.errors import GpuplanError
from gpuplan.i18n import tr
from gpuplan.units import AMOUNT_FORMS, fmt_rate, parse_amount


@pytest.mark.parametrize("text, kind, value", [
    ("5万", "count", 50_000), ("1.5e9", "count", 1.5e9), ("1k", "count", 1_000), ("2k", "money", 2_000),
    ("1.5M", "count", 1.5e6), ("10亿", "count", 1e9), ("5w", "count", 50_000), ("50,000", "count", 50_000),
    ("2000元", "money", 2_000), ("¥2000", "money", 2_000), ("￥2,000", "money", 2_000), ("5万元", "money", 50_000),
    ("3000 CNY", "money", 3_000), ("3天", "hours", 72), ("48小时", "hours", 48), ("48h", "hours", 48),
    ("48", "hours", 48), ("2 weeks", "hours", 336), ("90分钟", "hours", 1.5), ("３天", "hours", 72),
    ("1.5s", "ms", 1_500), ("1.5秒", "ms", 1_500), ("800ms", "ms", 800), ("800", "ms", 800), ("0.5", "number", 0.5),
])
def test_what_people_type_is_read(text, kind, value):
    assert parse_amount(text, kind) == pytest.approx(value)


@pytest.mark.parametrize("text, kind", [
    ("many", "count"), ("-5", "count"), ("0", "count"), ("nan", "count"), ("inf", "count"), ("5 apples", "count"),
    ("$200", "money"), ("200 USD", "money"), ("3 apples", "hours"), ("soon", "hours"), ("1k", "number"),
    ("2 minutes of fame", "ms"),
])
def test_what_is_not_an_amount_says_the_expected_form(text, kind):
    with pytest.raises(ValueError) as exc:
        parse_amount(text, kind)
    assert str(exc.value) == AMOUNT_FORMS[kind]
    assert tr(AMOUNT_FORMS[kind], "zh") != AMOUNT_FORMS[kind]      # said in Chinese too


def test_the_wizard_reads_chinese_amounts_into_the_workload():
    answers = ask_lines(io.StringIO("lora\nQwen/Qwen2.5-7B-Instruct\n5万\n2k\n1\n3天\n¥2000\n"), "zh")
    w = build_workload(answers)
    assert w["dataset"] == {"samples": 50_000, "tokens_per_sample": 2_000, "epochs": 1.0}
    assert w["constraints"] == {"currency": "CNY", "deadline_hours": 72.0, "budget": 2000.0}


@pytest.mark.parametrize("lang, words", [("en", "a whole number such as"), ("zh", "一个整数")])
def test_a_fraction_of_a_sample_is_refused_with_the_expected_form(lang, words):
    with pytest.raises(GpuplanError) as exc:
        ask_lines(io.StringIO("lora\nQwen/Qwen2.5-7B-Instruct\n2.5\n"), lang)
    assert words in exc.value.hint


@pytest.mark.parametrize(("per_s", "text"), [(0.0109, "0.0109"), (0.00547, "0.00547"), (0.519, "0.519"),
                                              (1.5, "1.50"), (99.994, "99.99"), (530.76, "531"), (12345.6, "12,346"),
                                              (None, "-")])
def test_a_rate_keeps_three_figures_at_any_size(per_s, text):
    """Before: a video job's 0.0109 videos/s read "0.01" and its model copy's 0.00547/s read "0.01" too."""
    assert fmt_rate(per_s) == text

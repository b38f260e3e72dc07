"""The shared file system of a multi-node training run (plan/advice/storage.py shared_fs): Extreme NAS, which the
nodes mount with the stock NFS client, sized to the bandwidth step that carries the need (storage.yaml nas_extreme,
from the Extreme NAS page); CPFS above its 1,200 MB/s. The plan's checkpoint writes are timed at the file system's
rate (plan/money/costing.py), one function for both."""

from __future__ import annotations

import pytest

from gpuplan import recommend
from gpuplan.plan.advice.storage import extreme_nas_bandwidth_mb_s, shared_fs, shared_need_mb_s
from gpuplan.units import GIB


@pytest.mark.parametrize("gib,mb_s", [(100, 150), (499, 150), (500, 300), (2047, 300), (2048, 600), (4096, 900),
                                      (8192, 1200), (262144, 1200)])
def test_extreme_nas_bandwidth_steps_follow_the_page(gib, mb_s):
    # Extreme NAS (advanced; the page's 1,200 MB/s list): [100 GiB, 500 GiB) 150 MB/s, [500 GiB, 2 TiB) 300, [2, 4) 600, [4, 8) 900, [8, 256) 1,200
    assert extreme_nas_bandwidth_mb_s(gib) == mb_s


def test_the_smallest_step_that_carries_the_need_and_holds_the_data():
    fs = shared_fs(373.0, 261 / 1.073741824)        # an 8B full fine-tune: 112 GB checkpoints in 300 s
    assert fs["kind"] == "extreme_nas" and fs["capacity_gib"] == 2100 and fs["write_mb_s"] == 600
    big = shared_fs(100.0, 5000.0)                   # little bandwidth, 5,000 GiB kept x 1.2 -> 6,000 GiB (900 MB/s)
    assert big["capacity_gib"] == 6000 and big["read_mb_s"] == 900


def test_above_1200_mb_s_it_is_cpfs_sized_for_the_writes():
    # Llama-3-70B full: a 988 GB checkpoint in 300 s = 3,293 MB/s; CPFS General-purpose (advance_200) delivers 0.2 MB/s
    # per GiB: 16,467 GiB -> 16,800 in 1,200 GiB steps (3,360 MB/s)
    fs = shared_fs(988e9 / 300 / 1e6, 3000.0)
    assert fs["kind"] == "cpfs" and fs["capacity_gib"] == 16800 and fs["write_mb_s"] == 3360
    assert shared_fs(2000.0, 100.0)["capacity_gib"] == 10800       # 2,000 MB/s / 0.2 = 10,000 GiB -> 10,800
    assert shared_fs(1300.0, 100.0)["capacity_gib"] == 7200        # 6,500 GiB -> 7,200
    assert shared_fs(1250.0, 100.0)["capacity_gib"] == 7200        # 6,250 GiB -> 7,200


def test_the_need_is_every_nodes_reads_or_a_checkpoint_in_the_target_time():
    assert shared_need_mb_s(10e6, 4, 112e9, True) == pytest.approx(112e9 / 300 / 1e6)
    assert shared_need_mb_s(100e6, 4, 0.0, True) == pytest.approx(100 * 2.0 * 4)   # read headroom 2


def test_a_two_node_plan_writes_its_checkpoints_at_its_shared_file_systems_rate():
    rec = recommend({"model": "meta-llama/Llama-3.1-8B", "task": "full", "parallel": {"zero": 3},
                     "hardware": {"instance_type": "ecs.ebmgn7ex.32xlarge", "nodes": 2}, "batch_size": 2,
                     "gradient_accumulation": 4, "dataset": {"tokens": 1.0e9}})
    p = rec.best
    shared = p.advice.storage["shared"]
    assert shared["kind"] == "extreme_nas" and shared["capacity_gib"] == 2100
    ckpt = p.advice.storage["checkpoint_bytes"]
    assert p.cost.checkpoint_saves["write_s"] == pytest.approx(ckpt / (shared["write_mb_s"] * 1e6), rel=1e-3)
    assert p.advice.storage["budget"]["shared_bytes"] == 2100 * GIB
    assert any("Extreme NAS file system (at 600 MB/s)" in w for w in p.advice.why)

"""Alibaba instance catalog, pinned to the published figures of the family pages.

S1 = https://www.alibabacloud.com/help/en/ecs/user-guide/gpu-accelerated-compute-optimized-and-vgpu-accelerated-instance-families-1
S2 = its Chinese edition (vGPU sections); S8 = overview of instance families (ebmgn7ex).
"""

from __future__ import annotations

import sys
import types
from collections import Counter
from importlib.resources import files

import pytest
import yaml

from gpuplan.catalog.hardware.instances import (
    INSTANCE_COLUMNS,
    find_family,
    get_instance,
    load_families,
    load_instances,
)
from gpuplan.catalog.hardware.query import filter_instances
from gpuplan.errors import GpuplanError

# The canonical GPU ids of the project brief (exact spelling).
CANONICAL_GPU_IDS = {
    "A10-24GB", "A10G-24GB", "A30-24GB", "A100-PCIe-40GB", "A100-SXM4-40GB", "A100-PCIe-80GB", "A100-SXM4-80GB",
    "A800-PCIe-40GB", "A800-PCIe-80GB", "A800-SXM4-80GB", "H100-SXM-80GB", "H100-PCIe-80GB", "H100-NVL-94GB",
    "H800-SXM-80GB", "H800-PCIe-80GB", "H20-96GB", "H200-SXM-141GB", "H200-NVL-141GB", "B200-SXM-180GB",
    "L20-48GB", "L40S-48GB", "L40-48GB", "L4-24GB", "T4-16GB", "V100-SXM2-16GB", "V100-SXM2-32GB", "V100-PCIe-16GB",
    "V100-PCIe-32GB", "P100-PCIe-16GB", "P100-SXM2-16GB", "P4-8GB", "A16-16GB", "M40-12GB", "RTX4090-24GB",
    "RTX3090Ti-24GB", "RTX3090-24GB", "RTXA6000-48GB", "RTX6000Ada-48GB", "Blackwell-Pro-72GB", "Blackwell-Pro-48GB",
}



@pytest.fixture
def stub_resolve_gpu(monkeypatch):
    """A stand-in for gpuplan.catalog.hardware.gpus.resolve_gpu that knows only exact aliases."""
    aliases = {"a10": "A10-24GB", "a10g": "A10G-24GB", "a100 80g": "A100-SXM4-80GB", "l20": "L20-48GB"}

    def resolve_gpu(name):
        key = name.strip().lower()
        if key not in aliases:
            raise GpuplanError(f"Unknown GPU {name!r}.", hint="stub")
        return types.SimpleNamespace(id=aliases[key]), None

    module = types.ModuleType("gpuplan.catalog.hardware.gpus")
    module.resolve_gpu = resolve_gpu
    monkeypatch.setitem(sys.modules, "gpuplan.catalog.hardware.gpus", module)
    import gpuplan.catalog

    monkeypatch.setattr(gpuplan.catalog, "gpus", module, raising=False)
    return resolve_gpu


def _families(insts):
    return {i.family for i in insts}


# ----------------------------------------------------------------------------- data integrity


def test_every_instance_has_an_http_source_and_every_family_is_described():
    insts = load_instances()
    families = load_families()
    assert len(insts) >= 120
    for inst in insts.values():
        assert inst.sources, inst.instance_type
        assert all(s.startswith("https://") for s in inst.sources), inst.instance_type
        assert inst.family in families, inst.family
        assert inst.instance_type.startswith(f"ecs.{inst.family}") or inst.family == "vgn6i-vws"
    for fam in families.values():
        assert fam.sources and all(s.startswith("https://") for s in fam.sources), fam.family


def test_every_gpu_is_a_canonical_id():
    used = {i.gpu for i in load_instances().values()} | {f.gpu for f in load_families().values()}
    assert used <= CANONICAL_GPU_IDS, used - CANONICAL_GPU_IDS
    gpus_yaml = files("gpuplan") / "data" / "gpus.yaml"
    if gpus_yaml.is_file():
        data = yaml.safe_load(gpus_yaml.read_text(encoding="utf-8"))
        if isinstance(data, dict) and "gpus" in data:
            data = data["gpus"]
        ids = set(data) if isinstance(data, dict) else {e["id"] for e in data}
        assert used <= ids, used - ids


def test_unconfirmed_lists_name_real_columns_and_inferred_gpus_are_flagged():
    for inst in load_instances().values():
        assert set(inst.unconfirmed) <= set(INSTANCE_COLUMNS)
        if inst.gpu_basis != "named":
            assert "gpu" in inst.unconfirmed, inst.instance_type


def test_family_sizes_match_the_published_tables():
    counts = Counter(i.family for i in load_instances().values())
    assert counts == Counter({
        "gn9gc": 5, "gn8v": 8, "gn8v-tee": 4, "gn8is": 5, "gn7e": 4, "gn7i": 13, "gn7s": 7, "gn7": 3, "gn7r": 1,
        "gn6i": 7, "gn6e": 4, "gn6v": 5, "gn5i": 6, "gn5": 8, "sgn8ia": 6, "sgn7i-vws": 6, "vgn7i-vws": 4,
        "vgn6i-vws": 3, "ebmgn9g": 1, "ebmgn9ge": 1, "ebmgn9gc": 1, "ebmgn8v": 1, "ebmgn8ia": 1, "ebmgn8is": 1,
        "ebmgn7ex": 1, "ebmgn7e": 1, "ebmgn7ix": 1, "ebmgn7i": 1, "ebmgn7": 1, "ebmgn6e": 1, "ebmgn6v": 1,
        "ebmgn6i": 1, "sccgn6": 1, "sccgn6e": 1, "gn4": 6, "vgn5i": 4, "vgn6i": 2, "sccgn6ne": 1,
        # sold in 2026 per Alibaba's DescribeInstanceTypes, GPU unconfirmed (issue 31)
        "ebmgn8t": 1, "ebmgn8ts": 1, "ebmgn8te": 1, "ebmgn8ga": 1, "cgn8i": 1,
    })


# ----------------------------------------------------------------------------- pinned rows


def test_gn7e_c16g1_4xlarge_is_one_a100_80gb_16_vcpu_125_gib():
    # S1 gn7e table: 16 vCPU, 125 GiB, 80 GB x 1, 8 Gbit/s, 3,000,000 pps; GPU from S10 + console GPUSpec (S13)
    inst = get_instance("ecs.gn7e-c16g1.4xlarge")
    assert (inst.gpu, inst.gpu_count, inst.gpus) == ("A100-SXM4-80GB", 1.0, 1)
    assert (inst.vcpus, inst.memory_gib, inst.gpu_memory_gib) == (16, 125.0, 80.0)
    assert (inst.network_gbit_s, inst.pps) == (8.0, 3_000_000)
    assert inst.gpu_basis == "inferred" and "gpu" in inst.unconfirmed
    assert "SXM4 assumed" in inst.notes and "NVIDIA A100 80G" in inst.notes


def test_gn7i_c8g1_2xlarge_is_8_vcpu_30_gib_one_a10_16_gbit():
    # S1 gn7i table (the guides that call gn7i an A100 are wrong)
    inst = get_instance("gn7i-c8g1.2xlarge")
    assert (inst.vcpus, inst.memory_gib, inst.gpu, inst.gpu_count, inst.network_gbit_s) == (
        8, 30.0, "A10-24GB", 1.0, 16.0)
    assert inst.gpu_basis == "named" and inst.interconnect == "pcie" and inst.status == "ga"


def test_ebmgn7ex_is_128_vcpu_1024_gib_8_a100_80gb_160_gbit():
    # Alibaba's own DescribeInstanceTypes answer (SpareCores dump of 2026-01-31) and S8's eRDMA 160 Gbit/s
    inst = get_instance("ecs.ebmgn7ex.32xlarge")
    assert (inst.vcpus, inst.memory_gib, inst.gpu_count, inst.gpu_memory_gib, inst.network_gbit_s) == (
        128, 1024.0, 8.0, 80.0, 160.0)
    assert (inst.rdma, inst.rdma_gbit_s) == ("erdma", 160.0)
    assert not {"vcpus", "memory_gib", "gpu_count", "gpu_memory_gib", "network_gbit_s"} & set(inst.unconfirmed)
    assert "gpu" in inst.unconfirmed   # SXM4 form factor still assumed from NVLink
    assert any("sc-data-dumps" in s for s in inst.sources)


def test_ebmgn7ix_has_its_512_gib_and_160_gbit():
    inst = get_instance("ecs.ebmgn7ix.32xlarge")
    assert (inst.memory_gib, inst.network_gbit_s, inst.vcpus, inst.gpu_count, inst.pps) == (
        512.0, 160.0, 128, 8, 24_000_000)
    assert "Intel" in inst.cpu and not inst.unconfirmed


def test_2026_families_are_listed_unconfirmed_with_what_the_api_says():
    # DescribeInstanceTypes names internal GPUs (G49, G49E, G59, Lovelace, RTX 5880) that no Alibaba family
    # page confirms: the types are there, status unconfirmed, so they rank only when asked (include_status)
    families = load_families()
    for fam in ("ebmgn8t", "ebmgn8ts", "ebmgn8te", "ebmgn9t", "ebmgn8ga", "cgn8i"):
        assert families[fam].status == "unconfirmed" and "gpu" in families[fam].unconfirmed, fam
    facts = {"ecs.ebmgn8t.32xlarge": (8, 24.0, 128, 1024.0, 170.0, "G49"),
             "ecs.ebmgn8ts.32xlarge": (8, 24.0, 128, 1024.0, 170.0, "G49"),
             "ecs.ebmgn8te.32xlarge": (8, 48.0, 128, 1024.0, 170.0, "G49E"),
             "ecs.ebmgn8ga.64xlarge": (4, 48.0, 256, 1536.0, 160.0, "RTX 5880"),
             "ecs.cgn8i-24g.4xlarge": (1, 24.0, 16, 128.0, 16.0, "Lovelace")}
    for name, (gpus, mem, vcpus, ram, net, spec) in facts.items():
        inst = get_instance(name)
        assert (inst.gpu_count, inst.gpu_memory_gib, inst.vcpus, inst.memory_gib, inst.network_gbit_s) == (
            gpus, mem, vcpus, ram, net), name
        assert (inst.status, inst.gpu_basis) == ("unconfirmed", "unconfirmed") and "gpu" in inst.unconfirmed
        assert f"'{spec}'" in inst.notes and "stand-in" in inst.notes
    # ebmgn9g: the API says 'L20N' where the family page says a Blackwell professional GPU; both are kept
    g9 = get_instance("ecs.ebmgn9g.64xlarge")
    assert g9.gpu == "Blackwell-Pro-48GB" and "'L20N'" in g9.notes


def test_unconfirmed_2026_types_rank_only_when_asked():
    from gpuplan.plan import recommend

    w = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "hardware": {"gpu": "L4-24GB"}}
    shown = {p.instance_type for p in recommend(w, top=50).all_plans}
    assert "ecs.cgn8i-24g.4xlarge" not in shown
    w["constraints"] = {"include_status": ["ga", "unconfirmed"]}
    rec = recommend(w, top=50)
    assert "ecs.cgn8i-24g.4xlarge" in {p.instance_type for p in rec.all_plans} | {
        u["instance_type"] for u in rec.unpriced}


def test_vgpu_slices_are_fractional():
    m2 = get_instance("ecs.sgn7i-vws-m2.xlarge")  # A10 x 1/12, 24 GB x 1/12 (S2)
    assert m2.gpu_count == pytest.approx(0.0833) and m2.gpu_memory_gib == 2.0
    assert m2.is_vgpu and m2.gpus == 0 and m2.network_burst_gbit_s == 5.0
    t4 = get_instance("ecs.vgn6i-m4-vws.xlarge")  # T4 x 1/4 (S2)
    assert (t4.gpu, t4.gpu_count, t4.gpu_memory_gib, t4.family) == ("T4-16GB", 0.25, 4.0, "vgn6i-vws")
    full = get_instance("ecs.vgn7i-vws-m24.7xlarge")  # a whole A10 behind vGPU
    assert full.is_vgpu and full.gpus == 1
    slices = [i for i in load_instances().values() if i.kind == "vgpu"]
    assert any(i.gpu_count < 1 for i in slices)
    assert all(len(repr(i.gpu_count).split(".")[-1]) <= 4 for i in slices)


def test_sgn8ia_gpu_is_flagged_unconfirmed():
    inst = get_instance("ecs.sgn8ia-m24.12xlarge")
    assert inst.gpu == "L20-48GB" and inst.gpu_basis == "unconfirmed"
    assert {"gpu", "gpu_count"} <= set(inst.unconfirmed) and inst.gpu_count == 0.5


def test_statuses_follow_the_facts():
    status = {n: get_instance(n).status for n in (
        "gn7s-c8g1.2xlarge", "gn5-c4g1.xlarge", "gn5i-c2g1.large", "gn9gc.4xlarge", "ebmgn9g.64xlarge",
        "sccgn6.24xlarge", "gn4-c4g1.xlarge", "gn7i-c80g1.20xlarge", "gn6v-c8g1.2xlarge", "vgn5i-m1.large")}
    assert status == {
        "gn7s-c8g1.2xlarge": "ticket", "gn5-c4g1.xlarge": "not-recommended", "gn5i-c2g1.large": "not-recommended",
        "gn9gc.4xlarge": "preview", "ebmgn9g.64xlarge": "preview", "sccgn6.24xlarge": "unconfirmed",
        "gn4-c4g1.xlarge": "retired", "gn7i-c80g1.20xlarge": "retired", "gn6v-c8g1.2xlarge": "ga",
        "vgn5i-m1.large": "retired"}
    assert "delisted" in get_instance("gn7i-c80g1.20xlarge").notes.lower()
    retired = {f.family for f in load_families().values() if f.status == "retired"}
    assert {"gn4", "vgn5i", "vgn6i", "sccgn6ne"} <= retired


def test_disk_and_network_caps():
    big = get_instance("ecs.gn8v-8x.48xlarge")  # S1: 1,000,000 IOPS / 6 GB/s, 100 Gbit/s
    assert (big.disk_iops, big.disk_bandwidth_mb_s, big.network_gbit_s) == (1_000_000, 6000, 100.0)
    assert get_instance("ecs.gn8v.6xlarge").disk_bandwidth_mb_s == 937
    assert get_instance("ecs.ebmgn9g.64xlarge").disk_bandwidth_mb_s == 8000
    assert get_instance("ecs.gn5-c8g1.14xlarge").local_disk_gib == 3520
    scc = get_instance("ecs.sccgn6e.24xlarge")
    assert (scc.kind, scc.rdma, scc.rdma_gbit_s, scc.nvlink_gb_s) == ("scc", "roce", 50.0, 300.0)
    h20 = get_instance("ecs.ebmgn8v.48xlarge")
    assert (h20.gpu, h20.interconnect, h20.nvlink_gb_s, h20.network_gbit_s) == ("H20-96GB", "nvlink", 900.0, 170.0)


def test_to_dict_has_the_json_fields():
    d = get_instance("gn7i-c8g1.2xlarge").to_dict()
    for key in ("instance_type", "family", "gpu", "gpu_count", "gpu_memory_gib", "vcpus", "memory_gib",
                "network_gbit_s", "rdma", "interconnect", "status", "sources", "cloud", "kind", "gpu_basis",
                "unconfirmed", "is_vgpu", "gpus"):
        assert key in d
    assert isinstance(d["sources"], list) and d["cloud"] == "alibaba"


# ----------------------------------------------------------------------------- lookups


def test_get_instance_is_case_insensitive_with_or_without_prefix():
    a = get_instance("ECS.GN7I-C8G1.2XLARGE")
    assert a is get_instance("gn7i-c8g1.2xlarge") or a == get_instance("gn7i-c8g1.2xlarge")
    assert a.instance_type == "ecs.gn7i-c8g1.2xlarge"


def test_unknown_instance_has_did_you_mean():
    with pytest.raises(GpuplanError) as err:
        get_instance("ecs.gn7i-c8g1.2xlarg")
    assert "Unknown instance type" in err.value.message
    assert "ecs.gn7i-c8g1.2xlarge" in err.value.hint and "gpuplan instances" in err.value.hint


def test_unknown_cloud_and_family_errors():
    with pytest.raises(GpuplanError, match="Unknown cloud"):
        load_instances("alibabaa")
    with pytest.raises(GpuplanError) as err:
        find_family("gn7ii")
    assert "gn7i" in err.value.hint
    assert find_family("ECS.gn7e").gpu == "A100-SXM4-80GB"


def test_filter_gpu_a10_returns_exactly_the_a10_families(stub_resolve_gpu):
    assert _families(filter_instances(gpu="A10")) == {"gn7i", "ebmgn7i", "ebmgn7ix", "vgn7i-vws", "sgn7i-vws"}
    assert _families(filter_instances(gpu="a100 80g")) == {"gn7e", "ebmgn7e", "ebmgn7ex"}
    with pytest.raises(GpuplanError):
        filter_instances(gpu="no-such-gpu")


def test_filter_gpu_with_the_real_resolver():
    gpus = pytest.importorskip("gpuplan.catalog.hardware.gpus")
    if not hasattr(gpus, "resolve_gpu"):
        pytest.skip("gpuplan.catalog.hardware.gpus.resolve_gpu not written yet")
    assert _families(filter_instances(gpu="A10")) == {"gn7i", "ebmgn7i", "ebmgn7ix", "vgn7i-vws", "sgn7i-vws"}


def test_filter_by_family_memory_status_and_region():
    gn7i = filter_instances(family="ecs.gn7i")
    assert len(gn7i) == 13 and _families(gn7i) == {"gn7i"}
    assert len(filter_instances(family="gn7i", include_status=["ga"])) == 12  # c80g1 is retired
    big = filter_instances(min_gpu_memory_gib=80, include_status=["ga"])
    assert _families(big) == {"gn7e", "ebmgn7e", "ebmgn7ex", "gn8v", "gn8v-tee", "ebmgn8v"}
    shanghai = filter_instances(region="cn-shanghai")
    assert "ecs.gn7i-c8g1.2xlarge" in {i.instance_type for i in shanghai}
    assert "ecs.gn7r-c16g1.4xlarge" not in {i.instance_type for i in shanghai}  # no price, no estimate
    assert filter_instances(region="us-west-1") == []
    with pytest.raises(GpuplanError):
        filter_instances(include_status=["gaa"])


# ----------------------------------------------------------------------------- overlay and validation


def _cache_csv(root, rows):
    folder = root / "clouds" / "alibaba"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "instances.csv"
    path.write_text(",".join(INSTANCE_COLUMNS) + "\n" + "".join(r + "\n" for r in rows), encoding="utf-8")
    return path


def _row(name, family, gpu="A10-24GB", vcpus="8", extra_sources="https://example.com/refresh"):
    values = dict.fromkeys(INSTANCE_COLUMNS, "")
    values.update(instance_type=name, family=family, kind="vm", gpu=gpu, gpu_count="1", gpu_memory_gib="24",
                  vcpus=vcpus, memory_gib="32", status="ga", gpu_basis="named", sources=extra_sources)
    return ",".join(values[c] for c in INSTANCE_COLUMNS)


def test_cache_overlay_replaces_and_adds_rows(tmp_path):
    _cache_csv(tmp_path, [_row("ecs.gn7i-c8g1.2xlarge", "gn7i", vcpus="10"), _row("ecs.gn7i-new.xlarge", "gn7i")])
    insts = load_instances(cache_dir=tmp_path)
    assert insts["ecs.gn7i-c8g1.2xlarge"].vcpus == 10
    assert "ecs.gn7i-new.xlarge" in insts
    assert len(insts) == len(load_instances()) + 1  # the bundled-only view is unchanged
    assert load_instances()["ecs.gn7i-c8g1.2xlarge"].vcpus == 8


def test_cache_from_env_variable(tmp_path, monkeypatch):
    _cache_csv(tmp_path, [_row("ecs.gn7i-c8g1.2xlarge", "gn7i", vcpus="12")])
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(tmp_path))
    assert get_instance("gn7i-c8g1.2xlarge").vcpus == 12


@pytest.mark.parametrize("bad, message", [
    (_row("ecs.x.large", "x", vcpus="eight"), "'vcpus' is not a number"),
    (_row("ecs.x.large", "x", extra_sources=""), "'sources' is empty"),
    (_row("ecs.x.large", "x").replace(",vm,", ",cloud-vm,"), "'kind' has unknown value"),
])
def test_malformed_cache_row_names_file_and_line(tmp_path, bad, message):
    path = _cache_csv(tmp_path, [_row("ecs.ok.large", "ok"), bad])
    with pytest.raises(GpuplanError) as err:
        load_instances(cache_dir=tmp_path)
    assert str(path) in err.value.message and "line 3" in err.value.message and message in err.value.message

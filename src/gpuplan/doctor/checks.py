"""Checks: compare the facts (and benchmarks) with the plan and the catalog.

Each check is a small pure function returning :class:`Check` records with pass / warn / fail /
skip and a fix. Exit code: 0 all pass (or skip), 1 some warning, 2 some failure or no GPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gpuplan.doctor.facts import Facts, GpuFacts
from gpuplan.doctor.i18n import t
from gpuplan.i18n import _
from gpuplan.doctor import plan as _plan
from gpuplan.doctor.plan import Expectations
from gpuplan.doctor.smi import nv_link_count
from gpuplan.units import GIB

PASS, WARN, FAIL, SKIP = "pass", "warn", "fail", "skip"

# Minimum Linux driver per CUDA toolkit: CUDA Toolkit release notes, Table 3 "CUDA Toolkit and
# Corresponding Driver Versions" (https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/).
MIN_DRIVER_FOR_CUDA: dict[str, str] = {
    "11.8": "520.61.05", "12.0": "525.60.13", "12.1": "530.30.02", "12.2": "535.54.03",
    "12.3": "545.23.06", "12.4": "550.54.14", "12.5": "555.42.02", "12.6": "560.28.03",
    "12.8": "570.26", "12.9": "575.51.03", "13.0": "580.65.06",
}

# PCIe bandwidth per lane and direction in GB/s: 8 / 16 / 32 GT/s with 128b/130b encoding
# (PCI-SIG base specifications 3.0 / 4.0 / 5.0).
PCIE_GB_S_PER_LANE: dict[int, float] = {3: 8 * 128 / 130 / 8, 4: 16 * 128 / 130 / 8, 5: 32 * 128 / 130 / 8}

# Benchmark thresholds as a share of the catalog (or theoretical) figure: (warn below, fail below).
# Well-tuned GEMMs reach 70-90% of dense peak and copies 80-90% of HBM bandwidth on A100/H100;
# PCIe cards under their power cap reach less, hence the generous floors.
BENCH_THRESHOLDS: dict[str, tuple[float, float]] = {
    "compute": (0.60, 0.35),
    "memory": (0.60, 0.35),
    "h2d": (0.50, 0.25),
    "comm": (0.50, 0.25),
}


@dataclass(frozen=True)
class Check:
    id: str
    status: str
    key: str
    params: dict[str, Any] = field(default_factory=dict)
    fix_key: str | None = None
    fix_params: dict[str, Any] = field(default_factory=dict)

    def message(self, lang: str = "en") -> str:
        return t(self.key, lang, **self.params)

    def fix(self, lang: str = "en") -> str | None:
        return t(self.fix_key, lang, **self.fix_params) if self.fix_key and self.status in (WARN, FAIL) else None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "message": self.message("en"), "fix": self.fix("en")}


def exit_code(checks: list[Check]) -> int:
    statuses = {c.status for c in checks}
    return 2 if FAIL in statuses else 1 if WARN in statuses else 0


def version_tuple(v: str | None) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v or ""))


def _gpus_text(gpus: list[GpuFacts]) -> str:
    return ", ".join(f"GPU{g.index}" for g in gpus)


def _skip(cid: str, key: str = "not_in_plan", **params: Any) -> list[Check]:
    return [Check(cid, SKIP, key, params)]


# --------------------------------------------------------------------------- GPUs and driver


def check_gpu_present(f: Facts) -> list[Check]:
    if not f.gpus:
        why = "; ".join(f.notes) or _("nothing answered")
        return [Check("gpu.present", FAIL, "gpu.none", {"why": why}, "fix.install_driver")]
    names = sorted({g.name or "unknown GPU" for g in f.gpus})
    return [Check("gpu.present", PASS, "gpu.found",
                  {"count": len(f.gpus), "name": " + ".join(names), "source": f.gpu_source})]


def check_gpu_model(f: Facts, e: Expectations) -> list[Check]:
    if not e.gpu_id:
        return _skip("gpu.model", "no_plan" if not e.has_plan else "not_in_plan")
    specs = [_plan.resolve_gpu_spec(g.name) for g in f.gpus]
    if any(s is None for s in specs):
        found = ", ".join(sorted({g.name or "?" for g, s in zip(f.gpus, specs, strict=True) if s is None}))
        return [Check("gpu.model", WARN, "gpu.model_unmapped", {"found": found})]
    wrong = sorted({s.id for s in specs if s is not None and s.id != e.gpu_id})
    if wrong:
        return [Check("gpu.model", FAIL, "gpu.model_wrong", {"found": ", ".join(wrong), "gpu": e.gpu_id},
                      "fix.wrong_gpu")]
    if e.gpus_per_node and len(f.gpus) < e.gpus_per_node:
        return [Check("gpu.count", FAIL, "gpu.count_low", {"count": len(f.gpus), "expected": e.gpus_per_node},
                      "fix.wrong_gpu")]
    return [Check("gpu.model", PASS, "gpu.model_ok", {"count": len(f.gpus), "gpu": e.gpu_id})]


def check_driver(f: Facts, e: Expectations) -> list[Check]:
    d = f.driver
    if not d.driver_version:
        return [Check("driver.version", WARN, "unknown_fact", {"what": _("the driver version")}, "fix.install_driver")]
    cuda = d.cuda_driver_version or "unknown"
    need_driver = e.min_driver_version or MIN_DRIVER_FOR_CUDA.get(e.cuda_version or "")
    if need_driver and version_tuple(d.driver_version) < version_tuple(need_driver):
        return [Check("driver.version", FAIL, "driver.too_old", {"driver": d.driver_version, "need": need_driver},
                      "fix.driver", {"driver": need_driver, "cuda": e.cuda_version or cuda})]
    if e.cuda_version and d.cuda_driver_version and \
            version_tuple(d.cuda_driver_version) < version_tuple(e.cuda_version):
        need = MIN_DRIVER_FOR_CUDA.get(e.cuda_version, _("the matching release"))
        return [Check("driver.cuda", FAIL, "driver.cuda_old", {"cuda": cuda, "need": e.cuda_version},
                      "fix.driver", {"driver": need, "cuda": e.cuda_version})]
    rt = d.cuda_runtime_version
    if rt and d.cuda_driver_version and version_tuple(rt)[:2] > version_tuple(d.cuda_driver_version)[:2]:
        # A newer major never works; a newer minor works only under CUDA minor-version compatibility.
        status = FAIL if version_tuple(rt)[0] > version_tuple(d.cuda_driver_version)[0] else WARN
        return [Check("driver.runtime", status, "driver.runtime_newer", {"runtime": rt, "cuda": cuda},
                      "fix.runtime", {"cuda": cuda})]
    if need_driver or e.cuda_version:
        need = " / ".join(x for x in (f"driver ≥ {need_driver}" if need_driver else "",
                                      f"CUDA {e.cuda_version}" if e.cuda_version else "") if x)
        return [Check("driver.version", PASS, "driver.ok", {"driver": d.driver_version, "cuda": cuda, "need": need})]
    return [Check("driver.version", PASS, "driver.info", {"driver": d.driver_version, "cuda": cuda})]


def check_persistence(f: Facts) -> list[Check]:
    off = [g for g in f.gpus if g.persistence_mode is False]
    if off:
        return [Check("gpu.persistence", WARN, "persistence.off", {"gpus": _gpus_text(off)}, "fix.persistence")]
    if all(g.persistence_mode is None for g in f.gpus):
        return _skip("gpu.persistence", "unknown_fact", what=_("persistence mode"))
    return [Check("gpu.persistence", PASS, "persistence.ok")]


def check_pcie(f: Facts, e: Expectations) -> list[Check]:
    out: list[Check] = []
    narrow = [g for g in f.gpus if g.pcie_width_current and g.pcie_width_max and g.pcie_width_current < g.pcie_width_max]
    if narrow:
        items = ", ".join(f"GPU{g.index} x{g.pcie_width_current}/x{g.pcie_width_max}" for g in narrow)
        out.append(Check("pcie.width", FAIL, "pcie.narrow", {"items": items}, "fix.pcie_narrow"))
    busy_low = [g for g in f.gpus if g.performance_state == "P0" and g.pcie_gen_current and g.pcie_gen_max
                and g.pcie_gen_current < g.pcie_gen_max]
    if busy_low:
        items = ", ".join(f"GPU{g.index} Gen{g.pcie_gen_current}/Gen{g.pcie_gen_max}" for g in busy_low)
        out.append(Check("pcie.gen", WARN, "pcie.gen_low", {"items": items}, "fix.pcie_gen"))
    spec = e.gpu_spec or (_plan.resolve_gpu_spec(f.gpus[0].name) if f.gpus else None)
    spec_gen = getattr(spec, "pcie_gen", None)
    capped = [g for g in f.gpus if spec_gen and g.pcie_gen_max and g.pcie_gen_max < spec_gen]
    if capped:
        items = ", ".join(f"GPU{g.index}" for g in capped)
        out.append(Check("pcie.gen_max", WARN, "pcie.gen_capped",
                         {"items": items, "gen": capped[0].pcie_gen_max, "spec": spec_gen}, "fix.pcie_gen"))
    if out:
        return out
    if all(g.pcie_width_max is None for g in f.gpus):
        return _skip("pcie.width", "unknown_fact", what=_("the PCIe link"))
    idle = any(g.pcie_gen_current and g.pcie_gen_max and g.pcie_gen_current < g.pcie_gen_max for g in f.gpus)
    return [Check("pcie.width", PASS, "pcie.ok", {"note": t("pcie.idle_note") if idle else ""})]


def check_nvlink(f: Facts, e: Expectations) -> list[Check]:
    gpus = f.gpus
    if len(gpus) < 2 and (e.gpus_per_node or 1) < 2:
        return _skip("nvlink", "nvlink.single")
    expected = e.interconnect in {"nvswitch", "nvlink"} if e.interconnect else None
    if expected is None and not e.has_plan:
        expected = any((g.nvlink_links_total or 0) > 0 for g in gpus)
    problems = [_("GPU{index}: {active} of {total} NVLinks active").format(index=g.index, active=g.nvlink_links_active,
                                                                          total=g.nvlink_links_total)
                for g in gpus if g.nvlink_links_total and (g.nvlink_links_active or 0) < g.nvlink_links_total]
    if expected:
        problems += [_("GPU{index}: no NVLink").format(index=g.index) for g in gpus if g.nvlink_links_total == 0]
        topo = f.topology
        if topo is not None:
            names = [f"GPU{g.index}" for g in gpus if f"GPU{g.index}" in topo.devices]
            pairs = [(a, b, topo.link(a, b)) for i, a in enumerate(names) for b in names[i + 1:]]
            bad = [f"{a}↔{b} {cell}" for a, b, cell in pairs if cell is not None and nv_link_count(cell) == 0]
            if bad:
                problems.append("topo -m: " + ", ".join(bad[:6]) + (" …" if len(bad) > 6 else ""))
    if problems:
        return [Check("nvlink", FAIL, "nvlink.down", {"items": "; ".join(problems)}, "fix.nvlink")]
    if not expected:
        return [Check("nvlink", PASS, "nvlink.not_expected")]
    if all(g.nvlink_links_total is None for g in gpus) and f.topology is None:
        return [Check("nvlink", WARN, "unknown_fact", {"what": _("NVLink status")}, "fix.nvlink")]
    cells = {f.topology.link("GPU0", f"GPU{g.index}") for g in gpus[1:]} if f.topology else set()
    links = {g.nvlink_links_total for g in gpus}
    return [Check("nvlink", PASS, "nvlink.ok", {"count": len(gpus), "links": "/".join(map(str, sorted(
        x for x in links if x is not None))) or "?", "cell": "/".join(sorted(c for c in cells if c)) or "NV"})]


def check_ecc(f: Facts) -> list[Check]:
    problems, fail = [], False
    for g in f.gpus:
        if g.ecc_uncorrected_volatile:
            problems.append(_("GPU{index}: {count} uncorrected ECC errors since boot").format(
                index=g.index, count=g.ecc_uncorrected_volatile))
            fail = True
        if g.remapped_rows_pending:
            problems.append(_("GPU{index}: row remapping pending (reset needed)").format(index=g.index))
            fail = True
        if g.remapping_failed:
            problems.append(_("GPU{index}: row remapping failed").format(index=g.index))
            fail = True
        if g.ecc_uncorrected_aggregate and not g.ecc_uncorrected_volatile:
            problems.append(_("GPU{index}: {count} uncorrected ECC errors in its lifetime").format(
                index=g.index, count=g.ecc_uncorrected_aggregate))
    out = []
    if problems:
        out.append(Check("ecc.errors", FAIL if fail else WARN, "ecc.errors", {"items": "; ".join(problems)},
                         "fix.ecc_errors"))
    off = [g for g in f.gpus if g.ecc_enabled is False]
    if off:
        out.append(Check("ecc.mode", WARN, "ecc.off", {"gpus": _gpus_text(off)}, "fix.ecc_off"))
    if out:
        return out
    if all(g.ecc_enabled is None for g in f.gpus):
        return _skip("ecc.errors", "unknown_fact", what="ECC")
    return [Check("ecc.errors", PASS, "ecc.ok")]


def check_mig(f: Facts) -> list[Check]:
    on = [g for g in f.gpus if g.mig_enabled]
    if on:
        return [Check("gpu.mig", WARN, "mig.on", {"gpus": _gpus_text(on)}, "fix.mig")]
    return [Check("gpu.mig", PASS, "mig.ok")]


def check_power(f: Facts) -> list[Check]:
    low = [g for g in f.gpus if g.power_limit_w and g.power_default_limit_w
           and g.power_limit_w < 0.95 * g.power_default_limit_w]
    if low:
        items = ", ".join(f"GPU{g.index} {g.power_limit_w:.0f}/{g.power_default_limit_w:.0f} W" for g in low)
        return [Check("gpu.power", WARN, "power.low", {"items": items}, "fix.power")]
    if all(g.power_limit_w is None for g in f.gpus):
        return _skip("gpu.power", "unknown_fact", what=_("power limits"))
    return [Check("gpu.power", PASS, "power.ok")]


# --------------------------------------------------------------------------- host, network, disk


def check_rdma(f: Facts, e: Expectations) -> list[Check]:
    if not e.instance_count:
        return _skip("rdma", "no_plan" if not e.has_plan else "not_in_plan")
    if e.instance_count < 2:
        return _skip("rdma", "rdma.single")
    if not e.rdma:
        return [Check("rdma", WARN, "rdma.unplanned")]
    devices = f.host.rdma_devices
    if devices is None:
        return [Check("rdma", WARN, "unknown_fact", {"what": _("RDMA devices")},
                      "fix.erdma" if e.rdma == "erdma" else "fix.rdma")]
    prefix = {"erdma": ("erdma",), "roce": ("mlx5", "mlx4", "rocep"), "ib": ("mlx5", "mlx4", "ib")}.get(e.rdma, ("",))
    match = [d for d in devices if d.startswith(prefix)]
    kind = "eRDMA" if e.rdma == "erdma" else e.rdma.upper()
    if not match:
        return [Check("rdma", FAIL, "rdma.missing",
                      {"kind": kind, "count": e.instance_count, "devices": ", ".join(devices) or "none"},
                      "fix.erdma" if e.rdma == "erdma" else "fix.rdma")]
    return [Check("rdma", PASS, "rdma.ok", {"kind": kind, "devices": ", ".join(match)})]


def data_mount(f: Facts):
    """The largest mount other than ``/`` (the data disk), else ``/``."""
    sized = [m for m in f.host.mounts if m.total_bytes]
    others = [m for m in sized if m.path != "/"]
    pool = others or sized
    return max(pool, key=lambda m: m.total_bytes or 0) if pool else None


def check_disk(f: Facts, e: Expectations, bench: dict[str, Any] | None) -> list[Check]:
    out: list[Check] = []
    m = data_mount(f)
    if e.data_disk_gib is None:
        out += _skip("disk.size", "no_plan" if not e.has_plan else "not_in_plan")
    elif m is None:
        out.append(Check("disk.size", WARN, "unknown_fact", {"what": _("mounted disks")}, "fix.disk_small"))
    else:
        size = m.total_bytes / GIB
        # 5% slack: a cloud disk of N GiB shows a little less after the filesystem's overhead.
        ok = size >= 0.95 * e.data_disk_gib
        out.append(Check("disk.size", PASS if ok else FAIL, "disk.ok" if ok else "disk.small",
                         {"path": m.path, "size": size, "need": e.data_disk_gib}, "fix.disk_small"))
    need = e.required_read_mb_s
    measured = (bench or {}).get("disk_read_mb_s", {}).get("value")
    if need is None:
        out += _skip("disk.speed", "no_plan" if not e.has_plan else "not_in_plan")
    elif measured is not None:
        status = PASS if measured >= need else FAIL if measured < 0.5 * need else WARN
        out.append(Check("disk.speed", status, "disk.speed_ok" if status == PASS else "disk.speed_low",
                         {"value": measured, "need": need}, "fix.disk_slow"))
    elif e.disk_bandwidth_mb_s is not None and e.disk_bandwidth_mb_s < need:
        out.append(Check("disk.speed", WARN, "disk.cap_low", {"cap": e.disk_bandwidth_mb_s, "need": need},
                         "fix.disk_slow"))
    else:
        out += _skip("disk.speed", "disk.unmeasured")
    return out


def check_host(f: Facts, e: Expectations) -> list[Check]:
    h = f.host
    if h.cpus is None or h.ram_total_bytes is None:
        return _skip("host", "unknown_fact", what=_("CPUs or RAM"))
    ram = h.ram_total_bytes / GIB
    low = []
    if e.vcpus and h.cpus < e.vcpus:
        low.append(_("{cpus} of {vcpus} vCPUs").format(cpus=h.cpus, vcpus=e.vcpus))
    # The kernel reserves a few percent of RAM, so MemTotal reads below the catalog's GiB.
    if e.memory_gib and ram < 0.9 * e.memory_gib:
        low.append(_("{ram:.0f} of {total:.0f} GiB RAM").format(ram=ram, total=e.memory_gib))
    if low:
        return [Check("host", WARN, "host.low", {"items": ", ".join(low)}, "fix.host")]
    return [Check("host", PASS, "host.ok", {"cpus": h.cpus, "ram": ram})]


def check_instance(f: Facts, e: Expectations) -> list[Check]:
    found = f.host.instance_type
    if not found:
        return []
    if e.instance_type and found != e.instance_type:
        return [Check("instance.type", FAIL, "instance.wrong", {"found": found, "expected": e.instance_type},
                      "fix.wrong_gpu")]
    return [Check("instance.type", PASS, "instance.ok", {"found": found})]


# --------------------------------------------------------------------------- benchmarks


def bench_references(f: Facts, e: Expectations) -> dict[str, float | None]:
    """The catalog (or theoretical) figure each benchmark is compared with."""
    spec = e.gpu_spec or (_plan.resolve_gpu_spec(f.gpus[0].name) if f.gpus else None)
    g0 = f.gpus[0] if f.gpus else None
    gen = min(x for x in (getattr(spec, "pcie_gen", None), g0.pcie_gen_max if g0 else None, 5) if x)
    width = (g0.pcie_width_max if g0 else None) or 16
    pcie = PCIE_GB_S_PER_LANE.get(gen, PCIE_GB_S_PER_LANE[4]) * width
    nvlink = getattr(spec, "nvlink_gb_s", None)
    uses_nvlink = (e.interconnect in {"nvswitch", "nvlink"}) if e.interconnect else \
        bool(nvlink) and any((g.nvlink_links_active or 0) > 0 for g in f.gpus)
    # a power-limited card's healthy matmul is its sustained rate (data/efficiency.yaml sustained_tensor), the rate
    # the plan was timed at: an A10 at 56 of 125 TFLOPS is healthy, not a failing card
    from gpuplan.estimate.clocks import sustained_tensor_fraction  # noqa: PLC0415 - the efficiency tables load lazily

    sustain = sustained_tensor_fraction(spec) if spec is not None and getattr(spec, "id", None) else 1.0
    bf16, fp16 = getattr(spec, "bf16_dense_tflops", None), getattr(spec, "fp16_dense_tflops", None)
    return {
        "matmul_bf16_tflops": bf16 * sustain if bf16 else bf16,
        "matmul_fp16_tflops": fp16 * sustain if fp16 else fp16,
        "memory_bandwidth_gb_s": getattr(spec, "mem_bandwidth_gb_s", None),
        "host_to_device_gb_s": pcie,
        # catalog NVLink figures are bidirectional totals (A100: 600 GB/s); bus bandwidth is per direction.
        "allreduce_busbw_gb_s": nvlink / 2 if uses_nvlink and nvlink else pcie,
    }


_BENCH_KIND = {"matmul_bf16_tflops": "compute", "matmul_fp16_tflops": "compute",
               "memory_bandwidth_gb_s": "memory", "host_to_device_gb_s": "h2d", "allreduce_busbw_gb_s": "comm"}
_BENCH_FIX = {"compute": "fix.bench_compute", "memory": "fix.bench_compute", "h2d": "fix.bench_h2d",
              "comm": "fix.bench_comm"}


def check_bench(f: Facts, e: Expectations, bench: dict[str, Any] | None) -> list[Check]:
    if not bench:
        return []
    if bench.get("error"):
        return [Check("bench", WARN, "bench.no_torch", {"error": bench["error"]}, "fix.torch")]
    refs = bench_references(f, e)
    out = []
    for name, kind in _BENCH_KIND.items():
        r = bench.get(name)
        if not r:
            continue
        cid = f"bench.{name}"
        value, unit = r.get("value"), r.get("unit", "")
        if value is None:
            out.append(Check(cid, WARN, "bench.error", {"error": r.get("error") or "no result"}, _BENCH_FIX[kind]))
            continue
        ref = refs.get(name)
        if bench.get("device") != "cuda":
            out.append(Check(cid, SKIP, "bench.cpu", {"value": value, "unit": unit}))
            continue
        if not ref:
            out.append(Check(cid, SKIP, "bench.noref", {"value": value, "unit": unit}))
            continue
        ratio = value / ref
        r["reference"], r["ratio"] = ref, round(ratio, 3)  # recorded for --json as well
        warn_below, fail_below = BENCH_THRESHOLDS[kind]
        status = FAIL if ratio < fail_below else WARN if ratio < warn_below else PASS
        out.append(Check(cid, status, "bench.ok" if status == PASS else "bench.low",
                         {"value": value, "unit": unit, "ratio": ratio, "ref": ref}, _BENCH_FIX[kind]))
    return out


# --------------------------------------------------------------------------- all

def run_checks(f: Facts, e: Expectations, bench: dict[str, Any] | None = None) -> list[Check]:
    out = check_gpu_present(f)
    if f.gpus:
        out += check_gpu_model(f, e)
        out += check_driver(f, e)
        out += check_persistence(f)
        out += check_pcie(f, e)
        out += check_nvlink(f, e)
        out += check_ecc(f)
        out += check_mig(f)
        out += check_power(f)
    out += check_instance(f, e)
    out += check_rdma(f, e)
    out += check_disk(f, e, bench)
    out += check_host(f, e)
    if f.gpus:
        out += check_bench(f, e, bench)
    return out

"""Checks: compare the facts (and benchmarks) with the plan and the catalog.

Each check is a small pure function returning :class:`~gpuplan.doctor.verdict.Check` records with pass / warn /
fail / skip and a fix (doctor/verdict.py). Exit code: 0 all pass (or skip), 1 some warning, 2 some failure or no
GPU. The GPU and driver checks are in doctor/checks_gpu.py; the host, network, disk, instance and benchmark
checks here, and :func:`run_checks` runs them all in order.
"""

from __future__ import annotations

from typing import Any

from gpuplan.doctor import plan as _plan
from gpuplan.doctor.checks_gpu import (PCIE_GB_S_PER_LANE, check_driver, check_ecc, check_gpu_model, check_gpu_present,
                                       check_mig, check_nvlink, check_pcie, check_persistence, check_power)
from gpuplan.doctor.facts import Facts
from gpuplan.doctor.plan import Expectations
from gpuplan.doctor.verdict import FAIL, PASS, SKIP, WARN, Check, _skip
from gpuplan.i18n import _
from gpuplan.units import GIB

# Benchmark thresholds as a share of the catalog (or theoretical) figure: (warn below, fail below).
# Well-tuned GEMMs reach 70-90% of dense peak and copies 80-90% of HBM bandwidth on A100/H100;
# PCIe cards under their power cap reach less, hence the generous floors.
BENCH_THRESHOLDS: dict[str, tuple[float, float]] = {
    "compute": (0.60, 0.35),
    "memory": (0.60, 0.35),
    "h2d": (0.50, 0.25),
    "comm": (0.50, 0.25),
}



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

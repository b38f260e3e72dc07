"""Checks of the GPUs and their driver: presence, model, driver and CUDA versions, persistence mode, PCIe link,
NVLink, ECC, MIG and power limits (the rest, and the order they run in: doctor/checks.py)."""

from __future__ import annotations

from gpuplan.doctor import plan as _plan
from gpuplan.doctor.facts import Facts
from gpuplan.doctor.i18n import t
from gpuplan.doctor.plan import Expectations
from gpuplan.doctor.smi import nv_link_count
from gpuplan.doctor.verdict import FAIL, PASS, WARN, Check, _gpus_text, _skip, version_tuple
from gpuplan.i18n import _

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

"""Regenerate the rule-based price estimates in data/clouds/alibaba/prices.csv.

Every hand-written row (kind official | third-party | inferred; basis quoted, derived or guessed) is
kept as written. Every row of kind ``estimated`` is dropped and recomputed here, so the estimates
always follow the written prices. An estimate is written only where no written price exists for
(type, region, billing); it keeps the date and source of the price it was computed from, says its
rule in the ``rule`` column and its ``basis``: derived, or guessed when the row it comes from is
itself a guess (a price whose region the source does not state).

Rules, for every GA type and every region in REGIONS (pay-as-you-go; subscription only where a
cn-shanghai subscription price is published):

1. sibling: no price for the type in the region -> the per-GPU price of the sourced type with the
   same GPU in that region (same family first, quoted before derived before guessed, full GPU vs vGPU
   slice alike, then the nearest vCPUs per GPU, same kind, nearest GPU count) x this type's GPU count
   (a vGPU slice: x its fraction of a GPU, x the vGPU markup measured on VGPU_PAIR when the sibling is a
   full-GPU type), plus the host: the vCPUs this type has beyond (or short of) the sibling's vCPUs per
   GPU x GPUs, at the per-vCPU price measured on HOST_PAIR (two sizes of one GPU that differ only in
   vCPUs and memory; memory comes with the vCPUs at the pair's ~6 GiB per vCPU). A CPU-heavy type
   such as ebmgn8ia (64 vCPUs per L20) is no longer priced like an 8-vCPU gn8is.
2. mainland: cn-hangzhou and cn-beijing take the cn-shanghai price (sourced, else rule 1): the
   bundled list prices are cn-shanghai only and mainland regions are assumed to share list prices
   (an assumption: Alibaba says "the same instance type's price may differ between regions",
   https://help.aliyun.com/document_detail/163808.html).
3. international: ap-southeast-1 with no same-GPU sibling there -> the cn-shanghai price converted
   at the bundled ECB rate x the Singapore/mainland ratio measured on the one pair with both prices
   (gn8is: Singapore per-GPU USD vs cn-shanghai per-GPU CNY), like for like: the Singapore row has 16
   vCPUs per GPU (gn8is-2x.8xlarge, 32 vCPUs for 2 L20) and the Shanghai row 8 (gn8is.2xlarge), so the
   Shanghai price is first brought to 16 vCPUs per GPU with the host price per vCPU (rule 1's HOST_PAIR):
   (14.63 + 8 x 0.25) CNY = 16.63 CNY per GPU, ratio 1.177 (comparing 8 with 16 vCPUs per GPU gave 1.338).
   A host price in a Singapore rule is the CNY pair converted the same way, and says so.

Run: PYTHONPATH=src python scripts/gen_price_estimates.py [--check]
"""

from __future__ import annotations

import csv
import io
import sys
from importlib.resources import files
from pathlib import Path

import yaml

from gpuplan.catalog.hardware.instances import clear_cache, load_instances
from gpuplan.catalog.prices.prices import (RULE_BASIS, RULE_HOST, RULE_HOST_CONVERTED, RULE_INTL, RULE_INTL_ESTIMATE,
                                     RULE_MAINLAND, RULE_MAINLAND_ESTIMATE, RULE_PER_GPU, RULE_UNITS, RULE_VGPU_MARKUP)

CLOUD = "alibaba"
MAINLAND = ("cn-hangzhou", "cn-beijing")
ANCHOR = "cn-shanghai"
INTL = "ap-southeast-1"
REGIONS = ("cn-hangzhou", "cn-shanghai", "cn-beijing", "ap-southeast-1")
# The pair that measures the international/mainland ratio (both prices sourced).
RATIO_PAIR = ("ecs.gn8is-2x.8xlarge", "ecs.gn8is.2xlarge")
# The pair that measures the vGPU markup: a vGPU slice's price per GPU-fraction vs a full-GPU type's
# per-GPU price (same L20 GPU, both cn-shanghai rows sourced).
VGPU_PAIR = ("ecs.sgn8ia-m2.xlarge", "ecs.gn8is.2xlarge")
# The pair that measures the host (vCPU + memory) price: the smallest and the CPU-heaviest 1-GPU gn7i
# (same A10, 8 vs 56 vCPUs, 30 vs 346 GiB), from the same cn-shanghai list (the same date).
HOST_PAIR = ("ecs.gn7i-c8g1.2xlarge", "ecs.gn7i-c56g1.14xlarge")
# Basis order for choosing a sibling: a quote before a derived row before a guess.
_BASIS_RANK = {"quoted": 0, "derived": 1, "guessed": 2}


def _path() -> Path:
    return Path(str(files("gpuplan") / "data" / "clouds" / CLOUD / "prices.csv"))


def _fx() -> tuple[float, str]:
    doc = yaml.safe_load((files("gpuplan") / "data" / "fx.yaml").read_text(encoding="utf-8"))
    e = next(r for r in doc["rates"] if r["base"] == "USD" and r["quote"] == "CNY")
    return float(e["rate"]), str(e["as_of"])


def _vcpu_per_gpu(inst) -> float:
    return (inst.vcpus or 0) / inst.gpu_count


def _newest(rows: list[dict]) -> dict[tuple[str, str, str], dict]:
    best: dict[tuple[str, str, str], dict] = {}
    for r in rows:
        k = (r["instance_type"], r["region"], r["billing"])
        if k not in best or r["as_of"] > best[k]["as_of"]:
            best[k] = r
    return best


def _fmt(x: float) -> str:
    return f"{x:.4f}".rstrip("0").rstrip(".")


def _host_pair(rows: list[dict], insts) -> tuple[dict, dict, float]:
    """(small row, big row, price per vCPU-hour in CNY) of HOST_PAIR: the two cn-shanghai pay-as-you-go
    rows of the newest date both sizes are quoted on (one price list, so one set of conditions)."""
    small, big = HOST_PAIR
    dated = {(r["instance_type"], r["as_of"]): r for r in rows
             if r["region"] == ANCHOR and r["billing"] == "payg" and r["basis"] == "quoted"}
    date = max(d for (t, d) in dated if t == small and (big, d) in dated)
    lo, hi = dated[(small, date)], dated[(big, date)]
    per_vcpu = (float(hi["price"]) - float(lo["price"])) / ((insts[big].vcpus or 0) - (insts[small].vcpus or 0))
    return lo, hi, per_vcpu


def _basis(base: dict) -> str:
    """An estimate is derived, or guessed when the row it comes from is a guess."""
    return "guessed" if base.get("basis") == "guessed" else "derived"


def estimate(rows: list[dict]) -> list[dict]:
    sourced = [r for r in rows if r["kind"] != "estimated"]
    insts = load_instances(CLOUD)
    ga = [i for i in insts.values() if i.status == "ga"]
    have = _newest(sourced)
    usd_cny, fx_date = _fx()
    out: list[dict] = []
    vg, full = VGPU_PAIR
    vg_row, full_row = have[(vg, ANCHOR, "payg")], have[(full, ANCHOR, "payg")]
    markup = (float(vg_row["price"]) / insts[vg].gpu_count) / (float(full_row["price"]) / insts[full].gpu_count)
    host_lo, host_hi, per_vcpu_cny = _host_pair(sourced, insts)
    sg, sh = RATIO_PAIR
    sg_row, sh_row = have[(sg, INTL, "payg")], have[(sh, ANCHOR, "payg")]
    # like for like: the Shanghai row brought to the Singapore row's vCPUs per GPU before the per-GPU ratio
    match_vcpus = _vcpu_per_gpu(insts[sg]) * insts[sh].gpu_count - (insts[sh].vcpus or 0)
    sh_matched = float(sh_row["price"]) + match_vcpus * per_vcpu_cny
    ratio = (float(sg_row["price"]) / insts[sg].gpu_count) / (sh_matched / insts[sh].gpu_count / usd_cny)

    def per_vcpu(currency: str) -> float:
        return per_vcpu_cny if currency == "CNY" else per_vcpu_cny / usd_cny * ratio

    def host_vcpus(inst, sib) -> float:
        """vCPUs beyond (+) or short of (-) the sibling's vCPUs per GPU at this type's GPU count."""
        if not inst.vcpus or not sib.vcpus:
            return 0.0
        return inst.vcpus - sib.vcpus / sib.gpu_count * inst.gpu_count

    def scaled(inst, sib, base) -> tuple[float, bool, float]:
        price = float(base["price"]) / sib.gpu_count * inst.gpu_count
        marked_up = inst.is_vgpu and not sib.is_vgpu
        if marked_up:
            price *= markup
        extra = host_vcpus(inst, sib)
        price += extra * per_vcpu(base["currency"])
        assert price > 0, (inst.instance_type, sib.instance_type)
        return price, marked_up, extra

    def per_gpu_rule(inst, sib, base, region: str, marked_up: bool, extra: float) -> str:
        rule = RULE_PER_GPU.format(sibling=sib.instance_type, currency=base["currency"], price=base["price"],
                                   gpus=gpus_text(sib.gpu_count), region=region, as_of=base["as_of"],
                                   count=f"{inst.gpu_count:g}")
        if marked_up:
            rule = RULE_VGPU_MARKUP.format(rule=rule, markup=f"{markup:.3f}", vgpu=vg, vgpu_price=vg_row["price"],
                                           vgpu_gpus=f"{insts[vg].gpu_count:g}", full=full,
                                           full_price=full_row["price"])
        if abs(extra) < 0.5:
            return rule
        # the host pair is priced in CNY (cn-shanghai); a USD rule says how its price per vCPU was converted
        template = RULE_HOST if base["currency"] == "CNY" else RULE_HOST_CONVERTED
        return template.format(rule=rule, sign="+" if extra > 0 else "-", vcpus=f"{abs(extra):g}",
                               currency=base["currency"], per_vcpu=_fmt(per_vcpu(base["currency"])),
                               small=host_lo["instance_type"], small_price=host_lo["price"],
                               big=host_hi["instance_type"], big_price=host_hi["price"], as_of=host_lo["as_of"],
                               usd_cny=usd_cny, ratio=f"{ratio:.3f}")

    def sibling(inst, region: str, table) -> tuple[dict, object] | None:
        pool = [(table[(s.instance_type, region, "payg")], s) for s in insts.values()
                if s.gpu == inst.gpu and s.instance_type != inst.instance_type and s.gpu_count > 0
                and (s.instance_type, region, "payg") in table]
        if not pool:
            return None
        pool.sort(key=lambda rs: (rs[1].family != inst.family, _BASIS_RANK.get(rs[0].get("basis", ""), 1),
                                  rs[1].is_vgpu != inst.is_vgpu, abs(_vcpu_per_gpu(rs[1]) - _vcpu_per_gpu(inst)),
                                  rs[1].kind != inst.kind, abs(rs[1].gpu_count - inst.gpu_count),
                                  rs[1].instance_type))
        return pool[0]

    def gpus_text(n: float) -> str:
        return f"{n:g} GPU" + ("" if n == 1 else "s")

    def row(inst, region, billing, price, base, rule, note):
        return {"instance_type": inst.instance_type, "region": region, "billing": billing, "price": _fmt(price),
                "unit": "hour" if billing == "payg" else "month", "currency": base["currency"],
                "as_of": base["as_of"], "source": base["source"], "confidence": "unconfirmed",
                "notes": note, "kind": "estimated", "rule": rule, "basis": _basis(base)}

    # cn-shanghai first (rule 1), then the mainland copies (rule 2), then Singapore (rules 1 and 3).
    anchor: dict[tuple[str, str, str], dict] = dict(have)
    for inst in ga:
        k = (inst.instance_type, ANCHOR, "payg")
        if k in have:
            continue
        hit = sibling(inst, ANCHOR, have)
        if hit is None:
            continue
        base, sib = hit
        price, marked_up, extra = scaled(inst, sib, base)
        rule = per_gpu_rule(inst, sib, base, ANCHOR, marked_up, extra)
        r = row(inst, ANCHOR, "payg", price, base, rule,
                "estimated: no published price for this type; same GPU, scaled by GPU count and host vCPUs "
                "(network differences not priced)")
        out.append(r)
        anchor[k] = r
    for inst in ga:
        for billing in ("payg", "subscription"):
            base = anchor.get((inst.instance_type, ANCHOR, billing))
            if base is None:
                continue
            for region in MAINLAND:
                if (inst.instance_type, region, billing) in have:
                    continue
                estimated = base["basis"] != "quoted"
                rule = (RULE_MAINLAND_ESTIMATE if estimated else RULE_MAINLAND).format(
                    how=RULE_BASIS[base["kind"]], currency=base["currency"], price=base["price"],
                    unit=RULE_UNITS[base["unit"]], as_of=base["as_of"], base_rule=base["rule"],
                    region=region)
                r = row(inst, region, billing, float(base["price"]), base, rule,
                        f"estimated: no published {region} price; Alibaba says the same type's price may differ "
                        "between regions (https://help.aliyun.com/document_detail/163808.html): check the console")
                r["unit"] = base["unit"]
                out.append(r)
    # Singapore: a same-GPU sibling there (rule 1), else the mainland price x the international ratio
    for inst in ga:
        k = (inst.instance_type, INTL, "payg")
        if k in have:
            continue
        hit = sibling(inst, INTL, have)
        if hit is not None:
            base, sib = hit
            price, marked_up, extra = scaled(inst, sib, base)
            rule = per_gpu_rule(inst, sib, base, INTL, marked_up, extra)
            out.append(row(inst, INTL, "payg", price, base, rule,
                           "estimated: no published price for this type; same GPU, scaled by GPU count and host vCPUs"))
            continue
        base = anchor.get((inst.instance_type, ANCHOR, "payg"))
        if base is None:
            continue
        price = float(base["price"]) / usd_cny * ratio
        rule = (RULE_INTL_ESTIMATE if base["basis"] != "quoted" else RULE_INTL).format(
            how=RULE_BASIS[base["kind"]], price=base["price"], as_of=base["as_of"], base_rule=base["rule"],
            usd_cny=usd_cny, fx_date=fx_date, ratio=f"{ratio:.3f}", sg=sg, sg_price=sg_row["price"], sh=sh,
            sh_price=sh_row["price"], match=f"{match_vcpus:g}", per_vcpu=_fmt(per_vcpu_cny),
            vcpus_per_gpu=f"{_vcpu_per_gpu(insts[sg]):g}")
        r = row(inst, INTL, "payg", price, base, rule,
                "estimated: no published Singapore price; converted from the mainland price with a one-pair "
                "international markup")
        r["currency"] = "USD"
        out.append(r)
    return out


def render(rows: list[dict], header: list[str]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, header, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def regenerate() -> tuple[str, str]:
    """(current text, regenerated text) of the bundled Alibaba prices.csv."""
    clear_cache()
    path = _path()
    text = path.read_text(encoding="utf-8")
    reader = csv.DictReader(io.StringIO(text))
    header = list(reader.fieldnames or [])
    rows = list(reader)
    sourced = [r for r in rows if r["kind"] != "estimated"]
    return text, render(sourced + estimate(rows), header)


def main(argv: list[str]) -> int:
    old, new = regenerate()
    if "--check" in argv:
        if old != new:
            print("prices.csv estimates are out of date: run scripts/gen_price_estimates.py", file=sys.stderr)
            return 1
        return 0
    _path().write_text(new, encoding="utf-8")
    print(f"wrote {_path()}: {new.count(',estimated,')} estimated rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""The whole cost of a plan: instances plus disks, shared storage, internet traffic and platform fees.

One line per item: ``{item, amount, unit, quantity, unit_price, currency, source, as_of, estimated}``.
Training plans and batch jobs (a dataset run once: a plan with ``job``) are costed for the job (its estimated run
time); serving plans per month (730 h). A line
whose price is unknown has ``amount: null`` and is left out of ``total`` (listed in ``unknown``).
Prices: data/extra_costs.yaml (sources per line) and the ACK management fee of platforms.yaml.
"""

from __future__ import annotations

import functools
import math
from importlib.resources import files
from typing import Any

from gpuplan.files.datafiles import load_data
from gpuplan.i18n import N_, localize, tr
from gpuplan.plan.advice.storage import shared_fs_name
from gpuplan.units import HOURS_PER_MONTH

# Line item and quantity texts: English in the JSON contract, translated in PLAN.md (:func:`item_text`).
GPU_INSTANCES = N_("GPU instances")
SYSTEM_DISKS = N_("System disks (ESSD {level})")
DATA_DISKS = N_("Data disks (ESSD {level})")
SHARED_FS = N_("Shared file system ({kind})")
TRAFFIC_OUT = N_("Internet traffic out")
ACK_FEE = N_("ACK Pro cluster management fee")
Q_INSTANCES = N_("{nodes} x {instance_type}, {billing}")
Q_DISKS = "{nodes} x {gib} GiB"   # no words to translate
Q_TRAFFIC = N_("{gb} GB ({rps} req/s average x {tokens} tokens)")
# Billing codes (the plan's values) as Chinese names them; English keeps the code.
BILLING_NAMES = {"payg": N_("pay-as-you-go"), "spot": N_("spot instance"), "subscription": N_("subscription")}


@functools.cache
def load_extra_costs() -> dict[str, Any]:
    return load_data(files("gpuplan") / "data" / "extra_costs.yaml")


def _conv(amount: float, src: str, dst: str) -> tuple[float, str | None]:
    if src == dst:
        return amount, None
    from gpuplan.plan.money.cost import load_fx

    fx = load_fx()
    return fx.convert(amount, src, dst), N_("converted at {rate} CNY/USD ({date})").format(rate=fx.usd_cny, date=fx.as_of)


Text = tuple[str, dict[str, Any]]   # (msgid, placeholder values)


def _text(msg: Text, lang: str = "en") -> str:
    args = dict(msg[1])
    if lang != "en" and args.get("billing") in BILLING_NAMES:
        args["billing"] = tr(BILLING_NAMES[args["billing"]], lang)
    return tr(msg[0], lang).format(**args)


def item_text(line: dict, lang: str) -> tuple[str, str]:
    """(item, quantity) of one line in ``lang`` (the JSON keeps the English)."""
    item = _text(line["_item"], lang) if "_item" in line else localize(str(line["item"]), lang)
    qty = _text(line["_quantity"], lang) if "_quantity" in line else localize(str(line.get("quantity") or ""), lang)
    return item, qty


def public(line: dict) -> dict:
    """A line without its private translation keys (what plan.json carries)."""
    return {k: v for k, v in line.items() if not k.startswith("_")}


def _line(item: Text, amount: float | None, unit: str, currency: str, source: str | None, as_of: Any,
          estimated: bool, quantity: Text, note: str | None = None) -> dict:
    out: dict[str, Any] = {"item": _text(item), "amount": round(amount, 2) if amount is not None else None, "unit": unit,
           "currency": currency, "quantity": _text(quantity), "source": source or "not found",
           "as_of": str(as_of) if as_of else None, "estimated": bool(estimated)}
    if note:
        out["note"] = note
    out["_item"], out["_quantity"] = item, quantity
    return out


def _average_rps(workload: Any) -> float:
    """Mean request rate over a day (the traffic profile: steady rate, or peak hours + daily requests)."""
    from gpuplan.plan.serving.traffic import traffic_profile

    serving = getattr(workload, "serving", None)
    traffic = traffic_profile(serving) if serving else None
    return traffic.daily_requests / 86400.0 if traffic is not None else 0.0


def _quote_includes_system_disk(plan: dict, data: dict) -> bool:
    """True when the plan's instance price comes from a quote that already priced the system disk
    (extra_costs.yaml ``system_disk_included_in``: the sources whose quotes did), so it is not counted twice."""
    source = str(plan.get("price_source") or "")
    return any(source.startswith(str(s)) for s in data.get("system_disk_included_in") or ())


def cost_breakdown(plan: dict, workload: Any) -> dict | None:
    """{basis, hours, currency, lines, total, unknown} for an ECS or ACK plan; None for FC / EAS plans
    (their per-request price already covers storage and network)."""
    platform = plan.get("platform") or "ecs"
    if platform not in ("ecs", "ack"):
        return None
    data = load_extra_costs()
    cur = str(plan.get("currency") or "CNY")
    # a training run, or a batch job (transcription, images, embeddings, offline generation) that runs once as training
    # does: its instances cost its total_cost, its disks its hours, and it answers no internet traffic
    per_job = (getattr(workload, "task", None) or "inference") != "inference" or bool(plan.get("job"))
    billing = plan.get("billing") or "payg"
    nodes = int(plan.get("instance_count") or 1)
    if per_job:
        time_s = plan.get("time_s")
        if not isinstance(time_s, (int, float)) or not math.isfinite(time_s) or time_s <= 0:
            return None
        hours, basis, unit = time_s / 3600.0, "job", f"{cur} per job"
    else:
        hours, basis, unit = HOURS_PER_MONTH, "month", f"{cur} per month"
    lines: list[dict] = []

    # 1. Instances (ACK: node-hours that follow traffic, without the management fee).
    fee = plan.get("management_fee") if platform == "ack" else None
    if per_job:
        inst = plan.get("total_cost")
    else:
        inst = plan.get("monthly_cost")
        if inst is not None and fee and fee.get("monthly") is not None:
            inst = inst - float(fee["monthly"])   # managed.ack_plans adds the fee, already in the plan currency
    lines.append(_line((GPU_INSTANCES, {}), inst, unit, cur, plan.get("price_source"), plan.get("price_as_of"),
                       bool(plan.get("price_estimated")),
                       (Q_INSTANCES, {"nodes": nodes, "instance_type": plan.get("instance_type"), "billing": billing})))

    # 2. Disks: system disk + the advised data disk per node (ESSD).
    storage = plan.get("storage") or {}
    disk = storage.get("disk") or {}
    sys_gib = int(data["assumptions"]["system_disk_gib"])
    for msgid, level, gib in ((SYSTEM_DISKS, "PL1", sys_gib),
                              (DATA_DISKS, str(disk.get("level") or "PL1"), int(disk.get("size_gib") or 0))):
        if gib <= 0:
            continue
        p = data["essd"].get(level) or {}
        if billing == "subscription":
            rate = p.get("subscription_per_gib_month")
            amount = rate * gib * nodes * (hours / HOURS_PER_MONTH) if rate is not None else None
        else:
            rate = p.get("payg_per_gib_hour")
            amount = rate * gib * nodes * hours if rate is not None else None
        note = None
        if amount is not None and p.get("currency", cur) != cur:
            amount, note = _conv(amount, p["currency"], cur)
        if msgid == SYSTEM_DISKS and _quote_includes_system_disk(plan, data):
            amount, note = 0.0, N_("included in the instance price (the quote covered a {gib} GiB system disk)").format(
                gib=sys_gib)
        lines.append(_line((msgid, {"level": level}), amount, unit, cur, p.get("source"), p.get("as_of"),
                           bool(p.get("estimated")), (Q_DISKS, {"nodes": nodes, "gib": gib}), note))

    # 3. Shared file system (CPFS / NAS) the storage advice asks for.
    shared = storage.get("shared") or {}
    kind = shared.get("kind")
    if kind in ("cpfs", "nas", "extreme_nas"):
        tib = float(shared.get("capacity_tib") or (10 if kind == "cpfs" else 1))
        shared_gib = float(shared.get("capacity_gib") or tib * 1024)
        if kind == "cpfs":
            p = data["cpfs"]
            rate = p.get("per_gib_month")
        elif kind == "extreme_nas":
            p = data["nas_extreme"]
            rate = p.get("per_gib_month")
        else:
            p = data["nas"]
            rate = p.get("performance_per_gib_month")
        amount = rate * shared_gib * hours / HOURS_PER_MONTH if rate is not None else None
        note = None
        if amount is not None and p.get("currency", cur) != cur:
            amount, note = _conv(amount, p["currency"], cur)
        if amount is not None and per_job and hours > 0:
            # billed on its capacity until terraform destroy, not until the instances' auto-release
            kept = N_("then {cost} per day while it is kept (billed until terraform destroy)").format(
                cost=f"{cur} {amount / hours * 24:,.2f}")
            note = f"{note}; {kept}" if note else kept
        size = (("{gib} GiB", {"gib": f"{shared_gib:,.0f}"}) if shared.get("capacity_gib") else
                ("{tib} TiB", {"tib": f"{tib:g}"}))
        lines.append(_line((SHARED_FS, {"kind": shared_fs_name(kind)}), amount, unit, cur,
                           p.get("source"), p.get("as_of"), bool(p.get("estimated")), size, note))

    # 4. Internet traffic out (serving responses; training downloads are inbound and free).
    if not per_job:
        rps = _average_rps(workload)
        out_tokens = int(getattr(workload, "output_tokens", 0) or 0)
        gb = rps * out_tokens * float(data["assumptions"]["response_bytes_per_token"]) * hours * 3600 / 1e9
        p = data["internet"]
        amount, note = _conv(gb * float(p["per_gb_out"]), p["currency"], cur)
        lines.append(_line((TRAFFIC_OUT, {}), amount, unit, cur, p["source"], p["as_of"], True,
                           (Q_TRAFFIC, {"gb": f"{gb:,.1f}", "rps": f"{rps:.3g}", "tokens": out_tokens}), note))

    # 5. Platform fee: ACK Pro cluster management fee.
    if fee:
        note = (N_("USD {fee}/h converted to {cur}").format(fee=fee["per_hour"], cur=cur)
                if fee.get("currency") != cur else None)
        amount = float(fee["monthly"]) if fee.get("monthly") is not None else None
        lines.append(_line((ACK_FEE, {}), amount, unit, cur, fee.get("source"), fee.get("as_of"),
                           False, ("{hours} h", {"hours": f"{hours:,.0f}"}), note))

    known = [ln["amount"] for ln in lines if ln["amount"] is not None]
    return {"basis": basis, "hours": round(hours, 2), "currency": cur, "lines": lines,
            "total": round(sum(known), 2) if known else None,
            "unknown": [ln["item"] for ln in lines if ln["amount"] is None]}

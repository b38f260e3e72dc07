"""Same machine, two names: plans that are the same hardware at the same price are shown once.

Alibaba sells some machines under several instance-type names (ecs.gn7e-c16g1.32xlarge and
ecs.ebmgn7e.32xlarge: 8 x A100-SXM4-80GB on NVSwitch, the same price; ecs.gn8v-8x.16xlarge and its
confidential-computing twin ecs.gn8v-tee-8x.16xlarge). Two plans are the same offer when they run on
the same platform, GPU, GPU count, instance count, links (intra-node link, RDMA, inter-node bandwidth),
layout, billing mode, region and price (per hour and per month, to the cent). The first in rank order
is kept; the others are named in its ``aliases``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gpuplan.plan.record import Plan


def offer_key(p: Plan) -> tuple:
    """What makes two plans the same purchase for the user (the instance-type name aside)."""
    s = getattr(p.estimate, "system", None)
    links = (s.gpus_per_node, s.intra_link, s.rdma, s.inter_node_gbit_s if s.nodes > 1 else None,
             s.gpu_fraction) if s is not None and p.platform != "function-compute" else None
    c = p.cost
    money = tuple(None if x is None else round(float(x), 2)
                  for x in (c.price_per_hour, c.monthly_cost, c.total_cost, c.cost_per_billion_tokens))
    return (p.platform, p.gpu, p.gpus_total, p.instance_count, links, p.layout, c.billing, c.region, c.price_region,
            money, c.replicas)


def merge_aliases(ranked: Sequence[Plan]) -> list[Plan]:
    """The ranked plans with each offer once (its first, best-ranked name), the other names in ``aliases``."""
    first: dict[tuple, int] = {}
    out: list[Plan] = []
    names: list[list[str]] = []
    for p in ranked:
        key = offer_key(p)
        at = first.get(key)
        if at is None:
            first[key] = len(out)
            out.append(p)
            names.append([])
        elif p.instance_type != out[at].instance_type and p.instance_type not in names[at]:
            names[at].append(p.instance_type)
    return [replace(p, aliases=tuple(dict.fromkeys((*p.aliases, *n)))) if n else p
            for p, n in zip(out, names, strict=True)]

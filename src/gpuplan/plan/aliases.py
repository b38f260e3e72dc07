"""Same machine, two names: plans that are the same hardware at the same price are shown once.

Alibaba sells some machines under several instance-type names (ecs.gn8v-8x.16xlarge and its
confidential-computing twin ecs.gn8v-tee-8x.16xlarge, the same price). Two plans are the same offer when
they run on the same platform, GPU, GPU count, instance count, links (intra-node link, RDMA, inter-node
bandwidth), layout, billing mode, region and price (per hour and per month, to the cent), and on the same
kind of machine with the same network: a bare-metal type and a VM are never the same machine
(ecs.ebmgn8v.48xlarge, bare metal with 170 Gbit/s, is not ecs.gn8v-8x.48xlarge, a VM with 100 Gbit/s,
whatever their prices), nor are two types whose published network or RDMA bandwidth differ. The first in
rank order is kept; the others are named in its ``aliases``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from gpuplan.catalog.hardware.instances import InstanceType, available_clouds, load_instances
from gpuplan.plan.record import Plan


def machine(instance_type: str, catalogs: Sequence[Mapping[str, InstanceType]] | None = None) -> tuple | None:
    """(kind, network Gbit/s, RDMA Gbit/s) of a catalog instance type: vm | bare-metal | vgpu | scc.
    ``catalogs``: every cloud's ``load_instances`` (merge_aliases loads them once for all its plans)."""
    for catalog in catalogs if catalogs is not None else (load_instances(c) for c in available_clouds()):
        inst = catalog.get(instance_type)
        if inst is not None:
            return inst.kind, inst.network_gbit_s, inst.rdma_gbit_s
    return None


def offer_key(p: Plan, machine_of: Callable[[str], tuple | None] = machine) -> tuple:
    """What makes two plans the same purchase for the user (the instance-type name aside). ``machine_of``:
    :func:`machine`, or a memo of it (merge_aliases asks once per instance type, not once per plan)."""
    s = getattr(p.estimate, "system", None)
    links = (s.gpus_per_node, s.intra_link, s.gpu_p2p, s.rdma, s.inter_node_gbit_s if s.nodes > 1 else None,
             s.gpu_fraction) if s is not None and p.platform != "function-compute" else None
    c = p.cost
    money = tuple(None if x is None else round(float(x), 2)
                  for x in (c.price_per_hour, c.monthly_cost, c.total_cost, c.cost_per_billion_tokens))
    return (p.platform, p.gpu, p.gpus_total, p.instance_count, links, machine_of(p.instance_type), p.layout, c.billing,
            c.region, c.price_region, money, c.replicas)


def merge_aliases(ranked: Sequence[Plan]) -> list[Plan]:
    """The ranked plans with each offer once (its first, best-ranked name), the other names in ``aliases``."""
    first: dict[tuple, int] = {}
    out: list[Plan] = []
    names: list[list[str]] = []
    machines: dict[str, tuple | None] = {}
    catalogs: list[Mapping[str, InstanceType]] = []

    def machine_of(instance_type: str) -> tuple | None:
        if instance_type not in machines:
            if not catalogs:
                catalogs.extend(load_instances(c) for c in available_clouds())
            machines[instance_type] = machine(instance_type, catalogs)
        return machines[instance_type]

    for p in ranked:
        key = offer_key(p, machine_of)
        at = first.get(key)
        if at is None:
            first[key] = len(out)
            out.append(p)
            names.append([])
        elif p.instance_type != out[at].instance_type and p.instance_type not in names[at]:
            names[at].append(p.instance_type)
    return [replace(p, aliases=tuple(dict.fromkeys((*p.aliases, *n)))) if n else p
            for p, n in zip(out, names, strict=True)]

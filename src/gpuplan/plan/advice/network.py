"""Network advice: nothing for one node; for several nodes the eRDMA/RoCE-capable types of the
same GPU, the NCCL settings and the share of each step spent communicating.

Sources: eRDMA setup (driver + Elastic RDMA Interface) https://help.aliyun.com/en/ecs/user-guide/erdma-usage/ ;
NCCL variables https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html ; RoCE values as
preset by Alibaba PAI on Lingjun RoCE clusters https://www.alibabacloud.com/help/en/pai/use-a-custom-image
(for SCC/RoCE types; unconfirmed for ECS SCC families).
"""

from __future__ import annotations

from gpuplan.catalog.hardware.instances import InstanceType
from gpuplan.i18n import _

ERDMA_DOC = "https://help.aliyun.com/en/ecs/user-guide/erdma-usage/"
NCCL_DOC = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
ROCE_DOC = "https://www.alibabacloud.com/help/en/pai/use-a-custom-image"

# eRDMA presets as PAI configures them for NCCL over Alibaba's elastic RDMA (see nccl.env in a plan bundle
# for the source of each variable).
NCCL_ERDMA = {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "erdma", "NCCL_IB_GID_INDEX": "1",
              "NCCL_IB_QPS_PER_CONNECTION": "8", "NCCL_MIN_NCHANNELS": "16", "NCCL_NET_PLUGIN": "none",
              "NCCL_SOCKET_IFNAME": "eth0", "NCCL_DEBUG": "INFO"}
NCCL_ROCE = {"NCCL_IB_DISABLE": "0", "NCCL_IB_GID_INDEX": "3", "NCCL_IB_TC": "136", "NCCL_IB_SL": "5",
             "NCCL_IB_TIMEOUT": "22", "NCCL_IB_QPS_PER_CONNECTION": "8", "NCCL_SOCKET_IFNAME": "eth0",
             "NCCL_DEBUG": "INFO"}
NCCL_TCP = {"NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "eth0", "NCCL_SOCKET_NTHREADS": "4",
            "NCCL_NSOCKS_PERTHREAD": "4", "NCCL_DEBUG": "INFO"}


def network_advice(inst: InstanceType, nodes: int, comm_fraction: float | None,
                   rdma_alternatives: list[str]) -> dict:
    """The `network` advice object of a plan."""
    intra = inst.interconnect or "none"
    if nodes <= 1:
        return {"multi_node": False, "rdma": inst.rdma or None, "intra_node": intra,
                "comm_fraction": comm_fraction, "nccl_env": {}, "rdma_types": [],
                "text": _("single node: no inter-node network needed; GPUs talk over {link}").format(link=intra)
                if inst.gpus > 1 else _("single node: no inter-node network needed"),
                "sources": []}
    if inst.rdma == "erdma":
        env, src = NCCL_ERDMA, [ERDMA_DOC, NCCL_DOC]
        text = _("{nodes} nodes over eRDMA ({gbit} Gbit/s): install the eRDMA driver and attach an Elastic RDMA "
                 "Interface to each node; check that the NCCL log shows NET/IB").format(
            nodes=nodes, gbit=inst.rdma_gbit_s or inst.network_gbit_s or "?")
    elif inst.rdma:
        env, src = NCCL_ROCE, [ROCE_DOC, NCCL_DOC]
        text = _("{nodes} nodes over {rdma} ({gbit} Gbit/s)").format(nodes=nodes, rdma=inst.rdma.upper(),
                                                                     gbit=inst.rdma_gbit_s or "?")
    else:
        env, src = NCCL_TCP, [NCCL_DOC]
        text = _("{nodes} nodes over the VPC network (TCP, {gbit} Gbit/s): slow for gradient all-reduce; prefer an "
                 "eRDMA type").format(nodes=nodes, gbit=inst.network_gbit_s or "?")
    if comm_fraction is not None:
        text = _("{text}; {share} of each step is communication").format(text=text, share=f"{comm_fraction:.0%}")
    return {"multi_node": True, "rdma": inst.rdma or None, "intra_node": intra, "comm_fraction": comm_fraction,
            "nccl_env": dict(env), "rdma_types": rdma_alternatives[:6], "text": text, "sources": src}

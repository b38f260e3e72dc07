"""NCCL environment for multi-node runs (nccl.env), one source per variable.

Values by fabric:

- eRDMA (ECS gn8is/gn8v/ebmgn7ex/... with an Elastic RDMA Interface): the values Alibaba PAI
  presets for eRDMA instance types, "eRDMA high-performance network variables" table (NCCL 2.19+).
- RoCE (Lingjun / SCC types): the values PAI presets on Lingjun RDMA resources.
- No RDMA (VPC TCP): NCCL's socket transport with more threads and sockets per thread.

The recommender's own ``network.nccl_env`` (when the plan carries one) wins over these defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuplan.errors import GpuplanError
from gpuplan.i18n import _
from gpuplan.render.bundle.safe import INERT_RE

if TYPE_CHECKING:
    from gpuplan.render.bundle.context import Ctx

NCCL_DOC = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
PAI_ERDMA_DOC = "https://www.alibabacloud.com/help/en/pai/user-guide/erdma-distributed-training-with-high-performance-networks"
PAI_ROCE_DOC = "https://www.alibabacloud.com/help/en/pai/use-a-custom-image"
ECS_ERDMA_DOC = "https://help.aliyun.com/zh/ecs/user-guide/on-the-gpu-instance-configuration-erdma"


@dataclass(frozen=True)
class NcclVar:
    name: str
    value: str
    source: str
    note: str


# name -> (value, source, what it does)
_ERDMA = {
    "NCCL_IB_DISABLE": ("0", NCCL_DOC, "keep NCCL's IB verbs transport on (eRDMA devices are verbs devices)"),
    "NCCL_IB_HCA": ("erdma", PAI_ERDMA_DOC, "use the eRDMA devices (erdma_0, erdma_1, ...) for the data path"),
    "NCCL_IB_GID_INDEX": ("1", PAI_ERDMA_DOC, "GID index PAI presets for eRDMA"),
    "NCCL_IB_QPS_PER_CONNECTION": ("8", PAI_ERDMA_DOC, "more queue pairs per connection for throughput"),
    "NCCL_MIN_NCHANNELS": ("16", PAI_ERDMA_DOC, "minimum channels PAI presets for eRDMA"),
    "NCCL_NET_PLUGIN": ("none", PAI_ERDMA_DOC, "use NCCL's built-in IB transport, no external net plugin"),
    "NCCL_SOCKET_IFNAME": ("eth0", PAI_ERDMA_DOC, "bootstrap and out-of-band traffic on the primary NIC"),
    "NCCL_DEBUG": ("INFO", NCCL_DOC, "log the transport; look for 'NET/IB' and erdma in the first run, then WARN"),
}
_ROCE = {
    "NCCL_IB_DISABLE": ("0", NCCL_DOC, "keep NCCL's IB verbs transport on"),
    "NCCL_IB_HCA": ("mlx5", PAI_ROCE_DOC, "use the Mellanox RoCE NICs"),
    "NCCL_IB_GID_INDEX": ("3", PAI_ROCE_DOC, "RoCE v2 GID PAI presets on Lingjun"),
    "NCCL_IB_TC": ("136", PAI_ROCE_DOC, "traffic class matching Alibaba's network mapping rules"),
    "NCCL_IB_SL": ("5", PAI_ROCE_DOC, "service level PAI presets"),
    "NCCL_IB_TIMEOUT": ("22", PAI_ROCE_DOC, "longer IB timeout for fault tolerance"),
    "NCCL_IB_QPS_PER_CONNECTION": ("8", PAI_ROCE_DOC, "more queue pairs per connection"),
    "NCCL_NET_PLUGIN": ("none", PAI_ROCE_DOC, "no external net plugin"),
    "NCCL_SOCKET_IFNAME": ("eth", PAI_ROCE_DOC, "bootstrap on the eth* interfaces"),
    "NCCL_DEBUG": ("INFO", NCCL_DOC, "log the transport for the first run, then WARN"),
}
_TCP = {
    "NCCL_IB_DISABLE": ("1", NCCL_DOC, "no RDMA on this instance type: use the socket transport"),
    "NCCL_SOCKET_IFNAME": ("eth0", NCCL_DOC, "the VPC interface"),
    "NCCL_SOCKET_NTHREADS": ("4", NCCL_DOC, "CPU helper threads per connection (NTHREADS x NSOCKS <= 64)"),
    "NCCL_NSOCKS_PERTHREAD": ("4", NCCL_DOC, "sockets per helper thread"),
    "NCCL_DEBUG": ("INFO", NCCL_DOC, "log the transport for the first run, then WARN"),
}


def defaults(rdma: str | None) -> dict[str, tuple[str, str, str]]:
    """The default table for a fabric (erdma | roce/ib | None = TCP)."""
    if rdma == "erdma":
        return _ERDMA
    if rdma in ("roce", "ib"):
        return _ROCE
    return _TCP


def nccl_vars(rdma: str | None, overrides: dict, sources: list, *, multi_node: bool) -> tuple[NcclVar, ...]:
    """The variables for nccl.env: defaults for the fabric (``rdma`` None = TCP), overridden by the
    plan's advice. A single node needs none: empty tuple."""
    if not multi_node:
        return ()
    table = defaults(rdma)
    plan_source = " ".join(str(s) for s in sources if isinstance(s, str)) or NCCL_DOC
    out: dict[str, NcclVar] = {k: NcclVar(k, v, src, note) for k, (v, src, note) in table.items()}
    for key, value in sorted(overrides.items()):
        key, text = str(key), str(value)
        if not (key.startswith("NCCL_") and INERT_RE.match(key) and INERT_RE.match(text)):
            raise GpuplanError(_("The plan's NCCL setting {key}={value!r} is not a plain NCCL variable.").format(
                key=key, value=text), hint=_("NCCL variables are NCCL_* names with plain values."))
        known = table.get(key)
        out[key] = NcclVar(key, text, known[1] if known and known[0] == text else plan_source,
                           known[2] if known else "set by the recommender's network advice")
    return tuple(out[k] for k in sorted(out))


def nccl_env(c: "Ctx") -> str:
    """KEY=value lines (for `set -a; . nccl.env`, systemd EnvironmentFile and docker --env-file),
    each preceded by what it does and its source."""
    fabric = {"erdma": "eRDMA", "roce": "RoCE", "ib": "InfiniBand"}.get(c.rdma or "", "TCP (no RDMA on this type)")
    lines = [f"# NCCL settings for {c.nodes} x {c.instance_type} over {fabric}.",
             "# Plain KEY=value lines: `set -a; . ./nccl.env; set +a`, systemd EnvironmentFile= or docker --env-file.",
             "# NVIDIA's reference for every variable: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",
             "# Set NCCL_DEBUG=WARN once the first run's log shows the expected transport."]
    if c.rdma == "erdma":
        lines.append("# eRDMA needs NCCL 2.19 or later and the eRDMA driver on the host "
                     "(https://www.alibabacloud.com/help/en/pai/user-guide/erdma-distributed-training-with-high-performance-networks).")
    for v in c.nccl_vars:
        lines.append("")
        lines.append(f"# {v.note}. Source: {v.source}")
        lines.append(f"{v.name}={v.value}")
    return "\n".join(lines) + "\n"

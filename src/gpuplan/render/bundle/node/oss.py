"""How the node's scripts reach OSS (fetch-model.sh, run-with-resume.sh): ossutil 1.x reads no credentials and no
endpoint by itself, so every call names the region's VPC-internal endpoint and the instance's RAM role
(``--mode EcsRamRole --ecs-role-name``: STS credentials from the instance metadata, no key on the node).

An ECS bundle's Terraform creates that role (``alicloud_ram_role.node``, an OSS system policy attached, set as every
instance's ``role_name``), so its scripts default to its name. Elsewhere (an ACK pod, a PAI-DLC job) the role is the
platform's: ``OSS_ROLE`` names it, or an ossutil config file does (``ossutil config``).
ossutil 1.x options: https://www.alibabacloud.com/help/en/oss/developer-reference/view-options (``-e``, ``--mode``
EcsRamRole, ``--ecs-role-name``); endpoints: oss-<region>-internal.aliyuncs.com inside the region's VPC.
"""

from __future__ import annotations

from gpuplan.render.bundle.context import Ctx

# RAM role names: 1-64 letters, digits, '.', '-', '_' (the slug is lower-case letters, digits and '-')
ROLE_SUFFIX = "-node"
# System policies attached to the role: a training run or batch job writes checkpoints or outputs, a service reads
READ_WRITE_POLICY = "AliyunOSSFullAccess"
READ_ONLY_POLICY = "AliyunOSSReadOnlyAccess"


def oss_endpoint(region: str) -> str:
    """The region's VPC-internal OSS endpoint (no traffic fee, the rate PLAN.md times)."""
    return f"oss-{region}-internal.aliyuncs.com"


def node_role(c: Ctx) -> str:
    """The RAM role an ECS bundle's Terraform attaches to its instances ("" on other platforms)."""
    if c.platform != "ecs":
        return ""
    return c.slug[:64 - len(ROLE_SUFFIX)] + ROLE_SUFFIX


def node_policy(c: Ctx) -> str:
    """The OSS policy of the node role: read and write for a job (checkpoints, outputs), read-only for a service."""
    return READ_WRITE_POLICY if c.training or c.batch_job else READ_ONLY_POLICY

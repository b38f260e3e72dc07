locals {
  name = "llama8b-full-2node"
  tags = {
    "gpuplan-job"  = "llama8b-full-2node"
    "gpuplan-slug" = "llama8b-full-2node"
  }
  # Extreme NAS exports its file system under /share, over NFSv3 only (mount-shared.sh mounts vers=3,nolock)
  shared_mount = "${alicloud_nas_mount_target.shared.mount_target_domain}:/share"
  # the zones that sell both the GPU instance type and the shared file system; an empty list stops `terraform plan`
  # at the vSwitch's zone ("Invalid index") before anything is created: pick another region or set zone_id
  shared_zones = [for z in data.alicloud_zones.gpu.zones : z.id if contains([for n in data.alicloud_nas_zones.shared.zones : n.zone_id], z.id)]
  # cloud-init.yaml carries placeholders filled here: the mount address, checkpoint and weights prefixes (all nodes),
  # then NODE_RANK and MASTER_ADDR per node (below). Nodes get fixed private IPs so every node knows the
  # address of its job's rank-0 node before any node exists.
  user_data = replace(replace(replace(file("${path.module}/../cloud-init.yaml"), "@@SHARED_MOUNT@@", local.shared_mount), "@@CKPT_REMOTE@@", var.oss_checkpoint_prefix), "@@MODEL_OSS@@", var.model_oss_prefix)
  # (Written with functions only: element() wraps around, so rank = index mod 2.)
  private_ips  = [for i in range(var.instance_count) : cidrhost(var.vswitch_cidr, sum([var.first_host_index, i]))]
  node_ranks   = range(2)
  master_addrs = flatten([for job in chunklist(local.private_ips, 2) : [for ip in job : job[0]]])
}

data "alicloud_zones" "gpu" {
  available_instance_type     = var.instance_type
  available_resource_creation = "VSwitch"
}

data "alicloud_nas_zones" "shared" {
  file_system_type = "extreme"
}

data "alicloud_images" "gpu" {
  name_regex  = var.image_name_regex
  owners      = "system"
  most_recent = true
}

resource "alicloud_vpc" "this" {
  vpc_name   = local.name
  cidr_block = var.vpc_cidr
  tags       = local.tags
}

resource "alicloud_vswitch" "this" {
  vswitch_name = local.name
  vpc_id       = alicloud_vpc.this.id
  cidr_block   = var.vswitch_cidr
  zone_id      = coalesce(var.zone_id, local.shared_zones[0])
  tags         = local.tags
}

# Security group: nothing is open except the rules below.
resource "alicloud_security_group" "this" {
  security_group_name = local.name
  vpc_id              = alicloud_vpc.this.id
  description         = "gpuplan llama8b-full-2node: SSH from admin_cidr, exporters from monitoring_cidr, all traffic between the nodes"
  tags                = local.tags
}

resource "alicloud_security_group_rule" "ssh" {
  security_group_id = alicloud_security_group.this.id
  type              = "ingress"
  ip_protocol       = "tcp"
  nic_type          = "intranet"
  policy            = "accept"
  port_range        = "22/22"
  priority          = 1
  cidr_ip           = var.admin_cidr
}

resource "alicloud_security_group_rule" "node_exporter" {
  security_group_id = alicloud_security_group.this.id
  type              = "ingress"
  ip_protocol       = "tcp"
  nic_type          = "intranet"
  policy            = "accept"
  port_range        = "9100/9100"
  priority          = 1
  cidr_ip           = var.monitoring_cidr
}

resource "alicloud_security_group_rule" "dcgm_exporter" {
  security_group_id = alicloud_security_group.this.id
  type              = "ingress"
  ip_protocol       = "tcp"
  nic_type          = "intranet"
  policy            = "accept"
  port_range        = "9400/9400"
  priority          = 1
  cidr_ip           = var.monitoring_cidr
}

# Rendezvous (29500), NCCL bootstrap and data traffic between the nodes of this job only.
resource "alicloud_security_group_rule" "intra_job" {
  security_group_id        = alicloud_security_group.this.id
  type                     = "ingress"
  ip_protocol              = "all"
  nic_type                 = "intranet"
  policy                   = "accept"
  port_range               = "-1/-1"
  priority                 = 1
  source_security_group_id = alicloud_security_group.this.id
}

# Extreme NAS (advanced): the nodes mount it with the stock NFS client. Its bandwidth grows with the capacity
# (storage.yaml nas_extreme: 600 MB/s at 2100 GiB); it is billed on the capacity,
# from creation (https://www.alibabacloud.com/help/en/nas/latest/extreme-nas-file-system).
resource "alicloud_nas_file_system" "shared" {
  file_system_type = "extreme"
  protocol_type    = "NFS"
  storage_type     = "advance"
  capacity         = var.nas_capacity_gib
  zone_id          = alicloud_vswitch.this.zone_id
  description      = local.name
}

resource "alicloud_nas_mount_target" "shared" {
  file_system_id    = alicloud_nas_file_system.shared.id
  access_group_name = "DEFAULT_VPC_GROUP_NAME"
  vswitch_id        = alicloud_vswitch.this.id
  vpc_id            = alicloud_vpc.this.id
  network_type      = "Vpc"
}

# The nodes' RAM role: fetch-model.sh and run-with-resume.sh reach OSS with it (ossutil --mode EcsRamRole: STS
# credentials from the instance metadata; no key on a node). Creating it needs RAM permissions (ram:CreateRole,
# ram:AttachPolicyToRole) for the account Terraform runs as. AliyunOSSFullAccess lets the job write its
# checkpoints; a custom policy limited to your bucket is tighter.
resource "alicloud_ram_role" "node" {
  role_name                   = "llama8b-full-2node-node"
  description                 = "gpuplan nodes of llama8b-full-2node: OSS access without keys"
  assume_role_policy_document = "{\"Statement\":[{\"Action\":\"sts:AssumeRole\",\"Effect\":\"Allow\",\"Principal\":{\"Service\":[\"ecs.aliyuncs.com\"]}}],\"Version\":\"1\"}"
}

resource "alicloud_ram_role_policy_attachment" "node_oss" {
  role_name   = alicloud_ram_role.node.role_name
  policy_name = "AliyunOSSFullAccess"
  policy_type = "System"
}

# Public bandwidth for the model download: inbound = outbound above 10 Mbit/s, and pay-by-traffic bills only
# outbound GB, so the cap costs nothing while idle. 100 Mbit/s moves the 16 GB model in about 21.4min
# per node (PLAN.md); set model_oss_prefix to copy staged weights over the VPC-internal OSS endpoint instead.
resource "alicloud_instance" "gpu" {
  count                      = var.instance_count
  instance_name              = "${local.name}-${count.index}"
  host_name                  = "${local.name}-${count.index}"
  instance_type              = var.instance_type
  image_id                   = coalesce(var.image_id, data.alicloud_images.gpu.images[0].id)
  vswitch_id                 = alicloud_vswitch.this.id
  security_groups            = [alicloud_security_group.this.id]
  key_name                   = var.key_name
  role_name                  = alicloud_ram_role.node.role_name
  depends_on                 = [alicloud_ram_role_policy_attachment.node_oss] # OSS readable at first boot
  internet_charge_type       = var.internet_charge_type
  internet_max_bandwidth_out = var.public_bandwidth_mbit
  private_ip                 = local.private_ips[count.index]
  system_disk_category       = "cloud_essd"
  system_disk_size           = var.system_disk_gib
  tags                       = local.tags
  # Rank within the job (training) or replica (serving) and the rank-0 node's address.
  user_data = base64encode(replace(replace(local.user_data,
    "@@NODE_RANK@@", tostring(element(local.node_ranks, count.index))),
  "@@MASTER_ADDR@@", local.master_addrs[count.index]))

  instance_charge_type = "PostPaid"

  # Auto-release: ECS releases the instance at this UTC time, auto_release_hours after apply; 0 = never (no release
  # time is set: the argument is null, so the instance runs until `terraform destroy`).
  auto_release_time = contains([0], var.auto_release_hours) ? null : formatdate("YYYY-MM-DD'T'hh:mm:ss'Z'", timeadd(timestamp(), "${var.auto_release_hours}h"))

  lifecycle {
    ignore_changes = [auto_release_time]
  }
}

# The data disk (/mnt/data: model cache) is its own resource and is NOT deleted with the
# instance: it survives an auto-release or a spot reclaim, and the next `terraform apply` attaches it to the new
# instance (mount-data.sh finds it by its label). `terraform destroy` deletes it: copy what you need first.
resource "alicloud_ecs_disk" "data" {
  count                = var.instance_count
  disk_name            = "${local.name}-data-${count.index}"
  zone_id              = alicloud_vswitch.this.zone_id
  category             = "cloud_essd"
  performance_level    = var.data_disk_performance_level
  size                 = var.data_disk_gib
  delete_with_instance = false
  tags                 = local.tags
}

resource "alicloud_ecs_disk_attachment" "data" {
  count       = var.instance_count
  disk_id     = alicloud_ecs_disk.data[count.index].id
  instance_id = alicloud_instance.gpu[count.index].id
}

# eRDMA: 2 Elastic RDMA Interfaces (ENIs in HighPerformance mode) per node, one per NIC index: the
# family's full eRDMA rate needs them on different network cards (families.yaml rdma_interfaces; one ERI gives less).
# https://help.aliyun.com/zh/ecs/user-guide/on-the-gpu-instance-configuration-erdma
locals {
  # (node, network card) of each ERI, written with functions only
  eri_nodes = flatten([for i in range(var.instance_count) : [for j in range(2) : i]])
  eri_cards = flatten([for i in range(var.instance_count) : range(2)])
}

resource "alicloud_ecs_network_interface" "erdma" {
  count                          = length(local.eri_nodes)
  network_interface_name         = "${local.name}-erdma-${count.index}"
  vswitch_id                     = alicloud_vswitch.this.id
  security_group_ids             = [alicloud_security_group.this.id]
  network_interface_traffic_mode = "HighPerformance"
  tags                           = local.tags
  # after the instances: an ERI takes an automatic address in the vSwitch, never one of the nodes' fixed ones
  depends_on = [alicloud_instance.gpu]
}

resource "alicloud_ecs_network_interface_attachment" "erdma" {
  count                = length(local.eri_nodes)
  network_interface_id = alicloud_ecs_network_interface.erdma[count.index].id
  instance_id          = alicloud_instance.gpu[local.eri_nodes[count.index]].id
  network_card_index   = local.eri_cards[count.index]
}

locals {
  name = "qwen7b-lora-demo"
  tags = {
    "gpuplan-job"  = "qwen7b-lora-demo"
    "gpuplan-slug" = "qwen7b-lora-demo"
  }
  shared_mount = ""
  # cloud-init.yaml carries placeholders filled here: the mount address and checkpoint prefix (all nodes),
  # then NODE_RANK and MASTER_ADDR per node (below). Nodes get fixed private IPs so every node knows the
  # address of its job's rank-0 node before any node exists.
  user_data = replace(replace(file("${path.module}/../cloud-init.yaml"), "@@SHARED_MOUNT@@", local.shared_mount), "@@CKPT_REMOTE@@", var.oss_checkpoint_prefix)
  # (Written with functions only: element() wraps around, so rank = index mod 1.)
  private_ips  = [for i in range(var.instance_count) : cidrhost(var.vswitch_cidr, sum([var.first_host_index, i]))]
  node_ranks   = range(1)
  master_addrs = flatten([for job in chunklist(local.private_ips, 1) : [for ip in job : job[0]]])
}

data "alicloud_zones" "gpu" {
  available_instance_type     = var.instance_type
  available_resource_creation = "VSwitch"
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
  zone_id      = coalesce(var.zone_id, data.alicloud_zones.gpu.zones[0].id)
  tags         = local.tags
}

# Security group: nothing is open except the rules below.
resource "alicloud_security_group" "this" {
  security_group_name = local.name
  vpc_id              = alicloud_vpc.this.id
  description         = "gpuplan qwen7b-lora-demo: SSH from admin_cidr, exporters from monitoring_cidr"
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

resource "alicloud_instance" "gpu" {
  count                      = var.instance_count
  instance_name              = "${local.name}-${count.index}"
  host_name                  = "${local.name}-${count.index}"
  instance_type              = var.instance_type
  image_id                   = coalesce(var.image_id, data.alicloud_images.gpu.images[0].id)
  vswitch_id                 = alicloud_vswitch.this.id
  security_groups            = [alicloud_security_group.this.id]
  key_name                   = var.key_name
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

  # Auto-release: ECS releases the instance at this UTC time, auto_release_hours after apply.
  auto_release_time = formatdate("YYYY-MM-DD'T'hh:mm:ss'Z'", timeadd(timestamp(), "${var.auto_release_hours}h"))

  data_disks {
    name                 = "${local.name}-data"
    category             = "cloud_essd"
    performance_level    = var.data_disk_performance_level
    size                 = var.data_disk_gib
    delete_with_instance = true
  }

  lifecycle {
    ignore_changes = [auto_release_time]
  }
}

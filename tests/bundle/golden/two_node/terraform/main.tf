locals {
  name = "llama8b-full-2node"
  tags = {
    "gpuplan-job"  = "llama8b-full-2node"
    "gpuplan-slug" = "llama8b-full-2node"
  }
  shared_mount = var.cpfs_mount
  # cloud-init.yaml carries two placeholders filled here (the mount address and the checkpoint prefix).
  user_data = replace(replace(file("${path.module}/../cloud-init.yaml"), "@@SHARED_MOUNT@@", local.shared_mount), "@@CKPT_REMOTE@@", var.oss_checkpoint_prefix)
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
  system_disk_category       = "cloud_essd"
  system_disk_size           = 100
  user_data                  = base64encode(local.user_data)
  tags                       = local.tags

  instance_charge_type = "PostPaid"

  data_disks {
    name                 = "${local.name}-data"
    category             = "cloud_essd"
    performance_level    = var.data_disk_performance_level
    size                 = var.data_disk_gib
    delete_with_instance = true
  }
}

# eRDMA: one Elastic RDMA Interface (an ENI in HighPerformance mode) per node.
# https://help.aliyun.com/zh/ecs/user-guide/on-the-gpu-instance-configuration-erdma
resource "alicloud_ecs_network_interface" "erdma" {
  count                          = var.instance_count
  network_interface_name         = "${local.name}-erdma-${count.index}"
  vswitch_id                     = alicloud_vswitch.this.id
  security_group_ids             = [alicloud_security_group.this.id]
  network_interface_traffic_mode = "HighPerformance"
  tags                           = local.tags
}

resource "alicloud_ecs_network_interface_attachment" "erdma" {
  count                = var.instance_count
  network_interface_id = alicloud_ecs_network_interface.erdma[count.index].id
  instance_id          = alicloud_instance.gpu[count.index].id
}

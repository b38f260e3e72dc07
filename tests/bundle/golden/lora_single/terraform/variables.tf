variable "region" {
  description = "Region of the plan (prices were taken for cn-shanghai)."
  type        = string
  default     = "cn-shanghai"
}

variable "profile" {
  description = "Optional `aliyun configure` profile name; null uses the environment variables or the instance RAM role."
  type        = string
  default     = null
}

variable "zone_id" {
  description = "Zone for the vSwitch; null picks the first zone that sells the instance type."
  type        = string
  default     = null
}

variable "instance_type" {
  description = "Instance type chosen by gpuplan."
  type        = string
  default     = "ecs.gn7i-c8g1.2xlarge"
}

variable "instance_count" {
  description = "Number of instances (nodes)."
  type        = number
  default     = 1
}

variable "image_id" {
  description = "Image id; null picks the newest system image matching image_name_regex."
  type        = string
  default     = null
}

variable "image_name_regex" {
  description = "System image to use when image_id is null (install the GPU driver, or pick an image that has it)."
  type        = string
  default     = "^ubuntu_22_04_x64"
}

variable "key_name" {
  description = "Name of an existing ECS key pair for SSH (the private key never leaves your machine)."
  type        = string
}

variable "admin_cidr" {
  description = "CIDR allowed to SSH in (your office or bastion address, e.g. 203.0.113.7/32)."
  type        = string
}

variable "monitoring_cidr" {
  description = "CIDR of the Prometheus server that scrapes the node and DCGM exporters."
  type        = string
  default     = "10.0.0.0/8"
}

variable "vpc_cidr" {
  description = "CIDR of the new VPC."
  type        = string
  default     = "10.20.0.0/16"
}

variable "vswitch_cidr" {
  description = "CIDR of the new vSwitch (inside vpc_cidr)."
  type        = string
  default     = "10.20.1.0/24"
}

variable "first_host_index" {
  description = "Node i gets the private IP cidrhost(vswitch_cidr, first_host_index + i); node 0 of each job is MASTER_ADDR."
  type        = number
  default     = 10
}

variable "system_disk_gib" {
  description = "System disk (ESSD) size per node in GiB: OS, container images, model cache."
  type        = number
  default     = 100
}

variable "auto_release_hours" {
  description = "Release the instances this many hours after `terraform apply` (ECS auto_release_time): first boot + model download + the plan's run at the high end of its 80% time range (at least its estimate x 1.2) + checkpoint upload, rounded up (PLAN.md). 0 = never: no release time is set."
  type        = number
  default     = 69

  validation {
    condition     = can(regex("^[0-9]+$", tostring(var.auto_release_hours)))
    error_message = "auto_release_hours is 0 (never) or a whole number of hours, at least 1 (ECS needs the release time at least 30 minutes ahead)."
  }
}

variable "public_bandwidth_mbit" {
  description = "Public bandwidth per instance in Mbit/s, 0-100 (inbound = outbound above 10 Mbit/s; PLAN.md's download time assumes 100). 0 = no public IP: then stage the weights in OSS (MODEL_OSS) or add a NAT gateway."
  type        = number
  default     = 100
}

variable "internet_charge_type" {
  description = "PayByTraffic (bills outbound GB only; inbound downloads are free) or PayByBandwidth (bills the cap per hour)."
  type        = string
  default     = "PayByTraffic"

  validation {
    condition     = contains(["PayByTraffic", "PayByBandwidth"], var.internet_charge_type)
    error_message = "internet_charge_type is PayByTraffic or PayByBandwidth."
  }
}

variable "data_disk_gib" {
  description = "Data disk size advised by gpuplan (GiB); the disk outlives the instance (alicloud_ecs_disk, delete_with_instance = false)."
  type        = number
  default     = 120
}

variable "data_disk_performance_level" {
  description = "ESSD performance level advised by gpuplan."
  type        = string
  default     = "PL1"
}

variable "oss_checkpoint_prefix" {
  description = "Optional oss://bucket/prefix the checkpoint wrapper copies checkpoints to (ossutil credentials come from the instance RAM role)."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^(oss://[a-z0-9][a-z0-9-]{1,61}[a-z0-9](/[A-Za-z0-9._/-]*)?)?$", var.oss_checkpoint_prefix))
    error_message = "Use oss://bucket/prefix (letters, digits, . _ / - only) or leave it empty."
  }
}

variable "model_oss_prefix" {
  description = "Optional oss://bucket/prefix holding the model's files: fetch-model.sh copies them over the VPC-internal OSS endpoint (faster than the public download PLAN.md times) instead of downloading from ModelScope."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^(oss://[a-z0-9][a-z0-9-]{1,61}[a-z0-9](/[A-Za-z0-9._/-]*)?)?$", var.model_oss_prefix))
    error_message = "Use oss://bucket/prefix (letters, digits, . _ / - only) or leave it empty."
  }
}

variable "region" {
  type    = string
  default = "cn-hangzhou"
}

variable "instance_type" {
  type    = string
  default = "ecs.gn8is.4xlarge"
}

variable "vswitch_ids" {
  description = "vSwitches (zones) the group may launch GPU instances in"
  type        = list(string)
}

variable "security_group_id" {
  type = string
}

variable "image_id" {
  description = "GPU image with the driver installed (see ops advice: image, driver, CUDA)"
  type        = string
}

variable "user_data" {
  description = "cloud-init that installs and starts the model server (the bundle's unit) and pushes the custom metrics every minute (README.md)"
  type        = string
  default     = ""
}

variable "data_disk_gib" {
  description = "Data disk of every instance (the model cache the unit mounts at /mnt/data), as terraform/ sizes it."
  type        = number
  default     = 100
}

variable "public_bandwidth_mbit" {
  description = "Public bandwidth per instance (the registry, the model hub, mirrors.aliyun.com); 0 = none: then the image and weights must come over the VPC."
  type        = number
  default     = 100
}

variable "role_name" {
  description = "RAM role of the instances (terraform/ creates it: qwen7b-chat-api-node), for OSS reads; null = none."
  type        = string
  default     = "qwen7b-chat-api-node"
}

variable "key_name" {
  description = "SSH key pair of the instances; null = none."
  type        = string
  default     = null
}

variable "cloud_monitor_group_id" {
  description = "CloudMonitor application group that receives the custom queue-length metric"
  type        = number
}

variable "min_size" {
  type    = number
  default = 2
}

variable "max_size" {
  type    = number
  default = 2
}

variable "scale_in_step" {
  description = "instances removed per scale-in (negative: a literal -N in a resource trips some HCL loaders)"
  type        = number
  default     = -1
}

variable "queue_scale_out" {
  description = "waiting requests per instance above which one instance is added"
  type        = number
  default     = 4
}

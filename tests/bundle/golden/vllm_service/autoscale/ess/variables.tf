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
  description = "cloud-init that starts the model server and pushes the queue-length metric"
  type        = string
  default     = ""
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

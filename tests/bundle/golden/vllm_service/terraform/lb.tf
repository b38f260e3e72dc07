# 2 replicas of qwen7b-chat-api behind one load balancer (render/bundle/cloud/lb.py).
variable "lb_address_type" {
  description = "intranet: clients in the VPC reach the service at the load balancer's private address; internet: a public address (then client_cidr must admit your clients, the listener passes their addresses through)."
  type        = string
  default     = "intranet"

  validation {
    condition     = contains(["intranet", "internet"], var.lb_address_type)
    error_message = "lb_address_type is intranet or internet."
  }
}

variable "lb_instance_charge_type" {
  description = "PayByCLCU (pay by capacity units; China-site accounts) or PayBySpec (international-site accounts; lb_spec sets the specification)."
  type        = string
  default     = "PayByCLCU"

  validation {
    condition     = contains(["PayByCLCU", "PayBySpec"], var.lb_instance_charge_type)
    error_message = "lb_instance_charge_type is PayByCLCU or PayBySpec."
  }
}

variable "lb_bandwidth_mbit" {
  description = "Bandwidth cap of the listener in Mbit/s; -1 = unlimited (a variable: a literal -1 in a resource trips some HCL loaders)."
  type        = number
  default     = -1
}

variable "lb_spec" {
  description = "CLB specification when lb_instance_charge_type is PayBySpec."
  type        = string
  default     = "slb.s2.small"
}

# One address for all instances of the service: a Classic Load Balancer with a TCP listener on the serve port.
# Its HTTP health check asks /health on every instance and sends requests only to the ones that answer.
resource "alicloud_slb_load_balancer" "api" {
  load_balancer_name   = "${local.name}-api"
  address_type         = var.lb_address_type
  vswitch_id           = contains(["intranet"], var.lb_address_type) ? alicloud_vswitch.this.id : null
  payment_type         = "PayAsYouGo"
  instance_charge_type = var.lb_instance_charge_type
  load_balancer_spec   = contains(["PayBySpec"], var.lb_instance_charge_type) ? var.lb_spec : null
  tags                 = local.tags
}

resource "alicloud_slb_server_group" "api" {
  load_balancer_id = alicloud_slb_load_balancer.api.id
  name             = "${local.name}-api"
}

resource "alicloud_slb_listener" "api" {
  load_balancer_id          = alicloud_slb_load_balancer.api.id
  server_group_id           = alicloud_slb_server_group.api.id
  protocol                  = "tcp"
  frontend_port             = 8000
  backend_port              = 8000
  bandwidth                 = var.lb_bandwidth_mbit
  established_timeout       = 900
  health_check_type         = "http"
  health_check_uri          = "/health"
  health_check_connect_port = 8000
  health_check_http_code    = "http_2xx"
  healthy_threshold         = 3
  unhealthy_threshold       = 3
  health_check_timeout      = 5
  health_check_interval     = 2
}

# The API node of every replica (rank 0 of its replica) serves behind the load balancer.
resource "alicloud_slb_server_group_server_attachment" "api" {
  count           = var.instance_count
  server_group_id = alicloud_slb_server_group.api.id
  server_id       = alicloud_instance.gpu[count.index].id
  port            = 8000
  weight          = 100
}

output "api_endpoint" {
  description = "The service's one address: the load balancer in front of every instance."
  value       = "${alicloud_slb_load_balancer.api.address}:8000"
}

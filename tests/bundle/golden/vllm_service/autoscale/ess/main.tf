locals {
  name = "qwen7b-chat-api"
  tags = {
    "gpuplan-job"  = "qwen7b-chat-api"
    "gpuplan-slug" = "qwen7b-chat-api"
  }
}

resource "alicloud_ess_scaling_group" "this" {
  scaling_group_name = local.name
  min_size           = var.min_size
  max_size           = var.max_size
  default_cooldown   = 300
  vswitch_ids        = var.vswitch_ids
  removal_policies   = ["NewestInstance", "OldestInstance"]
  tags               = local.tags
}

resource "alicloud_ess_scaling_configuration" "this" {
  scaling_group_id           = alicloud_ess_scaling_group.this.id
  scaling_configuration_name = local.name
  instance_type              = var.instance_type
  image_id                   = var.image_id
  security_group_id          = var.security_group_id
  system_disk_category       = "cloud_essd"
  system_disk_size           = 100
  user_data                  = var.user_data
  internet_charge_type       = "PayByTraffic"
  internet_max_bandwidth_out = var.public_bandwidth_mbit
  role_name                  = var.role_name
  key_name                   = var.key_name
  active                     = true
  enable                     = true
  force_delete               = true
  tags                       = local.tags

  data_disk {
    category             = "cloud_essd"
    performance_level    = "PL0"
    size                 = var.data_disk_gib
    delete_with_instance = true
  }
}

resource "alicloud_ess_scaling_rule" "out" {
  scaling_group_id  = alicloud_ess_scaling_group.this.id
  scaling_rule_name = "${local.name}-out"
  scaling_rule_type = "SimpleScalingRule"
  adjustment_type   = "QuantityChangeInCapacity"
  adjustment_value  = 1
  cooldown          = 300
}

resource "alicloud_ess_scaling_rule" "in" {
  scaling_group_id  = alicloud_ess_scaling_group.this.id
  scaling_rule_name = "${local.name}-in"
  scaling_rule_type = "SimpleScalingRule"
  adjustment_type   = "QuantityChangeInCapacity"
  adjustment_value  = var.scale_in_step
  cooldown          = 600
}

# Scale out when the average waiting-request queue per instance exceeds the target for 2 minutes.
resource "alicloud_ess_alarm" "queue_high" {
  name                   = "${local.name}-queue-high"
  scaling_group_id       = alicloud_ess_scaling_group.this.id
  alarm_actions          = [alicloud_ess_scaling_rule.out.ari]
  metric_type            = "custom"
  metric_name            = "vllm_num_requests_waiting"
  cloud_monitor_group_id = var.cloud_monitor_group_id
  period                 = 60
  statistics             = "Average"
  threshold              = var.queue_scale_out
  comparison_operator    = ">"
  evaluation_count       = 2
}

# Scale in when the queue has been empty for 10 minutes.
resource "alicloud_ess_alarm" "queue_low" {
  name                   = "${local.name}-queue-low"
  scaling_group_id       = alicloud_ess_scaling_group.this.id
  alarm_actions          = [alicloud_ess_scaling_rule.in.ari]
  metric_type            = "custom"
  metric_name            = "vllm_num_requests_waiting"
  cloud_monitor_group_id = var.cloud_monitor_group_id
  period                 = 300
  statistics             = "Average"
  threshold              = 0
  comparison_operator    = "<="
  evaluation_count       = 2
}

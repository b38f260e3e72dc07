output "scaling_group_id" {
  value = alicloud_ess_scaling_group.this.id
}

output "private_ips" {
  description = "Private IPs of the nodes (Prometheus targets; node 0 is MASTER_ADDR)."
  value       = alicloud_instance.gpu[*].private_ip
}

output "public_ips" {
  description = "Public IPs (empty when public_bandwidth_mbit is 0)."
  value       = alicloud_instance.gpu[*].public_ip
}

output "master_addr" {
  description = "MASTER_ADDR for launch.sh on every node."
  # null with instance_count 0 (the network only)
  value = try(alicloud_instance.gpu[0].private_ip, null)
}

output "vswitch_id" {
  description = "The vSwitch the nodes run in (autoscale/ess: vswitch_ids)."
  value       = alicloud_vswitch.this.id
}

output "security_group_id" {
  description = "The nodes' security group (autoscale/ess: security_group_id)."
  value       = alicloud_security_group.this.id
}

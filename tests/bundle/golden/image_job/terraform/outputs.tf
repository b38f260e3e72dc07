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
  value       = alicloud_instance.gpu[0].private_ip
}

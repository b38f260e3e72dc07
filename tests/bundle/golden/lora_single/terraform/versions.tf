# Terraform for qwen7b-lora-demo: 1 x ecs.gn7i-c8g1.2xlarge in cn-shanghai (payg).
# The alicloud provider reads credentials from ALIBABA_CLOUD_ACCESS_KEY_ID / ALIBABA_CLOUD_ACCESS_KEY_SECRET
# (or a RAM role / `aliyun configure` profile, see var.profile); never write keys into these files.
# https://registry.terraform.io/providers/aliyun/alicloud/latest/docs
terraform {
  required_version = ">= 1.3"
  required_providers {
    alicloud = {
      source = "aliyun/alicloud"
      # 1.252.0: alicloud_ram_role's role_name and assume_role_policy_document (the nodes' RAM role)
      version = ">= 1.252.0"
    }
  }
}

provider "alicloud" {
  region  = var.region
  profile = var.profile
}

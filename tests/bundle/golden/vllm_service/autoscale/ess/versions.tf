# ESS scaling group for qwen7b-chat-api: 2-2 x ecs.gn8is.4xlarge in cn-hangzhou.
# The alicloud provider reads credentials from the environment (ALIBABA_CLOUD_ACCESS_KEY_ID /
# ALIBABA_CLOUD_ACCESS_KEY_SECRET) or a RAM role; never write keys into these files.
terraform {
  required_version = ">= 1.3"
  required_providers {
    alicloud = {
      source  = "aliyun/alicloud"
      version = ">= 1.223.0"
    }
  }
}

provider "alicloud" {
  region = var.region
}

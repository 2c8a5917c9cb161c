# Strato's own deployment. Written for Terraform >= 0.15 / OpenTofu and the AWS provider >= 3.39.0 (the only
# release available offline on the development machines, where `terraform validate` runs in CI); arguments
# newer than 3.39 are not used, see README.md for what that costs and how it is worked around.
terraform {
  required_version = ">= 0.15.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 3.39.0"
    }
  }
}

provider "aws" {
  region = var.region

  default_tags {
    tags = merge({ "strato:deployment" = var.prefix }, var.tags)
  }
}

data "aws_caller_identity" "current" {}
data "aws_partition" "current" {}

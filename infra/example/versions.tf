terraform {
  required_version = ">= 1.5"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0"
    }
  }

  # Add a backend block of your own for the deployment's state (an S3 bucket outside this deployment).
}

provider "aws" {
  region = var.region

  default_tags {
    tags = merge({ "strato:deployment" = var.prefix }, var.tags)
  }
}

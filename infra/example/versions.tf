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
    # The deployment's tag last, so an extra tag of the same key cannot rename it: the engine session denies
    # every resource carrying it (strato_domain::run_access::DEPLOYMENT_TAG).
    tags = merge(var.tags, { "strato:deployment" = var.prefix })
  }
}

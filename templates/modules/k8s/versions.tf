# Providers are configured by the root module Strato generates for each stage (region and, locally, the
# emulator endpoints); modules only pin what they need.
terraform {
  required_version = ">= 0.15"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 3.39.0"
    }
  }
}

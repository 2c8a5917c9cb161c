# Example: a VPC with a NAT gateway across three zones.
provider "aws" {
  region = "us-east-1"
}

module "network" {
  source       = "../"
  cluster_name = "demo"
  vpc_cidr     = "10.20.0.0/16"
  az_count     = 3
  nat_gateway  = true
  admin_cidrs  = ["203.0.113.0/24"]
  tags         = { team = "platform" }
}

output "vpc_id" {
  value = module.network.vpc_id
}

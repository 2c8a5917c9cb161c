# Example: the do-doks module (VPC and cluster) as Strato's stage would call it.
provider "digitalocean" {}

module "do-doks" {
  source             = "../"
  cluster_name       = "demo"
  region             = "fra1"
  node_instance_type = "s-4vcpu-8gb"
  node_count         = 3
}

output "cluster_endpoint" {
  value = module.do-doks.cluster_endpoint
}

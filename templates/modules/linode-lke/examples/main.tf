# Example: the linode-lke module (cluster and firewall) as Strato's stage would call it.
provider "linode" {}

module "linode-lke" {
  source             = "../"
  cluster_name       = "demo"
  region             = "eu-central"
  node_instance_type = "g6-standard-4"
  node_count         = 3
}

output "cluster_endpoint" {
  value = module.linode-lke.cluster_endpoint
}

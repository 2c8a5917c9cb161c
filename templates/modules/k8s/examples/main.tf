# Example: the network and k8s modules wired the way Strato wires a stage (inputs by output name).
provider "aws" {
  region = "us-east-1"
}

module "network" {
  source       = "../../network"
  cluster_name = "demo"
}

module "k8s" {
  source                    = "../"
  cluster_name              = "demo"
  vpc_id                    = module.network.vpc_id
  private_subnet_ids        = module.network.private_subnet_ids
  public_subnet_ids         = module.network.public_subnet_ids
  node_subnet_ids           = module.network.node_subnet_ids
  cluster_security_group_id = module.network.cluster_security_group_id
  node_instance_type        = "m5.large"
  node_count                = 3
  max_nodes                 = 6
}

output "cluster_endpoint" {
  value = module.k8s.cluster_endpoint
}

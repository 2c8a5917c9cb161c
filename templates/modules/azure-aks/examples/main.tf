# Example: the azure-network and azure-aks modules wired the way Strato wires a stage (inputs by output name).
provider "azurerm" {
  features {}
}

module "azure-network" {
  source       = "../../azure-network"
  cluster_name = "demo"
  region       = "westeurope"
}

module "azure-aks" {
  source              = "../"
  cluster_name        = "demo"
  resource_group_name = module.azure-network.resource_group_name
  node_subnet_id      = module.azure-network.node_subnet_id
  node_instance_type  = "Standard_D4s_v5"
  node_count          = 3
}

output "cluster_endpoint" {
  value = module.azure-aks.cluster_endpoint
}

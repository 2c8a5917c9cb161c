# Example: the azure-network module alone (azure-aks shows the two wired as a stage).
provider "azurerm" {
  features {}
}

module "azure-network" {
  source       = "../"
  cluster_name = "demo"
  region       = "westeurope"
}

output "vnet_id" {
  value = module.azure-network.vnet_id
}

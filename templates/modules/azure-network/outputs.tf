output "resource_group_name" {
  description = "Resource group of the cluster's resources."
  value       = azurerm_resource_group.this.name
}

output "vnet_id" {
  description = "ID of the virtual network."
  value       = azurerm_virtual_network.this.id
}

output "node_subnet_id" {
  description = "ID of the nodes' subnet (its security group association is made first)."
  value       = azurerm_subnet_network_security_group_association.nodes.subnet_id
}

output "network_security_group_id" {
  description = "ID of the nodes' network security group."
  value       = azurerm_network_security_group.nodes.id
}

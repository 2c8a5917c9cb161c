output "cluster_endpoint" {
  description = "URL of the Kubernetes API."
  value       = "https://${azurerm_kubernetes_cluster.this.fqdn}:443"
}

output "cluster_id" {
  description = "ID of the AKS cluster."
  value       = azurerm_kubernetes_cluster.this.id
}

output "oidc_issuer_url" {
  description = "The cluster's OIDC issuer (for workload identity federation)."
  value       = azurerm_kubernetes_cluster.this.oidc_issuer_url
}

output "node_resource_group" {
  description = "Resource group AKS manages for the nodes, load balancers and disks."
  value       = azurerm_kubernetes_cluster.this.node_resource_group
}

output "cluster_identity_principal_id" {
  description = "Principal of the cluster's user-assigned managed identity."
  value       = azurerm_user_assigned_identity.cluster.principal_id
}

output "cluster_endpoint" {
  description = "URL of the Kubernetes API."
  value       = linode_lke_cluster.this.api_endpoints[0]
}

output "cluster_id" {
  description = "ID of the LKE cluster."
  value       = linode_lke_cluster.this.id
}

output "cluster_dashboard_url" {
  description = "URL of the cluster's Kubernetes dashboard."
  value       = linode_lke_cluster.this.dashboard_url
}

output "node_pool_id" {
  description = "ID of the node pool."
  value       = linode_lke_cluster.this.pool[0].id
}

output "firewall_id" {
  description = "ID of the nodes' Cloud Firewall."
  value       = linode_firewall.nodes.id
}

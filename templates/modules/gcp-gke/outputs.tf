output "cluster_endpoint" {
  description = "URL of the Kubernetes API."
  value       = "https://${google_container_cluster.this.endpoint}"
}

output "cluster_ca_certificate" {
  description = "Base64 PEM of the cluster's certificate authority."
  value       = google_container_cluster.this.master_auth[0].cluster_ca_certificate
}

output "cluster_id" {
  description = "ID of the GKE cluster."
  value       = google_container_cluster.this.id
}

output "cluster_version" {
  description = "Kubernetes version the control plane runs."
  value       = google_container_cluster.this.master_version
}

output "node_pool_name" {
  description = "Name of the node pool."
  value       = google_container_node_pool.nodes.name
}

output "node_service_account" {
  description = "Email of the nodes' service account."
  value       = google_service_account.nodes.email
}

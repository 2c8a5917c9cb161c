output "cluster_endpoint" {
  description = "URL of the Kubernetes API."
  value       = digitalocean_kubernetes_cluster.this.endpoint
}

output "cluster_id" {
  description = "ID of the DOKS cluster."
  value       = digitalocean_kubernetes_cluster.this.id
}

output "cluster_urn" {
  description = "URN of the cluster (for DigitalOcean projects)."
  value       = digitalocean_kubernetes_cluster.this.urn
}

output "cluster_version" {
  description = "Version slug the cluster runs."
  value       = digitalocean_kubernetes_cluster.this.version
}

output "vpc_id" {
  description = "ID of the cluster's VPC."
  value       = digitalocean_vpc.this.id
}

output "node_pool_id" {
  description = "ID of the node pool."
  value       = digitalocean_kubernetes_cluster.this.node_pool[0].id
}

output "cluster_endpoint" {
  description = "The API server's URL (a name under .invalid: nothing answers there)"
  value       = "https://${null_resource.control_plane.id}.${var.region}.k8s.stand-in.invalid"
}

output "node_ids" {
  description = "One id per node"
  value       = null_resource.node[*].id
}

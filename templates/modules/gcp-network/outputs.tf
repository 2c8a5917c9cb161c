output "network_id" {
  description = "ID of the VPC network."
  value       = google_compute_network.this.id
}

output "network_name" {
  description = "Name of the VPC network."
  value       = google_compute_network.this.name
}

output "subnetwork_name" {
  description = "Name of the nodes' subnet."
  value       = google_compute_subnetwork.nodes.name
}

output "pods_range_name" {
  description = "Secondary range of the subnet for pod addresses."
  value       = "pods"
}

output "services_range_name" {
  description = "Secondary range of the subnet for service addresses."
  value       = "services"
}

output "control_plane_cidr" {
  description = "The /28 the GKE control plane uses when nodes are private (the firewall rule allows it)."
  value       = var.control_plane_cidr
}

output "node_network_tag" {
  description = "Network tag the node pool's instances carry (firewall rules target it)."
  value       = local.node_tag
}

output "private_nodes" {
  description = "Whether nodes go without public addresses (only with Cloud NAT to reach the internet)."
  value       = var.nat_gateway
}

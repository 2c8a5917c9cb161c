output "eks_cluster_name" {
  description = "Name of the EKS cluster, from its ARN: the cluster the runner signs its EKS token for."
  value       = local.eks_cluster_name
}

output "agent_control_plane_url" {
  description = "The control plane URL the cluster's agent reports to."
  value       = var.control_plane_url
}

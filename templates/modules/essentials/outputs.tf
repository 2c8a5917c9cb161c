output "ingress_namespace" {
  description = "Namespace of ingress-nginx (empty when not installed)."
  value       = var.ingress_enabled ? helm_release.ingress_nginx[0].namespace : ""
}

output "cluster_issuer" {
  description = "Name of the Let's Encrypt ClusterIssuer (empty when none was created)."
  value       = length(helm_release.letsencrypt_issuer) > 0 ? "letsencrypt" : ""
}

output "monitoring_namespace" {
  description = "Namespace of the monitoring stack (empty when not installed)."
  value       = var.monitoring_enabled ? helm_release.monitoring[0].namespace : ""
}

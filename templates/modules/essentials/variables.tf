variable "cluster_name" {
  type        = string
  description = "Name of the EKS cluster (used to get an API token)."
  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,38}[a-z0-9]$", var.cluster_name))
    error_message = "The cluster_name must be 2-40 lowercase letters, digits or '-', starting with a letter."
  }
}

variable "cluster_endpoint" {
  type        = string
  description = "Kubernetes API endpoint (output of the k8s module's stage)."
  validation {
    condition     = can(regex("^https://", var.cluster_endpoint))
    error_message = "The cluster_endpoint must be an https:// URL."
  }
}

variable "cluster_ca_certificate" {
  type        = string
  description = "Base64 PEM of the cluster CA (output of the k8s module's stage)."
  validation {
    condition     = length(var.cluster_ca_certificate) > 0
    error_message = "The cluster_ca_certificate must not be empty."
  }
}

variable "ingress_enabled" {
  type        = bool
  description = "Install ingress-nginx (creates a cloud load balancer, which costs money)."
  default     = true
}

variable "ingress_replicas" {
  type        = number
  description = "Replicas of the ingress-nginx controller."
  default     = 2
  validation {
    condition     = var.ingress_replicas >= 1 && var.ingress_replicas <= 10 && floor(var.ingress_replicas) == var.ingress_replicas
    error_message = "The ingress_replicas must be a whole number from 1 to 10."
  }
}

variable "cert_manager_enabled" {
  type        = bool
  description = "Install cert-manager (with its CRDs)."
  default     = true
}

variable "letsencrypt_email" {
  type        = string
  description = "Contact e-mail for the Let's Encrypt ClusterIssuer; empty = no issuer is created."
  default     = ""
  validation {
    condition     = var.letsencrypt_email == "" || can(regex("^[^@\\s]+@[^@\\s]+$", var.letsencrypt_email))
    error_message = "The letsencrypt_email must be empty or an e-mail address."
  }
}

variable "monitoring_enabled" {
  type        = bool
  description = "Install kube-prometheus-stack (Prometheus, Alertmanager, Grafana)."
  default     = true
}

variable "monitoring_retention_days" {
  type        = number
  description = "How long Prometheus keeps metrics."
  default     = 15
  validation {
    condition     = var.monitoring_retention_days >= 1 && var.monitoring_retention_days <= 90 && floor(var.monitoring_retention_days) == var.monitoring_retention_days
    error_message = "The monitoring_retention_days must be a whole number from 1 to 90."
  }
}

variable "monitoring_storage_gb" {
  type        = number
  description = "Size of Prometheus' persistent volume in GiB (an EBS volume, billed per GB-month)."
  default     = 50
  validation {
    condition     = var.monitoring_storage_gb >= 10 && var.monitoring_storage_gb <= 2000 && floor(var.monitoring_storage_gb) == var.monitoring_storage_gb
    error_message = "The monitoring_storage_gb must be a whole number of GiB from 10 to 2000."
  }
}

variable "grafana_admin_password" {
  type        = string
  description = "Grafana admin password."
  sensitive   = true
  validation {
    condition     = length(var.grafana_admin_password) >= 12
    error_message = "The grafana_admin_password must be at least 12 characters."
  }
}

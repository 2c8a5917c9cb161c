# Example: add-ons for an existing EKS cluster (in Strato, the inputs come from the "cluster" stage's
# outputs). Needs the helm provider, which the offline test bed cannot install.
provider "aws" {
  region = "us-east-1"
}

variable "cluster_endpoint" {
  type = string
}

variable "cluster_ca_certificate" {
  type = string
}

variable "grafana_admin_password" {
  type      = string
  sensitive = true
}

module "essentials" {
  source                    = "../"
  cluster_name              = "demo"
  cluster_endpoint          = var.cluster_endpoint
  cluster_ca_certificate    = var.cluster_ca_certificate
  letsencrypt_email         = "ops@example.com"
  monitoring_retention_days = 30
  grafana_admin_password    = var.grafana_admin_password
}

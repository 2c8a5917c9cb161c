variable "cluster_name" {
  type        = string
  description = "Name of the cluster's cloud resources (Strato sets it)."
  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,38}[a-z0-9]$", var.cluster_name))
    error_message = "The cluster_name must be 2-40 lowercase letters, digits or '-', starting with a letter."
  }
}

variable "region" {
  type        = string
  description = "DigitalOcean region slug of the VPC and cluster."
  validation {
    condition     = can(regex("^[a-z]{3}[0-9]$", var.region))
    error_message = "The region must be a region slug such as fra1."
  }
}

variable "vpc_cidr" {
  type        = string
  description = "IP range of the VPC (a private range not used by another VPC of the account)."
  default     = "10.40.0.0/20"
  validation {
    condition     = can(cidrhost(var.vpc_cidr, 0))
    error_message = "The vpc_cidr must be an IPv4 CIDR such as 10.40.0.0/20."
  }
}

variable "kubernetes_version" {
  type        = string
  description = "Kubernetes minor version of the control plane (one of the cloud's catalog versions)."
  default     = "1.31"
  validation {
    condition     = contains(["1.30", "1.31", "1.32"], var.kubernetes_version)
    error_message = "The kubernetes_version must be one of 1.30, 1.31, 1.32."
  }
}

variable "ha_control_plane" {
  type        = bool
  description = "A highly available control plane (billed by the cloud; the single one is free)."
  default     = false
}

variable "admin_cidrs" {
  type        = list(string)
  description = "CIDRs allowed to reach the Kubernetes API; empty = any address."
  default     = []
  validation {
    condition     = length(var.admin_cidrs) <= 20 && alltrue([for c in var.admin_cidrs : can(cidrhost(c, 0))])
    error_message = "The admin_cidrs must be at most 20 valid IPv4 CIDRs such as 203.0.113.0/24."
  }
}

variable "node_instance_type" {
  type        = string
  description = "Droplet size slug of the nodes."
  default     = "s-2vcpu-4gb"
  validation {
    condition     = can(regex("^[a-z0-9-]+$", var.node_instance_type))
    error_message = "The node_instance_type must be a size slug such as s-4vcpu-8gb."
  }
}

variable "node_count" {
  type        = number
  description = "Number of worker nodes the pool starts with."
  default     = 2
  validation {
    condition     = var.node_count >= 1 && var.node_count <= 100 && floor(var.node_count) == var.node_count
    error_message = "The node_count must be a whole number from 1 to 100."
  }
}

variable "min_nodes" {
  type        = number
  description = "Lower bound of the pool's autoscaler."
  default     = 1
  validation {
    condition     = var.min_nodes >= 1 && var.min_nodes <= 100 && floor(var.min_nodes) == var.min_nodes
    error_message = "The min_nodes must be a whole number from 1 to 100."
  }
}

variable "max_nodes" {
  type        = number
  description = "Upper bound of the pool's autoscaler."
  default     = 5
  validation {
    condition     = var.max_nodes >= 1 && var.max_nodes <= 100 && floor(var.max_nodes) == var.max_nodes
    error_message = "The max_nodes must be a whole number from 1 to 100."
  }
}

variable "tags" {
  type        = map(string)
  description = "Tags added to every resource that takes them (labels on GCP, tags on Azure, DigitalOcean and Linode)."
  default     = {}
  validation {
    condition     = length(var.tags) <= 40
    error_message = "At most 40 tags (Strato adds its own)."
  }
}

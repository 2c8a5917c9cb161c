variable "cluster_name" {
  type        = string
  description = "Name of the cluster's cloud resources (Strato sets it)."
  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,38}[a-z0-9]$", var.cluster_name))
    error_message = "The cluster_name must be 2-40 lowercase letters, digits or '-', starting with a letter."
  }
}

variable "resource_group_name" {
  type        = string
  description = "Resource group of the cluster (output of azure-network)."
  validation {
    condition     = length(var.resource_group_name) > 0
    error_message = "The resource_group_name must not be empty."
  }
}

variable "node_subnet_id" {
  type        = string
  description = "Subnet of the nodes (output of azure-network)."
  validation {
    condition     = can(regex("^/subscriptions/.+/subnets/.+$", var.node_subnet_id))
    error_message = "The node_subnet_id must be a subnet resource id."
  }
}

variable "kubernetes_version" {
  type        = string
  description = "Kubernetes minor version of the control plane (one of the cloud's catalog versions)."
  default     = "1.30"
  validation {
    condition     = contains(["1.29", "1.30", "1.31"], var.kubernetes_version)
    error_message = "The kubernetes_version must be one of 1.29, 1.30, 1.31."
  }
}

variable "sku_tier" {
  type        = string
  description = "Control-plane tier: Free (no SLA) or Standard (uptime SLA, billed per cluster hour)."
  default     = "Free"
  validation {
    condition     = contains(["Free", "Standard"], var.sku_tier)
    error_message = "The sku_tier must be Free or Standard."
  }
}

variable "service_cidr" {
  type        = string
  description = "Range for Kubernetes service addresses (outside the VNet)."
  default     = "10.240.0.0/16"
  validation {
    condition     = can(cidrhost(var.service_cidr, 10))
    error_message = "The service_cidr must be an IPv4 CIDR such as 10.240.0.0/16."
  }
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
  description = "Azure VM size of the nodes."
  default     = "Standard_D2s_v5"
  validation {
    condition     = can(regex("^Standard_[A-Za-z0-9_]+$", var.node_instance_type))
    error_message = "The node_instance_type must be a VM size such as Standard_D4s_v5."
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

variable "node_disk_size" {
  type        = number
  description = "Boot disk of each node in GiB."
  default     = 50
  validation {
    condition     = var.node_disk_size >= 30 && var.node_disk_size <= 1000 && floor(var.node_disk_size) == var.node_disk_size
    error_message = "The node_disk_size must be a whole number of GiB from 30 to 1000."
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

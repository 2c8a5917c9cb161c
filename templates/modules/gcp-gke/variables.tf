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
  description = "GCP region of the regional cluster and its node pool."
  validation {
    condition     = can(regex("^[a-z0-9-]{2,40}$", var.region))
    error_message = "The region must be a region id such as the catalog lists (lowercase letters, digits, '-')."
  }
}

variable "network_name" {
  type        = string
  description = "VPC network of the cluster (output of gcp-network)."
  validation {
    condition     = length(var.network_name) > 0
    error_message = "The network_name must not be empty."
  }
}

variable "subnetwork_name" {
  type        = string
  description = "Subnet of the nodes (output of gcp-network)."
  validation {
    condition     = length(var.subnetwork_name) > 0
    error_message = "The subnetwork_name must not be empty."
  }
}

variable "pods_range_name" {
  type        = string
  description = "Secondary range of the subnet for pods (output of gcp-network)."
  validation {
    condition     = length(var.pods_range_name) > 0
    error_message = "The pods_range_name must not be empty."
  }
}

variable "services_range_name" {
  type        = string
  description = "Secondary range of the subnet for services (output of gcp-network)."
  validation {
    condition     = length(var.services_range_name) > 0
    error_message = "The services_range_name must not be empty."
  }
}

variable "control_plane_cidr" {
  type        = string
  description = "The /28 of the control plane's private endpoint (output of gcp-network)."
  validation {
    condition     = can(cidrhost(var.control_plane_cidr, 0))
    error_message = "The control_plane_cidr must be an IPv4 CIDR."
  }
}

variable "node_network_tag" {
  type        = string
  description = "Network tag of the nodes that firewall rules target (output of gcp-network)."
  validation {
    condition     = length(var.node_network_tag) > 0
    error_message = "The node_network_tag must not be empty."
  }
}

variable "private_nodes" {
  type        = bool
  description = "Nodes without public addresses (output of gcp-network: true when it made Cloud NAT)."
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
  description = "Compute Engine machine type of the nodes."
  default     = "e2-standard-2"
  validation {
    condition     = can(regex("^[a-z0-9]+-[a-z0-9-]+$", var.node_instance_type))
    error_message = "The node_instance_type must be a machine type such as e2-standard-4."
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

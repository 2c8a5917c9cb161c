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
  description = "GCP region of the subnet, router and NAT."
  validation {
    condition     = can(regex("^[a-z0-9-]{2,40}$", var.region))
    error_message = "The region must be a region id such as the catalog lists (lowercase letters, digits, '-')."
  }
}

variable "subnet_cidr" {
  type        = string
  description = "Primary range of the nodes' subnet."
  default     = "10.10.0.0/20"
  validation {
    condition     = can(cidrhost(var.subnet_cidr, 0))
    error_message = "The subnet_cidr must be an IPv4 CIDR such as 10.10.0.0/20."
  }
}

variable "pods_cidr" {
  type        = string
  description = "Secondary range for pod addresses."
  default     = "10.20.0.0/14"
  validation {
    condition     = can(cidrhost(var.pods_cidr, 0))
    error_message = "The pods_cidr must be an IPv4 CIDR such as 10.20.0.0/14."
  }
}

variable "services_cidr" {
  type        = string
  description = "Secondary range for service addresses."
  default     = "10.24.0.0/20"
  validation {
    condition     = can(cidrhost(var.services_cidr, 0))
    error_message = "The services_cidr must be an IPv4 CIDR such as 10.24.0.0/20."
  }
}

variable "control_plane_cidr" {
  type        = string
  description = "A /28 for the GKE control plane's private endpoint (outside the other ranges)."
  default     = "172.16.0.0/28"
  validation {
    condition     = can(cidrhost(var.control_plane_cidr, 0)) && endswith(var.control_plane_cidr, "/28")
    error_message = "The control_plane_cidr must be an IPv4 /28 such as 172.16.0.0/28."
  }
}

variable "nat_gateway" {
  type        = bool
  description = "Cloud NAT for the region, so nodes run without public addresses (NAT is billed hourly and per GiB)."
  default     = false
}

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
  description = "Azure region (location) of the resource group and its resources."
  validation {
    condition     = can(regex("^[a-z0-9]{2,40}$", var.region))
    error_message = "The region must be an Azure location name such as westeurope."
  }
}

variable "vnet_cidr" {
  type        = string
  description = "Address space of the VNet (the nodes' subnet is its first /20)."
  default     = "10.30.0.0/16"
  validation {
    condition     = can(cidrhost(var.vnet_cidr, 0)) && tonumber(split("/", var.vnet_cidr)[1]) <= 20
    error_message = "The vnet_cidr must be an IPv4 CIDR of /20 or larger such as 10.30.0.0/16."
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

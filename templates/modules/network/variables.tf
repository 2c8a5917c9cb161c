variable "cluster_name" {
  type        = string
  description = "Name of the cluster; prefixes every resource name and the Name tags."
  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,38}[a-z0-9]$", var.cluster_name))
    error_message = "The cluster_name must be 2-40 lowercase letters, digits or '-', starting with a letter."
  }
}

variable "vpc_cidr" {
  type        = string
  description = "IPv4 CIDR of the VPC (a /16 in 10.0.0.0/8); subnets are carved out of it as /20s."
  default     = "10.0.0.0/16"
  validation {
    condition     = can(cidrhost(var.vpc_cidr, 0)) && can(regex("^10\\.[0-9]{1,3}\\.0\\.0/16$", var.vpc_cidr))
    error_message = "The vpc_cidr must be a /16 inside 10.0.0.0/8, e.g. 10.0.0.0/16."
  }
}

variable "az_count" {
  type        = number
  description = "How many availability zones to spread the subnets over (one public and one private subnet each)."
  default     = 2
  validation {
    condition     = var.az_count >= 2 && var.az_count <= 3 && floor(var.az_count) == var.az_count
    error_message = "The az_count must be 2 or 3 (EKS needs subnets in at least two zones)."
  }
}

variable "nat_gateway" {
  type        = bool
  description = "Create one NAT gateway (in the first public subnet) so private subnets reach the internet. Costs money per hour."
  default     = false
}

variable "admin_cidrs" {
  type        = list(string)
  description = "CIDRs allowed to reach the cluster API on 443 through the cluster security group."
  default     = []
  validation {
    condition     = length(var.admin_cidrs) <= 20 && alltrue([for c in var.admin_cidrs : can(cidrhost(c, 0))])
    error_message = "The admin_cidrs must be at most 20 valid IPv4 CIDRs such as 203.0.113.0/24."
  }
}

variable "tags" {
  type        = map(string)
  description = "Tags added to every resource."
  default     = {}
  validation {
    condition     = length(var.tags) <= 40
    error_message = "At most 40 tags (AWS allows 50 per resource and Strato adds its own)."
  }
}

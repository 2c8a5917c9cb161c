variable "cluster_name" {
  type        = string
  description = "Name of the EKS cluster."
  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,38}[a-z0-9]$", var.cluster_name))
    error_message = "The cluster_name must be 2-40 lowercase letters, digits or '-', starting with a letter."
  }
}

variable "kubernetes_version" {
  type        = string
  description = "EKS Kubernetes version."
  default     = "1.30"
  validation {
    condition     = contains(["1.29", "1.30", "1.31"], var.kubernetes_version)
    error_message = "The kubernetes_version must be one of 1.29, 1.30, 1.31."
  }
}

variable "vpc_id" {
  type        = string
  description = "VPC of the cluster (output of the network module)."
  validation {
    condition     = can(regex("^vpc-[0-9a-z]+$", var.vpc_id))
    error_message = "The vpc_id must look like vpc-0123abcd."
  }
}

variable "private_subnet_ids" {
  type        = list(string)
  description = "Private subnets for the control plane's network interfaces (output of the network module)."
  validation {
    condition     = length(var.private_subnet_ids) >= 2
    error_message = "EKS needs subnets in at least two availability zones."
  }
}

variable "public_subnet_ids" {
  type        = list(string)
  description = "Public subnets, also given to the control plane so public load balancers can be placed."
  default     = []
}

variable "node_subnet_ids" {
  type        = list(string)
  description = "Subnets for the worker nodes (output of the network module)."
  validation {
    condition     = length(var.node_subnet_ids) >= 1
    error_message = "The node group needs at least one subnet."
  }
}

variable "cluster_security_group_id" {
  type        = string
  description = "Additional security group for the control plane (output of the network module)."
  validation {
    condition     = can(regex("^sg-[0-9a-z]+$", var.cluster_security_group_id))
    error_message = "The cluster_security_group_id must look like sg-0123abcd."
  }
}

variable "endpoint_public_access" {
  type        = bool
  description = "Expose the Kubernetes API endpoint publicly (restricted to public_access_cidrs)."
  default     = true
}

variable "public_access_cidrs" {
  type        = list(string)
  description = "CIDRs that may reach the public API endpoint."
  default     = ["0.0.0.0/0"]
  validation {
    condition     = length(var.public_access_cidrs) >= 1 && alltrue([for c in var.public_access_cidrs : can(cidrhost(c, 0))])
    error_message = "The public_access_cidrs must be one or more valid IPv4 CIDRs."
  }
}

variable "node_instance_type" {
  type        = string
  description = "EC2 instance type of the worker nodes."
  default     = "t3.medium"
  validation {
    condition     = can(regex("^[a-z][a-z0-9]*\\.[a-z0-9]+$", var.node_instance_type))
    error_message = "The node_instance_type must be an EC2 instance type such as t3.medium."
  }
}

variable "node_count" {
  type        = number
  description = "Desired number of worker nodes."
  default     = 2
  validation {
    condition     = var.node_count >= 1 && var.node_count <= 100 && floor(var.node_count) == var.node_count
    error_message = "The node_count must be a whole number from 1 to 100."
  }
}

variable "min_nodes" {
  type        = number
  description = "Lower bound of the node group's scaling config."
  default     = 1
  validation {
    condition     = var.min_nodes >= 1 && var.min_nodes <= 100 && floor(var.min_nodes) == var.min_nodes
    error_message = "The min_nodes must be a whole number from 1 to 100."
  }
}

variable "max_nodes" {
  type        = number
  description = "Upper bound of the node group's scaling config."
  default     = 5
  validation {
    condition     = var.max_nodes >= 1 && var.max_nodes <= 100 && floor(var.max_nodes) == var.max_nodes
    error_message = "The max_nodes must be a whole number from 1 to 100."
  }
}

variable "node_disk_size" {
  type        = number
  description = "Root volume of each node in GiB (gp3 via the EKS default launch template)."
  default     = 20
  validation {
    condition     = var.node_disk_size >= 20 && var.node_disk_size <= 1000 && floor(var.node_disk_size) == var.node_disk_size
    error_message = "The node_disk_size must be a whole number of GiB from 20 to 1000."
  }
}

variable "capacity_type" {
  type        = string
  description = "ON_DEMAND or SPOT capacity for the node group."
  default     = "ON_DEMAND"
  validation {
    condition     = contains(["ON_DEMAND", "SPOT"], var.capacity_type)
    error_message = "The capacity_type must be ON_DEMAND or SPOT."
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

variable "permissions_boundary" {
  type        = string
  description = "Permissions boundary (policy ARN) of the IAM roles this module creates; \"\" for none. Strato sets it: in its platform account roles are refused without the deployment's boundary."
  default     = ""
  validation {
    condition     = var.permissions_boundary == "" || can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:policy/.+$", var.permissions_boundary))
    error_message = "The permissions_boundary must be \"\" or an IAM policy ARN (arn:aws:iam::<account>:policy/<name>)."
  }
}

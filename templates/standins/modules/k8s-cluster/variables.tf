variable "cluster_name" {
  type        = string
  description = "Name of the cluster (Strato's managed name)"
}

variable "region" {
  type        = string
  description = "The cloud's region"
}

variable "kubernetes_version" {
  type        = string
  description = "Kubernetes version of the control plane"
}

variable "node_instance_type" {
  type        = string
  description = "The cloud's machine type of the nodes"
}

variable "node_count" {
  type        = number
  description = "Number of nodes"
}

variable "tags" {
  type        = map(string)
  description = "Labels or tags of every resource"
  default     = {}
}

# AKS-shaped requests (azure-aks-standin) carry these; the templates validate them, the null resources do
# not play a control plane tier or an autoscaler.
variable "sku_tier" {
  type        = string
  description = "Control plane tier (AKS Free or Standard)"
  default     = null
}

variable "min_nodes" {
  type        = number
  description = "Lower bound of the node pool's autoscaler"
  default     = null
}

variable "max_nodes" {
  type        = number
  description = "Upper bound of the node pool's autoscaler"
  default     = null
}

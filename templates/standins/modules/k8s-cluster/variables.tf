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

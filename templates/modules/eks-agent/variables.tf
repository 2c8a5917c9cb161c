variable "cluster_arn" {
  type        = string
  description = "ARN of the EKS cluster (output of the k8s module)."
  validation {
    condition     = can(regex("^arn:aws[a-z-]*:eks:[a-z0-9-]+:[0-9]{12}:cluster/[A-Za-z0-9][A-Za-z0-9_-]*$", var.cluster_arn))
    error_message = "The cluster_arn must be an EKS cluster ARN (arn:aws:eks:<region>:<account>:cluster/<name>)."
  }
}

variable "agent_token" {
  type        = string
  description = "The cluster agent's one-time registration token (set by Strato; the runner installs the agent with its own copy)."
  sensitive   = true
  validation {
    condition     = length(var.agent_token) >= 16
    error_message = "The agent_token must be the registration token Strato sets (at least 16 characters)."
  }
}

variable "control_plane_url" {
  type        = string
  description = "The control plane's URL the cluster agent reports to (set by Strato)."
  validation {
    condition     = can(regex("^https?://[^\\s/]+", var.control_plane_url))
    error_message = "The control_plane_url must be an http(s) URL."
  }
}

# The runner installs the cluster agent itself (`[agent] install = "runner"`): it signs an EKS token for the
# cluster this module names and applies the agent's manifests with the registration token and control plane
# URL it was given. Nothing here is created; the module turns the k8s module's ARN into the name EKS knows
# the cluster by, so the token is signed for the cluster that exists rather than for the requested name.
locals {
  eks_cluster_name = element(split("/", var.cluster_arn), 1)
}

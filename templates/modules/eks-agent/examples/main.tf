# Example: the name the runner signs its EKS token for, from the k8s module's cluster ARN.
module "eks-agent" {
  source            = "../"
  cluster_arn       = "arn:aws:eks:us-east-1:123456789012:cluster/demo"
  agent_token       = "an-example-registration-token"
  control_plane_url = "https://api.strato.example"
}

output "eks_cluster_name" {
  value = module.eks-agent.eks_cluster_name
}

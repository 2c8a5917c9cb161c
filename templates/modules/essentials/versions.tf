# The helm provider cannot be installed on the offline test bed (only hashicorp/aws 3.39.0 is mirrored), so
# this module is parsed and schema-checked offline but never initialised or applied there. It is kept out of
# aws-eks-basic; aws-eks-advanced runs it as its own stage and is marked verified_offline = false.
terraform {
  required_version = ">= 0.15"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 3.39.0"
    }
    helm = {
      source  = "hashicorp/helm"
      version = ">= 2.4.0, < 3.0.0"
    }
  }
}

# The cluster comes from an earlier stage, so the provider can be configured from its outputs here: a
# provider cannot be configured from a cluster created in the same apply.
data "aws_eks_cluster_auth" "this" {
  name = var.cluster_name
}

provider "helm" {
  kubernetes {
    host                   = var.cluster_endpoint
    cluster_ca_certificate = base64decode(var.cluster_ca_certificate)
    token                  = data.aws_eks_cluster_auth.this.token
  }
}

locals {
  tags = merge(var.tags, { "strato.dev/cluster" = var.cluster_name })
  # Where Strato's engine session requires it (its platform account), every role carries the boundary.
  permissions_boundary = var.permissions_boundary == "" ? null : var.permissions_boundary
}

data "aws_iam_policy_document" "cluster_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["eks.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "cluster" {
  name                 = "${var.cluster_name}-eks-cluster"
  assume_role_policy   = data.aws_iam_policy_document.cluster_assume.json
  permissions_boundary = local.permissions_boundary
  tags                 = local.tags
}

resource "aws_iam_role_policy_attachment" "cluster" {
  for_each   = toset(["AmazonEKSClusterPolicy", "AmazonEKSVPCResourceController"])
  role       = aws_iam_role.cluster.name
  policy_arn = "arn:aws:iam::aws:policy/${each.value}"
}

resource "aws_eks_cluster" "this" {
  name     = var.cluster_name
  version  = var.kubernetes_version
  role_arn = aws_iam_role.cluster.arn

  vpc_config {
    subnet_ids              = concat(var.private_subnet_ids, var.public_subnet_ids)
    security_group_ids      = [var.cluster_security_group_id]
    endpoint_private_access = true
    endpoint_public_access  = var.endpoint_public_access
    public_access_cidrs     = var.public_access_cidrs
  }

  tags = local.tags

  # The cluster must not be created before its role can act, nor the role's policies removed before the
  # cluster is gone (EKS then cannot clean up its network interfaces).
  depends_on = [aws_iam_role_policy_attachment.cluster]
}

data "aws_iam_policy_document" "node_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ec2.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "node" {
  name                 = "${var.cluster_name}-eks-node"
  assume_role_policy   = data.aws_iam_policy_document.node_assume.json
  permissions_boundary = local.permissions_boundary
  tags                 = local.tags
}

resource "aws_iam_role_policy_attachment" "node" {
  for_each   = toset(["AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonEC2ContainerRegistryReadOnly"])
  role       = aws_iam_role.node.name
  policy_arn = "arn:aws:iam::aws:policy/${each.value}"
}

resource "aws_eks_node_group" "default" {
  cluster_name    = aws_eks_cluster.this.name
  node_group_name = "${var.cluster_name}-default"
  node_role_arn   = aws_iam_role.node.arn
  subnet_ids      = var.node_subnet_ids
  instance_types  = [var.node_instance_type]
  capacity_type   = var.capacity_type
  disk_size       = var.node_disk_size

  scaling_config {
    desired_size = var.node_count
    min_size     = var.min_nodes
    max_size     = var.max_nodes
  }

  update_config {
    max_unavailable = 1
  }

  tags = local.tags

  lifecycle {
    # This module never configures SSH access (no remote_access block), so the attribute is not ours to
    # manage. Ignored because the emulator (moto) reports remote_access { ec2_ssh_key = "eksKeypair" } for
    # every node group, which would force a replacement on every plan. Only this attribute is ignored:
    # drift in scaling, instance types, labels, tags or subnets still shows up in a plan.
    ignore_changes = [remote_access]
  }

  depends_on = [aws_iam_role_policy_attachment.node]
}

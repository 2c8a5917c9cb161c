# A managed Kubernetes cluster played by null resources: a control plane and one resource per node. A new
# node count adds or removes nodes in place; a new region, version or node size replaces what a cloud would.

resource "null_resource" "control_plane" {
  triggers = {
    name               = var.cluster_name
    region             = var.region
    kubernetes_version = var.kubernetes_version
    tags               = jsonencode(var.tags)
  }
}

resource "null_resource" "node" {
  count = var.node_count

  triggers = {
    control_plane = null_resource.control_plane.id
    size          = var.node_instance_type
    index         = count.index
  }
}

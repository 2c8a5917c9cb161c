# A VPC of its own and a DOKS cluster in it with one autoscaling node pool. DigitalOcean tags are plain
# strings (letters, digits, ':', '-', '_'), so each Strato tag becomes "key:value". The control plane is
# free; the highly available one is billed per cluster.

locals {
  tags = [
    for k, v in merge(var.tags, { "strato-cluster" = var.cluster_name }) :
    substr(replace("${k}:${v}", "/[^a-zA-Z0-9:_-]/", "-"), 0, 255)
  ]
}

# DOKS takes a version slug ("1.31.1-do.5"): the newest patch DigitalOcean offers of the chosen minor.
data "digitalocean_kubernetes_versions" "this" {
  version_prefix = "${var.kubernetes_version}."
}

resource "digitalocean_vpc" "this" {
  name        = var.cluster_name
  region      = var.region
  ip_range    = var.vpc_cidr
  description = "Network of Strato cluster ${var.cluster_name}"
}

resource "digitalocean_kubernetes_cluster" "this" {
  name          = var.cluster_name
  region        = var.region
  version       = data.digitalocean_kubernetes_versions.this.latest_version
  vpc_uuid      = digitalocean_vpc.this.id
  ha            = var.ha_control_plane
  surge_upgrade = true
  # Upgrades follow the template's version, not DigitalOcean's schedule.
  auto_upgrade = false
  tags         = local.tags

  node_pool {
    name       = "${var.cluster_name}-nodes"
    size       = var.node_instance_type
    auto_scale = true
    node_count = var.node_count
    min_nodes  = var.min_nodes
    max_nodes  = var.max_nodes
    tags       = local.tags
    labels     = { "strato.dev/cluster" = var.cluster_name }
  }

  maintenance_policy {
    day        = "sunday"
    start_time = "04:00"
  }

  dynamic "control_plane_firewall" {
    for_each = length(var.admin_cidrs) > 0 ? [1] : []
    content {
      enabled           = true
      allowed_addresses = var.admin_cidrs
    }
  }

  # The autoscaler moves the pool's size; a plan must not move it back.
  lifecycle {
    ignore_changes = [node_pool[0].node_count]
  }
}

# An LKE cluster with one autoscaling pool and a Cloud Firewall on its nodes. The control plane is free; the
# highly available one is billed per cluster. Linode tags are plain strings (at most 50 characters), so each
# Strato tag becomes "key:value".

locals {
  tags = [
    for k, v in merge(var.tags, { "strato-cluster" = var.cluster_name }) :
    substr("${k}:${v}", 0, 50)
  ]
  # LKE's node-to-node and control-plane traffic comes from this range (Linode's LKE firewall guidance).
  lke_private = "192.168.128.0/17"
}

resource "linode_lke_cluster" "this" {
  label       = var.cluster_name
  region      = var.region
  k8s_version = var.kubernetes_version
  tags        = local.tags

  control_plane {
    high_availability = var.ha_control_plane

    acl {
      enabled = length(var.admin_cidrs) > 0
      addresses {
        ipv4 = var.admin_cidrs
      }
    }
  }

  pool {
    type        = var.node_instance_type
    count       = var.node_count
    tags        = local.tags
    firewall_id = linode_firewall.nodes.id

    autoscaler {
      min = var.min_nodes
      max = var.max_nodes
    }
  }

  # The autoscaler moves the pool's size; a plan must not move it back.
  lifecycle {
    ignore_changes = [pool[0].count]
  }
}

# The pool attaches it to every node it creates (firewall_id), so nodes the autoscaler adds get it too.
# Inbound: what LKE needs between nodes and from its control plane, and NodePorts (load balancers reach
# services through them); everything else inbound is dropped. Outbound is open (image pulls, the API).
resource "linode_firewall" "nodes" {
  label           = substr("${var.cluster_name}-nodes", 0, 32)
  inbound_policy  = "DROP"
  outbound_policy = "ACCEPT"
  tags            = local.tags

  inbound {
    label    = "kubelet"
    action   = "ACCEPT"
    protocol = "TCP"
    ports    = "10250"
    ipv4     = [local.lke_private]
  }

  inbound {
    label    = "wireguard"
    action   = "ACCEPT"
    protocol = "UDP"
    ports    = "51820"
    ipv4     = [local.lke_private]
  }

  inbound {
    label    = "calico-bgp"
    action   = "ACCEPT"
    protocol = "TCP"
    ports    = "179"
    ipv4     = [local.lke_private]
  }

  inbound {
    label    = "nodeports-tcp"
    action   = "ACCEPT"
    protocol = "TCP"
    ports    = "30000-32767"
    ipv4     = ["0.0.0.0/0"]
  }

  inbound {
    label    = "nodeports-udp"
    action   = "ACCEPT"
    protocol = "UDP"
    ports    = "30000-32767"
    ipv4     = ["0.0.0.0/0"]
  }
}

# A custom-mode VPC with one regional subnet for the nodes and two secondary ranges (pods, services) for a
# VPC-native GKE cluster, firewall rules for what GKE needs inside the network, and, when asked, Cloud NAT
# so nodes without public addresses still reach the internet. GCP networks, subnets and firewall rules take
# no labels: the cluster and its nodes carry them (gcp-gke).

resource "google_compute_network" "this" {
  name                    = var.cluster_name
  description             = "Network of Strato cluster ${var.cluster_name}"
  auto_create_subnetworks = false
  routing_mode            = "REGIONAL"
}

resource "google_compute_subnetwork" "nodes" {
  name                     = "${var.cluster_name}-nodes"
  network                  = google_compute_network.this.id
  region                   = var.region
  ip_cidr_range            = var.subnet_cidr
  private_ip_google_access = true

  secondary_ip_range {
    range_name    = "pods"
    ip_cidr_range = var.pods_cidr
  }

  secondary_ip_range {
    range_name    = "services"
    ip_cidr_range = var.services_cidr
  }
}

# Nodes, pods and services talk to each other on any port (what the default network's allow-internal rule
# gives; a custom network starts with none).
resource "google_compute_firewall" "internal" {
  name          = "${var.cluster_name}-internal"
  network       = google_compute_network.this.name
  description   = "Traffic between nodes, pods and services of ${var.cluster_name}"
  direction     = "INGRESS"
  source_ranges = [var.subnet_cidr, var.pods_cidr, var.services_cidr]

  allow {
    protocol = "tcp"
  }
  allow {
    protocol = "udp"
  }
  allow {
    protocol = "icmp"
  }
}

# The control plane reaches the nodes' kubelets and webhooks (private clusters need it stated).
resource "google_compute_firewall" "control_plane" {
  name          = "${var.cluster_name}-control-plane"
  network       = google_compute_network.this.name
  description   = "GKE control plane of ${var.cluster_name} to its nodes"
  direction     = "INGRESS"
  source_ranges = [var.control_plane_cidr]
  target_tags   = [local.node_tag]

  allow {
    protocol = "tcp"
    ports    = ["443", "8443", "10250"]
  }
}

locals {
  # The network tag the node pool's instances carry; firewall rules target it.
  node_tag = "strato-${var.cluster_name}"
}

resource "google_compute_router" "this" {
  count   = var.nat_gateway ? 1 : 0
  name    = var.cluster_name
  network = google_compute_network.this.id
  region  = var.region
}

resource "google_compute_router_nat" "this" {
  count                              = var.nat_gateway ? 1 : 0
  name                               = var.cluster_name
  router                             = google_compute_router.this[0].name
  region                             = var.region
  nat_ip_allocate_option             = "AUTO_ONLY"
  source_subnetwork_ip_ranges_to_nat = "ALL_SUBNETWORKS_ALL_IP_RANGES"
}

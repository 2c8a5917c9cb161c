# A regional GKE cluster (the control plane is replicated across the region's zones) whose default node
# pool is removed at once, and one separately managed node pool, so the pool can change (size, machine type)
# without replacing the cluster. Nodes run as their own service account with the least roles GKE documents
# for nodes, not as the project's default compute account (which has Editor).

data "google_client_config" "current" {}

data "google_compute_zones" "available" {
  region = var.region
  status = "UP"
}

locals {
  project = data.google_client_config.current.project
  # GCP label keys and values: lowercase letters, digits, '_' and '-' (no '.', '/' or ':').
  labels = merge(
    { for k, v in var.tags : substr(lower(replace(k, "/[^a-zA-Z0-9_-]/", "_")), 0, 63) => substr(lower(replace(v, "/[^a-zA-Z0-9_-]/", "_")), 0, 63) },
    { "strato-cluster" = var.cluster_name }
  )
  # Service account ids are 6-30 characters ending in a letter or digit.
  account_id = "${trimsuffix(substr(var.cluster_name, 0, 23), "-")}-nodes"
}

resource "google_service_account" "nodes" {
  account_id   = local.account_id
  display_name = "Nodes of Strato cluster ${var.cluster_name}"
  description  = "Node service account of GKE cluster ${var.cluster_name}: logging, monitoring, image pulls"
}

# roles/container.defaultNodeServiceAccount is GKE's documented minimum for node service accounts (logs,
# metrics, metadata); artifactregistry.reader lets nodes pull the project's private images.
resource "google_project_iam_member" "nodes" {
  for_each = toset(["roles/container.defaultNodeServiceAccount", "roles/artifactregistry.reader"])
  project  = local.project
  role     = each.value
  member   = "serviceAccount:${google_service_account.nodes.email}"
}

resource "google_container_cluster" "this" {
  name                     = var.cluster_name
  location                 = var.region
  network                  = var.network_name
  subnetwork               = var.subnetwork_name
  min_master_version       = var.kubernetes_version
  networking_mode          = "VPC_NATIVE"
  remove_default_node_pool = true
  initial_node_count       = 1
  resource_labels          = local.labels
  # Strato deletes clusters through Terraform; the provider's default (true) would make every delete fail.
  deletion_protection = false

  release_channel {
    channel = "REGULAR"
  }

  ip_allocation_policy {
    cluster_secondary_range_name  = var.pods_range_name
    services_secondary_range_name = var.services_range_name
  }

  private_cluster_config {
    enable_private_nodes    = var.private_nodes
    enable_private_endpoint = false
    master_ipv4_cidr_block  = var.control_plane_cidr
  }

  dynamic "master_authorized_networks_config" {
    for_each = length(var.admin_cidrs) > 0 ? [1] : []
    content {
      dynamic "cidr_blocks" {
        for_each = var.admin_cidrs
        content {
          cidr_block   = cidr_blocks.value
          display_name = "admin ${cidr_blocks.key}"
        }
      }
    }
  }

  workload_identity_config {
    workload_pool = "${local.project}.svc.id.goog"
  }

  # The default pool lives only until the cluster exists; it still must not run as the default account.
  node_config {
    service_account = google_service_account.nodes.email
    oauth_scopes    = ["https://www.googleapis.com/auth/cloud-platform"]
  }

  depends_on = [google_project_iam_member.nodes]
}

resource "google_container_node_pool" "nodes" {
  name     = "${var.cluster_name}-nodes"
  cluster  = google_container_cluster.this.id
  location = var.region
  # One zone, so node_count is the number of nodes (a regional pool runs that many in every zone).
  node_locations     = [data.google_compute_zones.available.names[0]]
  initial_node_count = var.node_count

  autoscaling {
    min_node_count = var.min_nodes
    max_node_count = var.max_nodes
  }

  management {
    auto_repair  = true
    auto_upgrade = true
  }

  node_config {
    machine_type    = var.node_instance_type
    disk_size_gb    = var.node_disk_size
    disk_type       = "pd-balanced"
    service_account = google_service_account.nodes.email
    oauth_scopes    = ["https://www.googleapis.com/auth/cloud-platform"]
    labels          = local.labels
    resource_labels = local.labels
    tags            = [var.node_network_tag]

    workload_metadata_config {
      mode = "GKE_METADATA"
    }

    shielded_instance_config {
      enable_secure_boot          = true
      enable_integrity_monitoring = true
    }
  }

  # The autoscaler moves the size; a plan must not move it back.
  lifecycle {
    ignore_changes = [initial_node_count]
  }
}

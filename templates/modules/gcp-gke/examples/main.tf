# Example: the gcp-network and gcp-gke modules wired the way Strato wires a stage (inputs by output name).
provider "google" {
  project = "my-project"
  region  = "europe-west1"
}

module "gcp-network" {
  source       = "../../gcp-network"
  cluster_name = "demo"
  region       = "europe-west1"
}

module "gcp-gke" {
  source              = "../"
  cluster_name        = "demo"
  region              = "europe-west1"
  network_name        = module.gcp-network.network_name
  subnetwork_name     = module.gcp-network.subnetwork_name
  pods_range_name     = module.gcp-network.pods_range_name
  services_range_name = module.gcp-network.services_range_name
  control_plane_cidr  = module.gcp-network.control_plane_cidr
  node_network_tag    = module.gcp-network.node_network_tag
  private_nodes       = module.gcp-network.private_nodes
  node_instance_type  = "e2-standard-4"
  node_count          = 3
}

output "cluster_endpoint" {
  value = module.gcp-gke.cluster_endpoint
}

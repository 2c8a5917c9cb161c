# Example: the gcp-network and gcp-gke modules wired the way Strato wires a stage (inputs by output name).
provider "google" {
  project = "my-project"
  region  = "europe-west1"
}

module "gcp-network" {
  source       = "../"
  cluster_name = "demo"
  region       = "europe-west1"
  nat_gateway  = true
}

output "network_id" {
  value = module.gcp-network.network_id
}

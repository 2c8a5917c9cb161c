# Pinned to the release the schema facts in tests/fixtures/provider-schemas were read from: a newer provider
# may rename arguments, and only that release's schema was checked (no GCP account is reachable here).
terraform {
  required_version = ">= 1.5"
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "7.45.0"
    }
  }
}

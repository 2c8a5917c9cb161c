# Pinned to the release the schema facts in tests/fixtures/provider-schemas were read from: a newer provider
# may rename arguments, and only that release's schema was checked (no Linode account is reachable here).
terraform {
  required_version = ">= 1.5"
  required_providers {
    linode = {
      source  = "linode/linode"
      version = "3.13.0"
    }
  }
}

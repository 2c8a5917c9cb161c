# Pinned to the release the schema facts in tests/fixtures/provider-schemas were read from: a newer provider
# may rename arguments, and only that release's schema was checked (no Azure account is reachable here). The
# generated root configures the provider (features, subscription, OIDC).
terraform {
  required_version = ">= 1.5"
  required_providers {
    azurerm = {
      source  = "hashicorp/azurerm"
      version = "5.2.0"
    }
  }
}

# AKS with a default (system) node pool that autoscales, running as a user-assigned managed identity that
# holds one role: Network Contributor on the nodes' subnet (what AKS needs to join nodes and load balancers
# to a VNet it did not create). Workload identity and the OIDC issuer are on, so pods get Azure tokens
# without stored secrets.

locals {
  tags = merge(
    { for k, v in var.tags : replace(k, "/[<>%&\\\\?/]/", "_") => v },
    { "strato-cluster" = var.cluster_name }
  )
}

data "azurerm_resource_group" "this" {
  name = var.resource_group_name
}

resource "azurerm_user_assigned_identity" "cluster" {
  name                = "${var.cluster_name}-cluster"
  location            = data.azurerm_resource_group.this.location
  resource_group_name = data.azurerm_resource_group.this.name
  tags                = local.tags
}

resource "azurerm_role_assignment" "subnet" {
  scope                = var.node_subnet_id
  role_definition_name = "Network Contributor"
  principal_id         = azurerm_user_assigned_identity.cluster.principal_id
}

resource "azurerm_kubernetes_cluster" "this" {
  name                      = var.cluster_name
  location                  = data.azurerm_resource_group.this.location
  resource_group_name       = data.azurerm_resource_group.this.name
  dns_prefix                = var.cluster_name
  kubernetes_version        = var.kubernetes_version
  sku_tier                  = var.sku_tier
  oidc_issuer_enabled       = true
  workload_identity_enabled = true
  tags                      = local.tags

  default_node_pool {
    name                 = "system"
    vm_size              = var.node_instance_type
    vnet_subnet_id       = var.node_subnet_id
    auto_scaling_enabled = true
    node_count           = var.node_count
    min_count            = var.min_nodes
    max_count            = var.max_nodes
    os_disk_size_gb      = var.node_disk_size
    tags                 = local.tags

    upgrade_settings {
      max_surge = "10%"
    }
  }

  # Required by azurerm 5.x. Manual: nodes come from the pool above only (Auto would be node autoprovisioning,
  # which provisions VM sizes outside the catalog and prices).
  node_provisioning_profile {
    mode = "Manual"
  }

  identity {
    type         = "UserAssigned"
    identity_ids = [azurerm_user_assigned_identity.cluster.id]
  }

  network_profile {
    network_plugin    = "azure"
    network_policy    = "azure"
    load_balancer_sku = "standard"
    service_cidr      = var.service_cidr
    dns_service_ip    = cidrhost(var.service_cidr, 10)
  }

  dynamic "api_server_access_profile" {
    for_each = length(var.admin_cidrs) > 0 ? [1] : []
    content {
      authorized_ip_ranges = var.admin_cidrs
    }
  }

  # The autoscaler moves the pool's size; a plan must not move it back.
  lifecycle {
    ignore_changes = [default_node_pool[0].node_count]
  }

  depends_on = [azurerm_role_assignment.subnet]
}

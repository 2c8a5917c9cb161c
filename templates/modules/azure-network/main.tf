# The cluster's resource group (everything Strato creates for it lives there, so a delete leaves nothing),
# a VNet with one subnet for the nodes, and a network security group on that subnet. AKS puts its own
# managed resources (load balancer, node NICs) in a second, AKS-managed resource group.

locals {
  # Azure tag names may not contain < > % & \ ? /; values are free text up to 256 characters.
  tags = merge(
    { for k, v in var.tags : replace(k, "/[<>%&\\\\?/]/", "_") => v },
    { "strato-cluster" = var.cluster_name }
  )
}

resource "azurerm_resource_group" "this" {
  name     = "${var.cluster_name}-rg"
  location = var.region
  tags     = local.tags
}

resource "azurerm_virtual_network" "this" {
  name                = var.cluster_name
  location            = azurerm_resource_group.this.location
  resource_group_name = azurerm_resource_group.this.name
  address_space       = [var.vnet_cidr]
  tags                = local.tags
}

resource "azurerm_subnet" "nodes" {
  name                 = "${var.cluster_name}-nodes"
  resource_group_name  = azurerm_resource_group.this.name
  virtual_network_name = azurerm_virtual_network.this.name
  # The first /20 of the VNet: room for 4096 node and pod addresses (Azure CNI gives pods VNet addresses).
  address_prefixes = [cidrsubnet(var.vnet_cidr, 4, 0)]
}

# Azure's default rules already allow traffic inside the VNet and from its load balancer and deny the rest
# inbound; this rule adds the one thing a cluster's public load balancers need: HTTP(S) from the internet.
resource "azurerm_network_security_group" "nodes" {
  name                = "${var.cluster_name}-nodes"
  location            = azurerm_resource_group.this.location
  resource_group_name = azurerm_resource_group.this.name
  tags                = local.tags

  security_rule {
    name                       = "allow-http-https-in"
    priority                   = 100
    direction                  = "Inbound"
    access                     = "Allow"
    protocol                   = "Tcp"
    source_port_range          = "*"
    destination_port_ranges    = ["80", "443"]
    source_address_prefix      = "Internet"
    destination_address_prefix = "*"
  }
}

resource "azurerm_subnet_network_security_group_association" "nodes" {
  subnet_id                 = azurerm_subnet.nodes.id
  network_security_group_id = azurerm_network_security_group.nodes.id
}

output "vpc_id" {
  description = "ID of the VPC."
  value       = aws_vpc.this.id
}

output "vpc_cidr_block" {
  description = "CIDR of the VPC."
  value       = aws_vpc.this.cidr_block
}

output "public_subnet_ids" {
  description = "Public subnets, one per zone (load balancers)."
  value       = aws_subnet.public[*].id
}

output "private_subnet_ids" {
  description = "Private subnets, one per zone (nodes)."
  value       = aws_subnet.private[*].id
}

output "node_subnet_ids" {
  description = "Where worker nodes go: the private subnets when a NAT gateway gives them a way out, else the public ones (nodes must reach the registry and the EKS API)."
  value       = var.nat_gateway ? aws_subnet.private[*].id : aws_subnet.public[*].id
}

output "availability_zones" {
  description = "Zones the subnets are in."
  value       = local.azs
}

output "cluster_security_group_id" {
  description = "Security group for the EKS control plane."
  value       = aws_security_group.cluster.id
}

output "nat_gateway_ids" {
  description = "NAT gateways (empty when nat_gateway = false)."
  value       = aws_nat_gateway.this[*].id
}

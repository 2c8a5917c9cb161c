//! the Fargate task: runs Terraform/OpenTofu for one operation and reports to the control plane (under construction).

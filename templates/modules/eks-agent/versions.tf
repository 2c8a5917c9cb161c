# No provider: this module only derives values from the k8s module's outputs and checks its inputs.
terraform {
  required_version = ">= 0.15"
}

# Strato's data key: customer-managed, rotated yearly. The state and artifacts buckets' default encryption, and
# the key-encryption key of sealed values in DynamoDB (sensitive variables, tenants' issued external ids:
# AES-256-GCM under a data key from GenerateDataKey, strato_domain::sealed). The code names it by its alias
# (Names::kms_alias). Default key policy: the account's IAM policies (functions, runner) decide who uses it.
resource "aws_kms_key" "data" {
  description             = "${var.prefix} data key (state, artifacts, sealed values)"
  enable_key_rotation     = true
  deletion_window_in_days = var.kms_deletion_window_days
}

resource "aws_kms_alias" "data" {
  name          = "alias/${var.prefix}-data"
  target_key_id = aws_kms_key.data.key_id
}

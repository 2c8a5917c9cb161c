# Strato's data key: customer-managed, rotated yearly. The state and artifacts buckets' default encryption, and
# the key-encryption key of sealed values in DynamoDB and saved plans (sensitive variables, tenants' issued
# external ids, plans awaiting approval: AES-256-GCM under a data key from GenerateDataKey,
# strato_domain::sealed). The code names it by its alias (Names::kms_alias).
#
# Not the default key policy (which hands every decision to IAM): the account's IAM policies (functions,
# runner) still say who may use the key, but the key itself allows cryptographic use only
# - for sealed values: with the encryption context {tenant, purpose} the code sends on every GenerateDataKey
#   and Decrypt (exactly those two keys, a known purpose, a non-empty tenant), so a wrapped data key opens
#   only under the context it was made for and every use names its tenant in CloudTrail;
# - for bucket encryption: through S3, for the state and artifacts buckets' objects.
# Anything else (a Decrypt without a context, a context of other keys) is refused whatever IAM allows.
data "aws_caller_identity" "current" {}
data "aws_partition" "current" {}

locals {
  account_root = "arn:${data.aws_partition.current.partition}:iam::${data.aws_caller_identity.current.account_id}:root"
  # strato_domain::sealed::PURPOSE_*
  sealed_purposes = ["variables", "external_id", "plan"]
  kms_buckets = [
    for k, b in local.buckets : "arn:${data.aws_partition.current.partition}:s3:::${var.prefix}-${k}" if b.kms
  ]
}

resource "aws_kms_key" "data" {
  description             = "${var.prefix} data key (state, artifacts, sealed values)"
  enable_key_rotation     = true
  deletion_window_in_days = var.kms_deletion_window_days
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        # The account's administrators manage the key (and may change this policy); no cryptographic use.
        Sid       = "KeyAdministration"
        Effect    = "Allow"
        Principal = { AWS = local.account_root }
        Action = [
          "kms:Create*", "kms:Describe*", "kms:Enable*", "kms:List*", "kms:Put*", "kms:Update*",
          "kms:Revoke*", "kms:Disable*", "kms:Get*", "kms:Delete*", "kms:TagResource", "kms:UntagResource",
          "kms:ScheduleKeyDeletion", "kms:CancelKeyDeletion", "kms:RotateKeyOnDemand",
        ]
        Resource = "*"
      },
      {
        # Sealed values: only with the {tenant, purpose} encryption context (IAM decides which principals).
        Sid       = "SealedValuesWithTheirContext"
        Effect    = "Allow"
        Principal = { AWS = local.account_root }
        Action    = ["kms:GenerateDataKey", "kms:Decrypt"]
        Resource  = "*"
        Condition = {
          "ForAllValues:StringEquals" = { "kms:EncryptionContextKeys" = ["tenant", "purpose"] }
          StringEquals                = { "kms:EncryptionContext:purpose" = local.sealed_purposes }
          StringLike                  = { "kms:EncryptionContext:tenant" = "?*" }
        }
      },
      {
        # SSE-KMS of the state and artifacts buckets (bucket keys: the context is the bucket's ARN).
        Sid       = "BucketEncryptionThroughS3"
        Effect    = "Allow"
        Principal = { AWS = local.account_root }
        Action    = ["kms:GenerateDataKey", "kms:Decrypt"]
        Resource  = "*"
        Condition = {
          StringLike = {
            "kms:ViaService"                   = "s3.*.amazonaws.com"
            "kms:EncryptionContext:aws:s3:arn" = flatten([for b in local.kms_buckets : [b, "${b}/*"]])
          }
        }
      },
    ]
  })
}

resource "aws_kms_alias" "data" {
  name          = "alias/${var.prefix}-data"
  target_key_id = aws_kms_key.data.key_id
}

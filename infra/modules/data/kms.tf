data "aws_caller_identity" "current" {}
data "aws_partition" "current" {}
data "aws_region" "current" {}

locals {
  account      = data.aws_caller_identity.current.account_id
  partition    = data.aws_partition.current.partition
  region       = data.aws_region.current.name
  account_root = "arn:${local.partition}:iam::${local.account}:root"
  # strato_domain::sealed::PURPOSE_*, strato_domain::identity::{PURPOSE_RUN_IDENTITY, cloud_tokens::PURPOSE_CLOUD_TOKEN}
  sealed_purposes = ["variables", "external_id", "plan", "run-identity", "cloud-token"]
  kms_buckets = [
    for k, b in local.buckets : "arn:${local.partition}:s3:::${var.prefix}-${k}" if b.kms
  ]
}

# Strato's data key: customer-managed, rotated yearly. The state and artifacts buckets' default encryption,
# the DynamoDB tables' encryption at rest, the log groups' encryption, and the key-encryption key of sealed
# values in DynamoDB and saved plans (sensitive variables, tenants' issued external ids, plans awaiting
# approval: AES-256-GCM under a data key from GenerateDataKey, strato_domain::sealed). The code names it by its
# alias (Names::kms_alias). It carries the deployment's tag (provider default_tags), so the engine session
# cannot touch it.
#
# Not the default key policy (which hands every decision to IAM): the account's IAM policies (functions,
# runner) still say who may use the key, but the key itself allows cryptographic use only
# - for sealed values: with the encryption context {tenant, purpose} the code sends on every GenerateDataKey
#   and Decrypt (exactly those two keys, a known purpose, a non-empty tenant), so a wrapped data key opens
#   only under the context it was made for and every use names its tenant in CloudTrail;
# - for bucket encryption: through S3, for the state and artifacts buckets' objects;
# - for the tables: through DynamoDB, in this account;
# - for the log groups: by CloudWatch Logs, for the deployment's own log groups.
# Anything else (a Decrypt without a context, a context of other keys) is refused whatever IAM allows.
resource "aws_kms_key" "data" {
  description             = "${var.prefix} data key (state, artifacts, tables, logs, sealed values)"
  enable_key_rotation     = true
  deletion_window_in_days = var.kms_deletion_window_days
  policy                  = data.aws_iam_policy_document.data_key.json
}

data "aws_iam_policy_document" "data_key" {
  #checkov:skip=CKV_AWS_109:A key policy's Resource is always the key itself ("*"); administration is the account's, cryptographic use is limited below.
  #checkov:skip=CKV_AWS_111:A key policy's Resource is always the key itself ("*"); administration is the account's, cryptographic use is limited below.
  #checkov:skip=CKV_AWS_356:A key policy's Resource is always the key itself ("*"); every cryptographic statement is limited by an encryption context or kms:ViaService.

  # The account's administrators manage the key (and may change this policy); no cryptographic use.
  statement {
    sid = "KeyAdministration"
    actions = [
      "kms:Create*", "kms:Describe*", "kms:Enable*", "kms:List*", "kms:Put*", "kms:Update*",
      "kms:Revoke*", "kms:Disable*", "kms:Get*", "kms:Delete*", "kms:TagResource", "kms:UntagResource",
      "kms:ScheduleKeyDeletion", "kms:CancelKeyDeletion", "kms:RotateKeyOnDemand",
    ]
    resources = ["*"]
    principals {
      type        = "AWS"
      identifiers = [local.account_root]
    }
  }

  # Sealed values: only with the {tenant, purpose} encryption context (IAM decides which principals).
  statement {
    sid       = "SealedValuesWithTheirContext"
    actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
    resources = ["*"]
    principals {
      type        = "AWS"
      identifiers = [local.account_root]
    }
    condition {
      test     = "ForAllValues:StringEquals"
      variable = "kms:EncryptionContextKeys"
      values   = ["tenant", "purpose"]
    }
    condition {
      test     = "StringEquals"
      variable = "kms:EncryptionContext:purpose"
      values   = local.sealed_purposes
    }
    condition {
      test     = "StringLike"
      variable = "kms:EncryptionContext:tenant"
      values   = ["?*"]
    }
  }

  # SSE-KMS of the state and artifacts buckets (bucket keys: the context is the bucket's ARN).
  statement {
    sid       = "BucketEncryptionThroughS3"
    actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
    resources = ["*"]
    principals {
      type        = "AWS"
      identifiers = [local.account_root]
    }
    condition {
      test     = "StringLike"
      variable = "kms:ViaService"
      values   = ["s3.*.amazonaws.com"]
    }
    condition {
      test     = "StringLike"
      variable = "kms:EncryptionContext:aws:s3:arn"
      values   = flatten([for b in local.kms_buckets : [b, "${b}/*"]])
    }
  }

  # DynamoDB uses the key for the tables' encryption at rest on behalf of whoever may use a table (its IAM
  # policy decides that), through DynamoDB only and only for this account.
  statement {
    sid       = "TablesThroughDynamoDB"
    actions   = ["kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey", "kms:CreateGrant"]
    resources = ["*"]
    principals {
      type        = "AWS"
      identifiers = ["*"]
    }
    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = ["dynamodb.${local.region}.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "kms:CallerAccount"
      values   = [local.account]
    }
  }

  # CloudWatch Logs encrypts the deployment's log groups (theirs only: the encryption context names them).
  statement {
    sid       = "DeploymentLogGroups"
    actions   = ["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"]
    resources = ["*"]
    principals {
      type        = "Service"
      identifiers = ["logs.${local.region}.amazonaws.com"]
    }
    condition {
      test     = "ArnLike"
      variable = "kms:EncryptionContext:aws:logs:arn"
      values   = ["arn:${local.partition}:logs:${local.region}:${local.account}:log-group:*${var.prefix}-*"]
    }
  }
}

resource "aws_kms_alias" "data" {
  name          = "alias/${var.prefix}-data"
  target_key_id = aws_kms_key.data.key_id
}

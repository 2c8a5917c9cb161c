data "aws_caller_identity" "current" {}
data "aws_partition" "current" {}
data "aws_region" "current" {}

locals {
  account   = data.aws_caller_identity.current.account_id
  partition = data.aws_partition.current.partition
  region    = data.aws_region.current.name
}

# Strato's data key: customer-managed, rotated yearly. The state and artifacts buckets' default encryption,
# the DynamoDB tables' encryption at rest, the log groups' encryption, and the key-encryption key of sealed
# values in DynamoDB (sensitive variables, tenants' issued external ids: AES-256-GCM under a data key from
# GenerateDataKey, strato_domain::sealed). The code names it by its alias (Names::kms_alias). It carries the
# deployment's tag (provider default_tags), so the engine session cannot touch it.
resource "aws_kms_key" "data" {
  description             = "${var.prefix} data key (state, artifacts, tables, logs, sealed values)"
  enable_key_rotation     = true
  deletion_window_in_days = var.kms_deletion_window_days
  policy                  = data.aws_iam_policy_document.data_key.json
}

data "aws_iam_policy_document" "data_key" {
  #checkov:skip=CKV_AWS_109:A key policy's Resource is always the key itself ("*"); the account statement is AWS's default key policy, IAM policies decide.
  #checkov:skip=CKV_AWS_111:A key policy's Resource is always the key itself ("*"); the account statement is AWS's default key policy, IAM policies decide.
  #checkov:skip=CKV_AWS_356:A key policy's Resource is always the key itself ("*"); the services' statements are limited by kms:ViaService / the log groups' encryption context.
  # The default key policy: the account's IAM policies (functions, runner) decide who uses it directly.
  statement {
    sid       = "AccountIamPolicies"
    actions   = ["kms:*"]
    resources = ["*"]
    principals {
      type        = "AWS"
      identifiers = ["arn:${local.partition}:iam::${local.account}:root"]
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

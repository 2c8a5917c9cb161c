# Strato's token-signing keys: asymmetric (RSA_2048, SIGN_VERIFY), one per generation in `keys`. The
# dispatcher signs each run's identity tokens (RS256, strato_aws::ports::KmsSigner) with the `signing_key`
# generation; every generation's public half is published in the JWKS, so a new key can be published before it
# signs and an old one stays verifiable until its last token has expired (infra/README.md, rotation).
# Asymmetric KMS keys cannot rotate automatically: a rotation is a new generation.

data "aws_caller_identity" "current" {}
data "aws_partition" "current" {}

locals {
  account_root = "arn:${data.aws_partition.current.partition}:iam::${data.aws_caller_identity.current.account_id}:root"
  # The only principal that may sign: the dispatcher's role, named by the functions module's rule
  # (`{prefix}-{function}`). A condition rather than the role as principal: the key exists before the role.
  signer_role = "arn:${data.aws_partition.current.partition}:iam::${data.aws_caller_identity.current.account_id}:role/${var.prefix}-dispatcher"
}

resource "aws_kms_key" "signing" {
  #checkov:skip=CKV_AWS_7:Asymmetric KMS keys cannot rotate automatically; rotation is a new generation in `keys` (infra/README.md).
  for_each = toset(var.keys)

  description              = "${var.prefix} OIDC token signing key ${each.key} (run identity tokens, RS256)"
  key_usage                = "SIGN_VERIFY"
  customer_master_key_spec = "RSA_2048"
  enable_key_rotation      = false
  deletion_window_in_days  = var.deletion_window_days
  policy                   = data.aws_iam_policy_document.signing_key.json
}

# Not the default key policy: the account administers the key and may read its public half (GetPublicKey is
# in Get*; the api and Terraform read it, IAM decides who), but only the dispatcher's role may sign, and only
# RS256 over a raw message (what KmsSigner sends), whatever IAM policies of the account allow.
data "aws_iam_policy_document" "signing_key" {
  #checkov:skip=CKV_AWS_109:A key policy's Resource is always the key itself ("*"); administration is the account's, signing is limited to the dispatcher below.
  #checkov:skip=CKV_AWS_111:A key policy's Resource is always the key itself ("*"); administration is the account's, signing is limited to the dispatcher below.
  #checkov:skip=CKV_AWS_356:A key policy's Resource is always the key itself ("*"); the signing statement is limited to one role, one algorithm and raw messages.

  statement {
    sid = "KeyAdministration"
    actions = [
      "kms:Create*", "kms:Describe*", "kms:Enable*", "kms:List*", "kms:Put*", "kms:Update*",
      "kms:Revoke*", "kms:Disable*", "kms:Get*", "kms:Delete*", "kms:TagResource", "kms:UntagResource",
      "kms:ScheduleKeyDeletion", "kms:CancelKeyDeletion",
    ]
    resources = ["*"]
    principals {
      type        = "AWS"
      identifiers = [local.account_root]
    }
  }

  statement {
    sid       = "DispatcherSignsRunTokens"
    actions   = ["kms:Sign"]
    resources = ["*"]
    principals {
      type        = "AWS"
      identifiers = [local.account_root]
    }
    condition {
      test     = "ArnEquals"
      variable = "aws:PrincipalArn"
      values   = [local.signer_role]
    }
    condition {
      test     = "StringEquals"
      variable = "kms:SigningAlgorithm"
      values   = ["RSASSA_PKCS1_V1_5_SHA_256"]
    }
    condition {
      test     = "StringEquals"
      variable = "kms:MessageType"
      values   = ["RAW"]
    }
  }
}

# The name the code defaults to (Names::oidc_key_alias); the functions get the key's ARN instead (outputs.tf).
resource "aws_kms_alias" "signing" {
  name = "alias/${var.prefix}-oidc"
  # try(): an unknown name fails the precondition below with its message, not an index error.
  target_key_id = try(aws_kms_key.signing[var.signing_key].key_id, null)

  lifecycle {
    precondition {
      condition     = contains(var.keys, var.signing_key)
      error_message = "signing_key must be one of keys (publish a key before it signs)."
    }
  }
}

# Each generation's public half (base64 DER SubjectPublicKeyInfo), read back from KMS at apply.
data "aws_kms_public_key" "published" {
  for_each = aws_kms_key.signing

  key_id = each.value.arn

  lifecycle {
    # main.tf slices n out of the DER at fixed offsets: only an RSA_2048 key with e = 65537 has this shape
    # (the 44-character prefix is the DER header up to the modulus' sign byte, IDAQAB its end and e).
    postcondition {
      condition     = length(self.public_key) == 392 && startswith(self.public_key, local.rsa2048_spki_prefix) && endswith(self.public_key, "IDAQAB")
      error_message = "The signing key's public key is not an RSA-2048 SubjectPublicKeyInfo with e = 65537."
    }
  }
}

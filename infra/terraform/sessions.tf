# python.execute's sessions: a small item per session (owner, expiry,
# lease, bytes) and its saved state and files in parts under 400 KB
# (crates/aws/src/session_table.rs). `ttl` removes them a day after expiry.
# The saved state is read only inside the sealed child, never here.

resource "aws_dynamodb_table" "sessions" {
  name         = "${var.name}-sessions"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "id"

  attribute {
    name = "id"
    type = "S"
  }
  attribute {
    name = "owner"
    type = "S"
  }
  attribute {
    name = "expires_at"
    type = "N"
  }

  # An owner's live sessions and their sizes, for the per-caller quotas:
  # one Query, never a Scan (parts carry no `owner`).
  global_secondary_index {
    name               = "by_owner"
    hash_key           = "owner"
    range_key          = "expires_at"
    projection_type    = "INCLUDE"
    non_key_attributes = ["bytes"]
  }

  ttl {
    attribute_name = "ttl"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = true
  }

  server_side_encryption {
    enabled = true
  }

  # As the template's DeletionPolicy: Retain, destroy leaves the table
  # unless protect_tables is false.
  deletion_protection_enabled = var.protect_tables

  tags = var.tags
  #checkov:skip=CKV_AWS_119:Encrypted at rest with an AWS-owned key unless a customer key is given; the SAM template makes the same choice, and a key of our own would be one more key to manage.
}

# clarify's table, and the schedule that expires what is due: nothing runs
# in a Lambda function between invocations, so this sweep is what fails a
# waiting workflow within a minute of its clarification's expiry.

resource "aws_dynamodb_table" "clarify" {
  name         = "${var.name}-clarify"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "id"

  attribute {
    name = "id"
    type = "S"
  }
  attribute {
    name = "awaiting"
    type = "S"
  }
  attribute {
    name = "due_at"
    type = "N"
  }
  attribute {
    name = "pending"
    type = "S"
  }
  attribute {
    name = "expires_at"
    type = "N"
  }

  # Sparse: only items whose workflow has not been told yet carry
  # `awaiting`, so the sweep queries what is due instead of scanning.
  global_secondary_index {
    name            = "expiring"
    hash_key        = "awaiting"
    range_key       = "due_at"
    projection_type = "ALL"
  }

  # Sparse: only questions not yet answered or cancelled carry `pending`;
  # the pending quotas count its unexpired part.
  global_secondary_index {
    name               = "pending"
    hash_key           = "pending"
    range_key          = "expires_at"
    projection_type    = "INCLUDE"
    non_key_attributes = ["caller"]
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

# People hear of questions here: email and SMS subscribers (the clarify
# function publishes; nothing else may).
resource "aws_sns_topic" "clarify" {
  name              = "${var.name}-clarify"
  kms_master_key_id = "alias/aws/sns"
  tags              = var.tags
}

resource "aws_sns_topic_subscription" "clarify_email" {
  count     = var.clarify_notify_email != "" ? 1 : 0
  topic_arn = aws_sns_topic.clarify.arn
  protocol  = "email"
  endpoint  = var.clarify_notify_email
}

resource "aws_cloudwatch_event_rule" "clarify_sweep" {
  name                = "${var.name}-clarify-sweep"
  description         = "Expires due clarifications and fails their waiting workflows"
  schedule_expression = "rate(1 minute)"
  tags                = var.tags
}

resource "aws_cloudwatch_event_target" "clarify_sweep" {
  rule = aws_cloudwatch_event_rule.clarify_sweep.name
  arn  = aws_lambda_function.this["clarify"].arn
  # The event the clarify function reads as "sweep" (crates/lambda/src/envelope.rs).
  input = "{\"toolgate\": \"sweep\"}"
}

resource "aws_lambda_permission" "clarify_sweep" {
  statement_id  = "sweep"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.this["clarify"].function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.clarify_sweep.arn
}

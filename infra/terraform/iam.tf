# One role per function with exactly the rights template.yaml grants: its
# own log group, and then only what its tool needs. python.execute's
# process (never its sealed child) has its sessions table and, for scripts'
# tool calls, the right to invoke the ssh, cloud and clarify functions.

data "aws_iam_policy_document" "lambda_assume" {
  statement {
    effect  = "Allow"
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "function" {
  for_each = local.functions

  # IAM is global: a prefix, so that a second region, or SAM beside
  # Terraform, never meets a name this stack holds (38: IAM's limit).
  name_prefix        = substr("${local.function_names[each.key]}-", 0, 38)
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
  tags               = var.tags

  # A new name is a new role: the function moves to it before the old goes.
  lifecycle {
    create_before_destroy = true
  }
}

# ---------------------------------------------------------------- every function: its log group

data "aws_iam_policy_document" "logs" {
  for_each = local.functions

  statement {
    effect  = "Allow"
    actions = ["logs:CreateLogStream", "logs:PutLogEvents"]
    # The provider's log-group ARN has no ":*"; the streams need it.
    resources = ["${aws_cloudwatch_log_group.function[each.key].arn}:*"]
  }
}

resource "aws_iam_role_policy" "logs" {
  for_each = local.functions

  name   = "logs"
  role   = aws_iam_role.function[each.key].id
  policy = data.aws_iam_policy_document.logs[each.key].json
}

# ---------------------------------------------------------------- python-execute: its sessions table

data "aws_iam_policy_document" "sessions" {
  statement {
    effect    = "Allow"
    actions   = ["dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]
    resources = [aws_dynamodb_table.sessions.arn]
  }
  # The quotas count a caller's sessions through its index.
  statement {
    effect    = "Allow"
    actions   = ["dynamodb:Query"]
    resources = ["${aws_dynamodb_table.sessions.arn}/index/*"]
  }
}

resource "aws_iam_role_policy" "sessions" {
  name   = "sessions"
  role   = aws_iam_role.function["python-execute"].id
  policy = data.aws_iam_policy_document.sessions.json
}

# ---------------------------------------------------------------- cloud and ssh: their SSM prefixes

locals {
  # The functions that read an SSM prefix: their inventory and secrets.
  ssm_readers = {
    cloud = var.cloud_ssm_prefix
    ssh   = var.ssh_ssm_prefix
  }
  ssm_parameter_arn = "arn:${data.aws_partition.current.partition}:ssm:${local.region}:${data.aws_caller_identity.current.account_id}:parameter"
}

data "aws_iam_policy_document" "cloud_inventory" {
  statement {
    effect  = "Allow"
    actions = ["ssm:GetParametersByPath", "ssm:GetParameter"]
    resources = [
      "${local.ssm_parameter_arn}${var.cloud_ssm_prefix}",
      "${local.ssm_parameter_arn}${var.cloud_ssm_prefix}/*",
    ]
  }
}

resource "aws_iam_role_policy" "cloud_inventory" {
  name   = "inventory"
  role   = aws_iam_role.function["cloud"].id
  policy = data.aws_iam_policy_document.cloud_inventory.json
}

data "aws_iam_policy_document" "ssh_inventory" {
  statement {
    effect  = "Allow"
    actions = ["ssm:GetParametersByPath"]
    resources = [
      "${local.ssm_parameter_arn}${var.ssh_ssm_prefix}",
      "${local.ssm_parameter_arn}${var.ssh_ssm_prefix}/*",
    ]
  }
}

resource "aws_iam_role_policy" "ssh_inventory" {
  name   = "inventory"
  role   = aws_iam_role.function["ssh"].id
  policy = data.aws_iam_policy_document.ssh_inventory.json
}

# ssh_run's and the cloud tools' approvals are clarifications: kept in
# clarify's table (decided through the clarify function), announced on its
# topic. These functions ask, read and use approvals, but may write only the
# attributes they own: never a decision (decision, approver, decided_at, decided_binding) or
# an answer (answer, choice), so even a compromised function cannot approve
# its own call. A write names or tests only these attributes and returns no
# others.
data "aws_iam_policy_document" "approvals" {
  # Never a task's items: those are the gateway's and each runner's own
  # (task_runs).
  statement {
    effect    = "Allow"
    actions   = ["dynamodb:GetItem"]
    resources = [aws_dynamodb_table.clarify.arn]
    condition {
      test     = "ForAllValues:StringNotLike"
      variable = "dynamodb:LeadingKeys"
      values   = ["task:*", "run:*"]
    }
  }
  statement {
    effect    = "Allow"
    actions   = ["dynamodb:PutItem", "dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.clarify.arn]
    condition {
      test     = "ForAllValues:StringNotLike"
      variable = "dynamodb:LeadingKeys"
      values   = ["task:*", "run:*"]
    }
    condition {
      test     = "ForAllValues:StringLike"
      variable = "dynamodb:Attributes"
      values = [
        "id",
        "question",
        "options",
        "status",
        "created_at",
        "expires_at",
        "ttl",
        "settled_at",
        "due_at",
        "approval",
        "approval_details",
        "approval_cap",
        "approval_used_at",
        "notice:*",
      ]
    }
    condition {
      test     = "StringEqualsIfExists"
      variable = "dynamodb:ReturnValues"
      values   = ["NONE", "UPDATED_OLD", "UPDATED_NEW"]
    }
  }
  # The MCP state key's item, made by whichever function first asks in an
  # MCP client (with a conditional put, which IAM cannot require); approvals
  # asked there are sealed with it.
  statement {
    effect    = "Allow"
    actions   = ["dynamodb:PutItem"]
    resources = [aws_dynamodb_table.clarify.arn]
    condition {
      test     = "ForAllValues:StringEquals"
      variable = "dynamodb:LeadingKeys"
      values   = ["secret:mcp-state-key"]
    }
    condition {
      test     = "ForAllValues:StringEquals"
      variable = "dynamodb:Attributes"
      values   = ["id", "secret"]
    }
    condition {
      test     = "StringEqualsIfExists"
      variable = "dynamodb:ReturnValues"
      values   = ["NONE"]
    }
  }
  statement {
    effect    = "Allow"
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.clarify.arn]
  }
}

locals {
  # The functions whose tools can wait for a person's approval.
  approvers = {
    cloud = "cloud_call"
    ssh   = "ssh_run"
  }
}

resource "aws_iam_role_policy" "approvals" {
  for_each = local.approvers

  name   = "approvals"
  role   = aws_iam_role.function[each.key].id
  policy = data.aws_iam_policy_document.approvals.json
}

# ---------------------------------------------------------------- clarify, ssh and cloud: the notification secrets

locals {
  # The SSM SecureStrings each function that notifies reads once at start,
  # by name: the channels' secrets, and for clarify alone the Slack app's
  # signing secret (whoever holds it can forge an approver's click in
  # Slack). An empty name is no secret.
  secret_parameters = {
    clarify = compact([var.clarify_webhook_secret_parameter, var.clarify_slack_webhook_url_parameter, var.slack_signing_secret_parameter])
    ssh     = compact([var.clarify_webhook_secret_parameter, var.clarify_slack_webhook_url_parameter])
    cloud   = compact([var.clarify_webhook_secret_parameter, var.clarify_slack_webhook_url_parameter])
  }
  # Their ARNs, for the functions that have any.
  secret_readers = {
    for f, names in local.secret_parameters : f => [for n in names : "${local.ssm_parameter_arn}${n}"] if length(names) > 0
  }
}

# GetParameter on exactly those, and decrypting them through SSM only (the
# encryption context names the parameter).
data "aws_iam_policy_document" "secrets" {
  for_each = local.secret_readers

  statement {
    effect    = "Allow"
    actions   = ["ssm:GetParameter"]
    resources = each.value
  }
  statement {
    effect    = "Allow"
    actions   = ["kms:Decrypt"]
    resources = ["*"]
    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = ["ssm.${local.region}.${data.aws_partition.current.dns_suffix}"]
    }
    condition {
      test     = "StringEquals"
      variable = "kms:EncryptionContext:PARAMETER_ARN"
      values   = each.value
    }
  }
}

resource "aws_iam_role_policy" "secrets" {
  for_each = local.secret_readers

  name   = "secrets"
  role   = aws_iam_role.function[each.key].id
  policy = data.aws_iam_policy_document.secrets[each.key].json
}

# Their SecureStrings (cloud tokens, SSH private keys) are decrypted through
# SSM only.
data "aws_iam_policy_document" "decrypt_via_ssm" {
  statement {
    effect    = "Allow"
    actions   = ["kms:Decrypt"]
    resources = ["*"]
    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = ["ssm.${local.region}.${data.aws_partition.current.dns_suffix}"]
    }
  }
}

resource "aws_iam_role_policy" "decrypt_via_ssm" {
  for_each = local.ssm_readers

  name   = "decrypt-via-ssm"
  role   = aws_iam_role.function[each.key].id
  policy = data.aws_iam_policy_document.decrypt_via_ssm.json
}

# The network interfaces a VPC function needs; none without a VPC.
data "aws_iam_policy_document" "vpc" {
  statement {
    effect = "Allow"
    actions = [
      "ec2:CreateNetworkInterface",
      "ec2:DescribeNetworkInterfaces",
      "ec2:DeleteNetworkInterface",
      "ec2:AssignPrivateIpAddresses",
      "ec2:UnassignPrivateIpAddresses",
    ]
    # These EC2 actions take no resource-level permissions.
    resources = ["*"]
  }
  #checkov:skip=CKV_AWS_111:The network-interface actions a VPC function needs are not resource-scoped (the same as AWS's AWSLambdaVPCAccessExecutionRole); only the ssh and cloud roles get them, and only in a VPC.
  #checkov:skip=CKV_AWS_356:As CKV_AWS_111: these EC2 actions take "*" only.
}

resource "aws_iam_role_policy" "vpc" {
  for_each = local.in_vpc ? toset([for f, spec in local.functions : f if spec.vpc]) : toset([])

  name   = "vpc"
  role   = aws_iam_role.function[each.key].id
  policy = data.aws_iam_policy_document.vpc.json
}

# ---------------------------------------------------------------- clarify: its table, the workflows' task tokens, its topic

# Only this role may Scan the table: the approvers' lists (GET /approvals,
# GET /clarifications) read it whole; the sweep and the pending quotas
# query its indexes.
data "aws_iam_policy_document" "clarify_table" {
  statement {
    effect    = "Allow"
    actions   = ["dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.clarify.arn]
  }
  statement {
    effect    = "Allow"
    actions   = ["dynamodb:Scan"]
    resources = [aws_dynamodb_table.clarify.arn]
  }
  statement {
    effect    = "Allow"
    actions   = ["dynamodb:Query"]
    resources = ["${aws_dynamodb_table.clarify.arn}/index/*"]
  }
}

resource "aws_iam_role_policy" "clarify_table" {
  name   = "table"
  role   = aws_iam_role.function["clarify"].id
  policy = data.aws_iam_policy_document.clarify_table.json
}

data "aws_iam_policy_document" "clarify_task_callbacks" {
  statement {
    effect  = "Allow"
    actions = ["states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat"]
    # Task tokens are not resource-scoped in IAM.
    resources = ["*"]
  }
}

resource "aws_iam_role_policy" "clarify_task_callbacks" {
  name   = "task-callbacks"
  role   = aws_iam_role.function["clarify"].id
  policy = data.aws_iam_policy_document.clarify_task_callbacks.json
}

data "aws_iam_policy_document" "clarify_notify" {
  statement {
    effect    = "Allow"
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.clarify.arn]
  }
}

resource "aws_iam_role_policy" "clarify_notify" {
  name   = "notify"
  role   = aws_iam_role.function["clarify"].id
  policy = data.aws_iam_policy_document.clarify_notify.json
}

# ---------------------------------------------------------------- python-execute: scripts' tool calls (code mode)

data "aws_iam_policy_document" "python_invoke" {
  statement {
    effect  = "Allow"
    actions = ["lambda:InvokeFunction"]
    resources = [
      aws_lambda_function.this["ssh"].arn,
      aws_lambda_function.this["cloud"].arn,
      aws_lambda_function.this["clarify"].arn,
    ]
  }
}

resource "aws_iam_role_policy" "python_invoke" {
  name   = "invoke-tools"
  role   = aws_iam_role.function["python-execute"].id
  policy = data.aws_iam_policy_document.python_invoke.json
}

# ---------------------------------------------------------------- gateway: invoking the tool functions

data "aws_iam_policy_document" "gateway_invoke" {
  statement {
    effect  = "Allow"
    actions = ["lambda:InvokeFunction"]
    resources = [
      aws_lambda_function.this["python-execute"].arn,
      aws_lambda_function.this["ssh"].arn,
      aws_lambda_function.this["cloud"].arn,
      aws_lambda_function.this["clarify"].arn,
    ]
  }
}

resource "aws_iam_role_policy" "gateway_invoke" {
  name   = "invoke-tools"
  role   = aws_iam_role.function["gateway"].id
  policy = data.aws_iam_policy_document.gateway_invoke.json
}

# ---------------------------------------------------------------- tasks: each function its own runs, the gateway all

locals {
  # The functions that run the tasks the gateway sends (clarify's role
  # reaches its whole table already).
  task_runners = {
    "python-execute" = "python.execute"
    cloud            = "cloud_call"
    ssh              = "ssh_run"
  }
}

data "aws_iam_policy_document" "task_runs" {
  for_each = local.task_runners

  statement {
    effect    = "Allow"
    actions   = ["dynamodb:GetItem"]
    resources = [aws_dynamodb_table.clarify.arn]
    condition {
      test     = "ForAllValues:StringLike"
      variable = "dynamodb:LeadingKeys"
      values   = ["run:${local.function_names[each.key]}:*"]
    }
  }
  statement {
    effect    = "Allow"
    actions   = ["dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.clarify.arn]
    condition {
      test     = "ForAllValues:StringLike"
      variable = "dynamodb:LeadingKeys"
      values   = ["run:${local.function_names[each.key]}:*"]
    }
    condition {
      test     = "ForAllValues:StringEquals"
      variable = "dynamodb:Attributes"
      values   = ["id", "status", "created_at", "updated_at", "started_at", "run_by", "run_token", "cancel", "outcome"]
    }
    condition {
      test     = "StringEqualsIfExists"
      variable = "dynamodb:ReturnValues"
      values   = ["NONE"]
    }
  }
}

resource "aws_iam_role_policy" "task_runs" {
  for_each = local.task_runners

  name   = "task-runs"
  role   = aws_iam_role.function[each.key].id
  policy = data.aws_iam_policy_document.task_runs[each.key].json
}

data "aws_iam_policy_document" "gateway_tasks" {
  statement {
    effect    = "Allow"
    actions   = ["dynamodb:GetItem"]
    resources = [aws_dynamodb_table.clarify.arn]
    condition {
      test     = "ForAllValues:StringLike"
      variable = "dynamodb:LeadingKeys"
      values   = ["task:*", "run:*"]
    }
  }
  statement {
    effect    = "Allow"
    actions   = ["dynamodb:PutItem", "dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.clarify.arn]
    condition {
      test     = "ForAllValues:StringLike"
      variable = "dynamodb:LeadingKeys"
      values   = ["task:*", "run:*"]
    }
    condition {
      test     = "ForAllValues:StringEquals"
      variable = "dynamodb:Attributes"
      values   = ["id", "tool", "caller", "runner", "status", "created_at", "updated_at", "expires_at", "ttl", "started_at", "cancel", "outcome"]
    }
    condition {
      test     = "StringEqualsIfExists"
      variable = "dynamodb:ReturnValues"
      values   = ["NONE"]
    }
  }
}

resource "aws_iam_role_policy" "gateway_tasks" {
  name   = "tasks"
  role   = aws_iam_role.function["gateway"].id
  policy = data.aws_iam_policy_document.gateway_tasks.json
}

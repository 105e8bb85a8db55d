# What every file shares: the account, region and partition ARNs are built
# from, and the five functions (template.yaml's Globals and each function's
# own properties, one entry per function).

data "aws_partition" "current" {}
data "aws_caller_identity" "current" {}

locals {
  # The region, read off an ARN: aws_region's attribute for it changed name
  # in provider 6 (name, now deprecated, to region), and the module takes
  # both majors.
  region = split(":", aws_cloudwatch_log_group.function["gateway"].arn)[3]

  in_vpc = length(var.vpc_subnet_ids) > 0

  # The authorization every route takes but the open ones (api.tf).
  authorization_type = {
    JWT  = "JWT"
    IAM  = "AWS_IAM"
    NONE = "NONE"
  }[var.auth_mode]

  api_url = "https://${aws_apigatewayv2_api.this.id}.execute-api.${local.region}.${data.aws_partition.current.dns_suffix}"

  # Each function: the zip scripts/build-lambda makes
  # (<lambda_build_dir>/<name>/bootstrap.zip), its memory and timeout, and
  # whether it joins the VPC. The timeouts outlive each tool's longest call
  # (python.execute and ssh_run may run 840 s; clarify long-polls 25 s).
  functions = {
    "python-execute" = {
      description = "Toolgate python.execute: sandboxed Python (no VPC; its sessions table; scripts call the other functions' tools)"
      memory      = 1024
      timeout     = 900
      vpc         = false
    }
    "cloud" = {
      description = "Toolgate cloud tools: each account's MCP server as <account>__<tool>"
      memory      = 256
      timeout     = 60
      vpc         = true
    }
    "ssh" = {
      description = "Toolgate SSH tools: list_servers and ssh_run"
      memory      = 256
      timeout     = 900
      vpc         = true
    }
    "clarify" = {
      description = "Toolgate clarify: ask a human, and the approvers' inbox; answers over HTTPS complete Step Functions tasks"
      memory      = 256
      timeout     = 60
      vpc         = false
    }
    "gateway" = {
      description = "Toolgate gateway: GET /tools, /openapi.json, /mcp and /healthz for every function's tools"
      memory      = 256
      timeout     = 60
      vpc         = false
    }
  }

  function_names = { for f, _ in local.functions : f => "${var.name}-${f}" }

  # Each function's environment. TOOLGATE_LOG=json: CloudWatch adds the
  # timestamps.
  environment = {
    "python-execute" = {
      TOOLGATE_LOG              = "json"
      TOOLGATE_PYTHON_TIMEOUT   = tostring(var.python_timeout_seconds)
      TOOLGATE_PYTHON_MEMORY_MB = tostring(var.python_memory_mb)
      TOOLGATE_SESSIONS_TABLE   = aws_dynamodb_table.sessions.name
      # Tasks the gateway sends here (long calls over MCP).
      TOOLGATE_TASKS_TABLE = aws_dynamodb_table.clarify.name
      # Code mode: the functions whose tools scripts call.
      TOOLGATE_PEER_FUNCTIONS = join(",", [
        for f in ["ssh", "cloud", "clarify"] : local.function_names[f]
      ])
    }
    "cloud" = {
      TOOLGATE_LOG                 = "json"
      TOOLGATE_CLOUD_SSM_PREFIX    = var.cloud_ssm_prefix
      TOOLGATE_CLOUD_APPROVE_TOOLS = var.cloud_approve_tools
      # Approvals: clarify's table, links and channels.
      TOOLGATE_CLARIFY_TABLE         = aws_dynamodb_table.clarify.name
      TOOLGATE_TASKS_TABLE           = aws_dynamodb_table.clarify.name
      TOOLGATE_CLARIFY_EXPIRY_SECS   = tostring(var.clarify_expiry_seconds)
      TOOLGATE_PUBLIC_URL            = local.api_url
      TOOLGATE_CLARIFY_SNS_TOPIC_ARN = aws_sns_topic.clarify.arn
      TOOLGATE_CLARIFY_SNS_EVENTS    = var.clarify_notify_events
      TOOLGATE_CLARIFY_WEBHOOK_URL   = var.clarify_webhook_url
      # Secrets by name only: read from SSM at start.
      TOOLGATE_CLARIFY_WEBHOOK_SECRET_PARAMETER = var.clarify_webhook_secret_parameter
      TOOLGATE_CLARIFY_SLACK_URL_PARAMETER      = var.clarify_slack_webhook_url_parameter
      # What the channels' messages offer: Slack buttons, a capability link.
      TOOLGATE_APPROVERS_SLACK_USERS = var.approvers_slack_users
      TOOLGATE_APPROVALS_LINK_HOLDER = var.approvals_link_holder
    }
    "ssh" = {
      TOOLGATE_LOG                = "json"
      TOOLGATE_SSH_SSM_PREFIX     = var.ssh_ssm_prefix
      TOOLGATE_SSH_MAX_TIMEOUT    = tostring(var.ssh_timeout_seconds)
      TOOLGATE_SSH_APPROVE_PRESET = var.ssh_approve_preset
      TOOLGATE_SSH_APPROVE_TAGS   = var.ssh_approve_tags
      # Approvals: clarify's table, links and channels.
      TOOLGATE_CLARIFY_TABLE         = aws_dynamodb_table.clarify.name
      TOOLGATE_TASKS_TABLE           = aws_dynamodb_table.clarify.name
      TOOLGATE_CLARIFY_EXPIRY_SECS   = tostring(var.clarify_expiry_seconds)
      TOOLGATE_PUBLIC_URL            = local.api_url
      TOOLGATE_CLARIFY_SNS_TOPIC_ARN = aws_sns_topic.clarify.arn
      TOOLGATE_CLARIFY_SNS_EVENTS    = var.clarify_notify_events
      TOOLGATE_CLARIFY_WEBHOOK_URL   = var.clarify_webhook_url
      # Secrets by name only: read from SSM at start.
      TOOLGATE_CLARIFY_WEBHOOK_SECRET_PARAMETER = var.clarify_webhook_secret_parameter
      TOOLGATE_CLARIFY_SLACK_URL_PARAMETER      = var.clarify_slack_webhook_url_parameter
      # What the channels' messages offer: Slack buttons, a capability link.
      TOOLGATE_APPROVERS_SLACK_USERS = var.approvers_slack_users
      TOOLGATE_APPROVALS_LINK_HOLDER = var.approvals_link_holder
    }
    "clarify" = {
      TOOLGATE_LOG                   = "json"
      TOOLGATE_CLARIFY_TABLE         = aws_dynamodb_table.clarify.name
      TOOLGATE_TASKS_TABLE           = aws_dynamodb_table.clarify.name
      TOOLGATE_CLARIFY_EXPIRY_SECS   = tostring(var.clarify_expiry_seconds)
      TOOLGATE_PUBLIC_URL            = local.api_url
      TOOLGATE_CLARIFY_SNS_TOPIC_ARN = aws_sns_topic.clarify.arn
      TOOLGATE_CLARIFY_SNS_EVENTS    = var.clarify_notify_events
      # Blank when unset: no such channel. Secrets by name only: read from
      # SSM at start.
      TOOLGATE_CLARIFY_WEBHOOK_URL              = var.clarify_webhook_url
      TOOLGATE_CLARIFY_WEBHOOK_SECRET_PARAMETER = var.clarify_webhook_secret_parameter
      TOOLGATE_CLARIFY_SLACK_URL_PARAMETER      = var.clarify_slack_webhook_url_parameter
      TOOLGATE_SLACK_SIGNING_SECRET_PARAMETER   = var.slack_signing_secret_parameter
      # Who may decide approvals (blank: nobody by that means).
      TOOLGATE_APPROVERS_JWT_GROUP    = var.approvers_jwt_group
      TOOLGATE_APPROVERS_JWT_CLAIM    = var.approvers_jwt_claim
      TOOLGATE_APPROVERS_JWT_AUDIENCE = var.approvers_jwt_audience
      TOOLGATE_APPROVERS_IAM          = var.approvers_iam_arns
      TOOLGATE_APPROVERS_SLACK_USERS  = var.approvers_slack_users
      TOOLGATE_APPROVALS_LINK_HOLDER  = var.approvals_link_holder
    }
    "gateway" = {
      TOOLGATE_LOG = "json"
      # The gateway learns each tool function's tools by invoking it (by
      # name: a reference would make the functions depend on themselves).
      TOOLGATE_PEER_FUNCTIONS = join(",", [
        for f in ["python-execute", "ssh", "cloud", "clarify"] : local.function_names[f]
      ])
      # /.well-known/oauth-protected-resource names the JWT issuer.
      TOOLGATE_OAUTH_ISSUER = var.auth_mode == "JWT" ? var.jwt_issuer : ""
      TOOLGATE_PUBLIC_URL   = local.api_url
      # Long calls run on in their functions as tasks, kept here.
      TOOLGATE_TASKS_TABLE = aws_dynamodb_table.clarify.name
    }
  }
}

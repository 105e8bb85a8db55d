# The five functions on provided.al2023 / arm64, each with its own log
# group and role (iam.tf); ssh and cloud join the VPC when subnets are given.

resource "aws_cloudwatch_log_group" "function" {
  for_each = local.functions

  name              = "/aws/lambda/${local.function_names[each.key]}"
  retention_in_days = var.log_retention_days
  tags              = var.tags
  #checkov:skip=CKV_AWS_158:CloudWatch Logs encrypts at rest by default; a KMS key of our own would be one more key the user must manage, and the template does not use one either.
  #checkov:skip=CKV_AWS_338:Retention is the user's choice (log_retention_days, default 30 as in the SAM template).
}

resource "aws_lambda_function" "this" {
  for_each = local.functions

  function_name = local.function_names[each.key]
  description   = each.value.description
  role          = aws_iam_role.function[each.key].arn
  runtime       = "provided.al2023"
  architectures = ["arm64"]
  handler       = "bootstrap"
  memory_size   = each.value.memory
  timeout       = each.value.timeout

  filename         = "${var.lambda_build_dir}/${each.key}/bootstrap.zip"
  source_code_hash = filebase64sha256("${var.lambda_build_dir}/${each.key}/bootstrap.zip")

  # Only python-execute is capped: it runs arbitrary code and must not take
  # the account's whole concurrency (-1: no reservation).
  reserved_concurrent_executions = each.key == "python-execute" && var.python_reserved_concurrency > 0 ? var.python_reserved_concurrency : -1

  logging_config {
    log_format = "Text"
    log_group  = aws_cloudwatch_log_group.function[each.key].name
  }

  dynamic "vpc_config" {
    for_each = each.value.vpc && local.in_vpc ? [1] : []
    content {
      subnet_ids         = var.vpc_subnet_ids
      security_group_ids = var.vpc_security_group_ids
    }
  }

  environment {
    variables = local.environment[each.key]
  }

  tags = var.tags

  #checkov:skip=CKV_AWS_50:No X-Ray: the functions log each call's tool, duration and outcome as JSON, and tracing would need rights and cost the template does not grant either.
  #checkov:skip=CKV_AWS_116:No dead-letter queue: every invocation is synchronous (API Gateway, the gateway, Step Functions) except the sweep schedule, whose next run a minute later does the same work.
  #checkov:skip=CKV_AWS_173:The environment holds no secrets (log format, limits, table names, SSM prefixes and the names of the SSM SecureStrings that hold the notification secrets, read at start); Lambda encrypts it at rest with an AWS key. Keys, tokens and webhook secrets live in SSM SecureStrings.
  #checkov:skip=CKV_AWS_272:Code signing needs an AWS Signer profile of the user's own; the zips are built by scripts/build-lambda on the user's machine. Add aws_lambda_code_signing_config if your organisation signs code.

  # The policies are separate resources: without this a first call could
  # find its role without its rights. (Not the gateway's: it names these
  # functions; the gateway retries a peer it cannot list after 5 s.)
  depends_on = [
    aws_iam_role_policy.logs,
    aws_iam_role_policy.sessions,
    aws_iam_role_policy.cloud_inventory,
    aws_iam_role_policy.ssh_inventory,
    aws_iam_role_policy.decrypt_via_ssm,
    aws_iam_role_policy.secrets,
    aws_iam_role_policy.vpc,
    aws_iam_role_policy.clarify_table,
    aws_iam_role_policy.clarify_task_callbacks,
  ]
}

# A task's run starts once (a conditional write), so Lambda may retry a
# delivery that failed before it ran (the table throttled), but not past the
# 5 minutes after which the task reads as lost.
resource "aws_lambda_function_event_invoke_config" "task_deliveries" {
  for_each = {
    for f in ["python-execute", "ssh", "cloud", "clarify"] : f => f
  }

  function_name                = aws_lambda_function.this[each.key].function_name
  maximum_retry_attempts       = 2
  maximum_event_age_in_seconds = 300
}

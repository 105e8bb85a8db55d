# The example Step Functions workflow, from the same definition SAM deploys
# (infra/statemachines/clarify-then-run.asl.json): clarify, then
# python.execute, then ssh_run.

resource "aws_cloudwatch_log_group" "workflow" {
  name              = "/aws/vendedlogs/states/${var.name}-clarify-then-run"
  retention_in_days = var.log_retention_days
  tags              = var.tags
  #checkov:skip=CKV_AWS_158:CloudWatch Logs encrypts at rest by default; a KMS key of our own would be one more key the user must manage, and the template does not use one either.
  #checkov:skip=CKV_AWS_338:Retention is the user's choice (log_retention_days, default 30 as in the SAM template).
}

data "aws_iam_policy_document" "workflow_assume" {
  statement {
    effect  = "Allow"
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["states.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "workflow" {
  name_prefix        = substr("${var.name}-clarify-then-run-", 0, 38)
  assume_role_policy = data.aws_iam_policy_document.workflow_assume.json
  tags               = var.tags

  lifecycle {
    create_before_destroy = true
  }
}

data "aws_iam_policy_document" "workflow" {
  statement {
    effect  = "Allow"
    actions = ["lambda:InvokeFunction"]
    resources = [
      aws_lambda_function.this["clarify"].arn,
      aws_lambda_function.this["python-execute"].arn,
      aws_lambda_function.this["ssh"].arn,
    ]
  }
  # What Step Functions needs to deliver its logs (these actions take no
  # resource-level permissions).
  statement {
    effect = "Allow"
    actions = [
      "logs:CreateLogDelivery",
      "logs:GetLogDelivery",
      "logs:UpdateLogDelivery",
      "logs:DeleteLogDelivery",
      "logs:ListLogDeliveries",
      "logs:PutResourcePolicy",
      "logs:DescribeResourcePolicies",
      "logs:DescribeLogGroups",
    ]
    resources = ["*"]
  }
}

resource "aws_iam_role_policy" "workflow" {
  name   = "workflow"
  role   = aws_iam_role.workflow.id
  policy = data.aws_iam_policy_document.workflow.json
}

resource "aws_sfn_state_machine" "clarify_then_run" {
  name     = "${var.name}-clarify-then-run"
  type     = "STANDARD"
  role_arn = aws_iam_role.workflow.arn
  definition = templatefile("${path.module}/../statemachines/clarify-then-run.asl.json", {
    Partition                = data.aws_partition.current.partition
    ClarifyFunctionArn       = aws_lambda_function.this["clarify"].arn
    PythonExecuteFunctionArn = aws_lambda_function.this["python-execute"].arn
    SshFunctionArn           = aws_lambda_function.this["ssh"].arn
  })

  logging_configuration {
    level                  = "ERROR"
    include_execution_data = false
    log_destination        = "${aws_cloudwatch_log_group.workflow.arn}:*"
  }

  tags = var.tags

  #checkov:skip=CKV_AWS_284:No X-Ray, as for the functions: the workflow's errors go to its log group.
  #checkov:skip=CKV_AWS_285:Execution data stays out of the logs on purpose: it holds the person's answers and the commands run on servers. Step Functions keeps each execution's history for 90 days.

  depends_on = [aws_iam_role_policy.workflow]
}

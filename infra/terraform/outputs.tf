# The SAM stack's outputs, under Terraform's names.

output "api_url" {
  description = "Base URL of the Toolgate HTTP API"
  value       = local.api_url
}

output "inbox_url" {
  description = "The approvers' inbox, where an approver signs in to decide approvals"
  value       = "${local.api_url}/inbox"
}

output "auth_mode" {
  description = "How the API authenticates callers"
  value       = var.auth_mode
}

output "python_execute_function_arn" {
  description = "python.execute, for direct invocation (Step Functions, SDK)"
  value       = aws_lambda_function.this["python-execute"].arn
}

output "cloud_function_arn" {
  description = "Cloud tools, for direct invocation ({\"tool\", \"arguments\"})"
  value       = aws_lambda_function.this["cloud"].arn
}

output "gateway_function_arn" {
  description = "The gateway, which lists every function's tools"
  value       = aws_lambda_function.this["gateway"].arn
}

output "ssh_function_arn" {
  description = "SSH tools, for direct invocation ({\"tool\", \"arguments\", \"scope\"})"
  value       = aws_lambda_function.this["ssh"].arn
}

output "clarify_function_arn" {
  description = "clarify, for direct invocation (a .waitForTaskToken state)"
  value       = aws_lambda_function.this["clarify"].arn
}

output "clarify_topic_arn" {
  description = "The SNS topic people hear of clarifications on (subscribe emails and phones to it)"
  value       = aws_sns_topic.clarify.arn
}

output "clarify_table_name" {
  description = "The clarifications table"
  value       = aws_dynamodb_table.clarify.name
}

output "sessions_table_name" {
  description = "python.execute's sessions table"
  value       = aws_dynamodb_table.sessions.name
}

output "clarify_then_run_state_machine_arn" {
  description = "The example workflow"
  value       = aws_sfn_state_machine.clarify_then_run.arn
}

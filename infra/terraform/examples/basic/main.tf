# Toolgate on AWS with Terraform: the module in infra/terraform, with a JWT
# authorizer. README, "Deploy with Terraform", walks through it.

terraform {
  required_version = ">= 1.9.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.40.0, < 7.0.0"
    }
  }
}

provider "aws" {
  region = var.region
}

variable "region" {
  description = "AWS region to deploy to."
  type        = string
  default     = "us-east-1"
}

variable "name" {
  description = "Prefix of every resource's name."
  type        = string
  default     = "toolgate"
}

variable "lambda_build_dir" {
  description = "Where scripts/build-lambda put the zips (<target dir>/lambda); empty means the repository's target/lambda."
  type        = string
  default     = ""
}

variable "jwt_issuer" {
  description = "Your identity provider's issuer URL (README, \"An identity provider for the JWT authorizer\")."
  type        = string
}

variable "jwt_audience" {
  description = "The audience the agents' tokens carry (for Cognito, the agents' app client ids, comma-separated)."
  type        = string
}

module "toolgate" {
  source = "../.."

  name             = var.name
  lambda_build_dir = var.lambda_build_dir != "" ? var.lambda_build_dir : "${path.root}/../../../../target/lambda"
  auth_mode        = "JWT"
  jwt_issuer       = var.jwt_issuer
  jwt_audience     = var.jwt_audience

  # The other inputs keep the SAM template's defaults; for example:
  # python_reserved_concurrency = 50    # a cap, once the account's quota is at least 150
  # vpc_subnet_ids              = ["subnet-..."]
  # vpc_security_group_ids      = ["sg-..."]
  #
  # A signed webhook: its key is an SSM SecureString the functions read at
  # start, named here (no secret is in a variable or in the state):
  # clarify_webhook_url              = "https://ops.example/hooks/toolgate"
  # clarify_webhook_secret_parameter = "/toolgate/webhook-secret"
  #
  # Approvers: users of the same identity provider in this group (a Cognito
  # group) may decide gated calls in the inbox (output inbox_url), with a
  # token of the app client people sign in with (not the agents'). Without
  # approvers nobody can approve a gated call (README, "Approvals").
  # approvers_jwt_group    = "toolgate-approvers"
  # approvers_jwt_audience = "people-app-client-id"
  # ssh_approve_preset     = "readonly"
}

output "api_url" {
  description = "Base URL of the Toolgate HTTP API"
  value       = module.toolgate.api_url
}

output "inbox_url" {
  description = "The approvers' inbox, where an approver signs in to decide approvals"
  value       = module.toolgate.inbox_url
}

output "python_execute_function_arn" {
  description = "python.execute, for direct invocation (Step Functions, SDK)"
  value       = module.toolgate.python_execute_function_arn
}

output "clarify_then_run_state_machine_arn" {
  description = "The example workflow"
  value       = module.toolgate.clarify_then_run_state_machine_arn
}

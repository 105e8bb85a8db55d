# One API Gateway HTTP API. A tool call goes straight to the function that
# serves it (python.execute and the SSH tools by name, any other
# `POST /tools/{name}` to the cloud function, whose names are only known at
# run time); the listing, OpenAPI, MCP, health and unknown routes go to the
# gateway, which knows every function's tools.

locals {
  # Route key => the function behind it, and whether it is public. Only the
  # person's clarification routes are: the person holds a link, not a token,
  # and the clarification's unguessable id (160 random bits) is the
  # capability. Health stays behind the authorizer: it names the tools and
  # the walls. $default gives the contract's JSON 404 instead of API
  # Gateway's own.
  routes = {
    "GET /tools"                       = { function = "gateway", public = false }
    "POST /tools/python.execute"       = { function = "python-execute", public = false }
    "POST /tools/python__execute"      = { function = "python-execute", public = false }
    "POST /tools/list_servers"         = { function = "ssh", public = false }
    "POST /tools/ssh_run"              = { function = "ssh", public = false }
    "POST /tools/clarify"              = { function = "clarify", public = false }
    "GET /clarifications/{id}"         = { function = "clarify", public = true }
    "GET /clarifications/{id}/answer"  = { function = "clarify", public = true }
    "POST /clarifications/{id}/answer" = { function = "clarify", public = true }
    "POST /clarifications/{id}/cancel" = { function = "clarify", public = true }
    "POST /tools/{name}"               = { function = "cloud", public = false }
    "GET /openapi.json"                = { function = "gateway", public = false }
    "ANY /mcp"                         = { function = "gateway", public = false }
    "GET /healthz"                     = { function = "gateway", public = false }
    "$default"                         = { function = "gateway", public = false }
  }
}

resource "aws_apigatewayv2_api" "this" {
  name          = "${var.name}-api"
  protocol_type = "HTTP"
  description   = "Toolgate HTTP API"
  tags          = var.tags
}

resource "aws_cloudwatch_log_group" "api_access" {
  name              = "/aws/apigateway/${var.name}-api"
  retention_in_days = var.log_retention_days
  tags              = var.tags
  #checkov:skip=CKV_AWS_158:CloudWatch Logs encrypts at rest by default; a KMS key of our own would be one more key the user must manage, and the template does not use one either.
  #checkov:skip=CKV_AWS_338:Retention is the user's choice (log_retention_days, default 30 as in the SAM template).
}

resource "aws_apigatewayv2_stage" "default" {
  api_id      = aws_apigatewayv2_api.this.id
  name        = "$default"
  auto_deploy = true

  default_route_settings {
    throttling_burst_limit = 100
    throttling_rate_limit  = 50
  }

  access_log_settings {
    destination_arn = aws_cloudwatch_log_group.api_access.arn
    # The same fields as the SAM template's, in its order.
    format = "{\"requestId\":\"$context.requestId\",\"ip\":\"$context.identity.sourceIp\",\"sub\":\"$context.authorizer.claims.sub\",\"route\":\"$context.routeKey\",\"status\":\"$context.status\",\"latencyMs\":\"$context.integrationLatency\",\"error\":\"$context.integrationErrorMessage\"}"
  }

  tags = var.tags
}

resource "aws_apigatewayv2_authorizer" "jwt" {
  count = var.auth_mode == "JWT" ? 1 : 0

  api_id           = aws_apigatewayv2_api.this.id
  name             = "jwt"
  authorizer_type  = "JWT"
  identity_sources = ["$request.header.Authorization"]

  jwt_configuration {
    issuer   = var.jwt_issuer
    audience = [var.jwt_audience]
  }
}

resource "aws_apigatewayv2_integration" "function" {
  for_each = local.functions

  api_id                 = aws_apigatewayv2_api.this.id
  integration_type       = "AWS_PROXY"
  integration_uri        = aws_lambda_function.this[each.key].arn
  payload_format_version = "2.0"
  timeout_milliseconds   = 30000
}

resource "aws_lambda_permission" "api" {
  for_each = local.functions

  statement_id  = "api-gateway"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.this[each.key].function_name
  principal     = "apigateway.amazonaws.com"
  source_arn    = "${aws_apigatewayv2_api.this.execution_arn}/*"
}

resource "aws_apigatewayv2_route" "this" {
  for_each = local.routes

  api_id             = aws_apigatewayv2_api.this.id
  route_key          = each.key
  target             = "integrations/${aws_apigatewayv2_integration.function[each.value.function].id}"
  authorization_type = each.value.public ? "NONE" : local.authorization_type
  authorizer_id      = !each.value.public && var.auth_mode == "JWT" ? aws_apigatewayv2_authorizer.jwt[0].id : null
  #checkov:skip=CKV_AWS_309:Every route takes the chosen authorizer except the person's clarification routes, whose unguessable id is the capability (README, "clarify"); auth_mode = NONE must be chosen explicitly.
}

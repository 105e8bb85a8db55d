# One API Gateway HTTP API. A tool call goes straight to the function that
# serves it (python.execute and the SSH tools by name, any other
# `POST /tools/{name}` to the cloud function, whose names are only known at
# run time); the listing, OpenAPI, MCP, health and unknown routes go to the
# gateway, which knows every function's tools.

locals {
  # Route key => the function behind it, and who may call it: "open",
  # "callers" (the agents' tokens) or "approvers". Only the routes that
  # check their own proof are open: the person's clarification routes (the
  # person holds a link, not a token, and the clarification's unguessable
  # id, 160 random bits, is the capability), the approvers' inbox page
  # (which calls the approvers' JSON API with the approver's own
  # credentials), link decisions (a capability posted in the body, refused
  # unless approvals_link_holder is "true") and Slack's signed button
  # clicks. The approvers' JSON API takes the authorizer (with
  # approvers_jwt_audience, the approvers' own); the clarify function then
  # takes as an approver only a JWT in approvers_jwt_group or an ARN in
  # approvers_iam_arns. "GET /clarifications" is the list alone: an exact
  # path, so "/clarifications/{id}..." stay open. Health stays behind the
  # authorizer: it names the tools and the walls. $default gives the
  # contract's JSON 404 instead of API Gateway's own.
  routes = {
    "GET /tools"                       = { function = "gateway", auth = "callers" }
    "POST /tools/python.execute"       = { function = "python-execute", auth = "callers" }
    "POST /tools/python__execute"      = { function = "python-execute", auth = "callers" }
    "POST /tools/list_servers"         = { function = "ssh", auth = "callers" }
    "POST /tools/ssh_run"              = { function = "ssh", auth = "callers" }
    "POST /tools/clarify"              = { function = "clarify", auth = "callers" }
    "GET /clarifications/{id}"         = { function = "clarify", auth = "open" }
    "GET /clarifications/{id}/answer"  = { function = "clarify", auth = "open" }
    "POST /clarifications/{id}/answer" = { function = "clarify", auth = "open" }
    "POST /clarifications/{id}/cancel" = { function = "clarify", auth = "open" }
    "GET /approvals"                   = { function = "clarify", auth = "approvers" }
    "GET /approvals/{id}"              = { function = "clarify", auth = "approvers" }
    "POST /approvals/{id}/decision"    = { function = "clarify", auth = "approvers" }
    "GET /clarifications"              = { function = "clarify", auth = "approvers" }
    "GET /inbox"                       = { function = "clarify", auth = "open" }
    "GET /inbox/{id}"                  = { function = "clarify", auth = "open" }
    "POST /approval-links/{id}"        = { function = "clarify", auth = "open" }
    "POST /slack/interactions"         = { function = "clarify", auth = "open" }
    "POST /tools/{name}"               = { function = "cloud", auth = "callers" }
    "POST /tools/{name}/task"          = { function = "gateway", auth = "callers" }
    "GET /tasks/{id}"                  = { function = "gateway", auth = "callers" }
    "POST /tasks/{id}/cancel"          = { function = "gateway", auth = "callers" }
    "GET /openapi.json"                = { function = "gateway", auth = "callers" }
    "ANY /mcp"                         = { function = "gateway", auth = "callers" }
    "GET /healthz"                     = { function = "gateway", auth = "callers" }
    # RFC 9728's metadata: clients read it before they sign in.
    "GET /.well-known/oauth-protected-resource"     = { function = "gateway", auth = "open" }
    "GET /.well-known/oauth-protected-resource/mcp" = { function = "gateway", auth = "open" }
    "$default"                                      = { function = "gateway", auth = "callers" }
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
    audience = split(",", var.jwt_audience)
  }
}

# People's tokens (approvers_jwt_audience), for the approvers' routes alone:
# the same issuer, another audience.
resource "aws_apigatewayv2_authorizer" "approvers" {
  count = var.auth_mode == "JWT" && var.approvers_jwt_audience != "" ? 1 : 0

  api_id           = aws_apigatewayv2_api.this.id
  name             = "jwt-approvers"
  authorizer_type  = "JWT"
  identity_sources = ["$request.header.Authorization"]

  jwt_configuration {
    issuer   = var.jwt_issuer
    audience = split(",", var.approvers_jwt_audience)
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
  authorization_type = each.value.auth == "open" ? "NONE" : local.authorization_type
  authorizer_id      = each.value.auth == "approvers" && var.auth_mode == "JWT" && var.approvers_jwt_audience != "" ? aws_apigatewayv2_authorizer.approvers[0].id : each.value.auth != "open" && var.auth_mode == "JWT" ? aws_apigatewayv2_authorizer.jwt[0].id : null
  #checkov:skip=CKV_AWS_309:Every route takes the chosen authorizer except those that check their own proof: the person's clarification routes (the unguessable id is the capability), the approvers' inbox page, link decisions and Slack's signed clicks (docs/approvals.md); auth_mode = NONE must be chosen explicitly.
}

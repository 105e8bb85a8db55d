# The SAM template's parameters (same meaning, same defaults, same limits),
# plus what Terraform needs that SAM finds itself: a name and the zips.

variable "name" {
  description = "Prefix of every resource's name (SAM uses the stack name): functions are <name>-python-execute and so on."
  type        = string
  default     = "toolgate"
  validation {
    condition     = can(regex("^[a-zA-Z][a-zA-Z0-9-]{0,39}$", var.name))
    error_message = "name: 1-40 letters, digits and hyphens, starting with a letter (it prefixes function, table and API names)."
  }
}

variable "lambda_build_dir" {
  description = "The folder scripts/build-lambda writes (<target dir>/lambda), holding <function>/bootstrap.zip for python-execute, cloud, ssh, clarify and gateway."
  type        = string
  validation {
    condition = alltrue([
      for f in ["python-execute", "cloud", "ssh", "clarify", "gateway"] :
      fileexists("${var.lambda_build_dir}/${f}/bootstrap.zip")
    ])
    error_message = "lambda_build_dir must hold <function>/bootstrap.zip for python-execute, cloud, ssh, clarify and gateway: run scripts/build-lambda first and pass its target dir's lambda folder."
  }
}

variable "auth_mode" {
  description = "How API Gateway authenticates callers. JWT (default) checks a bearer token from your identity provider; IAM needs SigV4-signed requests. NONE leaves every route open to the internet: choose it only on purpose."
  type        = string
  default     = "JWT"
  validation {
    condition     = contains(["JWT", "IAM", "NONE"], var.auth_mode)
    error_message = "auth_mode must be JWT, IAM or NONE."
  }
}

variable "jwt_issuer" {
  description = "JWT issuer URL (auth_mode = JWT), e.g. https://cognito-idp.us-east-1.amazonaws.com/us-east-1_AbCdEf123"
  type        = string
  default     = ""
  validation {
    condition     = var.auth_mode != "JWT" || var.jwt_issuer != ""
    error_message = "auth_mode = JWT needs jwt_issuer (or choose auth_mode = IAM, or NONE on purpose)."
  }
}

variable "jwt_audience" {
  description = "auth_mode = JWT: the audience the agents' tokens carry (for Cognito, the agents' app client ids), comma-separated; every route but the open ones and the approvers' takes these tokens and no others."
  type        = string
  default     = ""
  validation {
    condition     = var.auth_mode != "JWT" || var.jwt_audience != ""
    error_message = "auth_mode = JWT needs jwt_audience."
  }
  validation {
    condition     = can(regex("^([^,\\s]+(,[^,\\s]+)*)?$", var.jwt_audience))
    error_message = "jwt_audience must be app client ids (audiences) separated by commas, without spaces."
  }
}

variable "log_retention_days" {
  description = "Days every log group keeps its logs."
  type        = number
  default     = 30
  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be one of CloudWatch's values: 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288 or 3653."
  }
}

variable "python_timeout_seconds" {
  description = "python.execute's timeout. Direct invocations (Step Functions, the SDK) get all of it (the function's own timeout is 900 s); calls through API Gateway are also capped at 30 s, its integration limit, unless an MCP client runs them as tasks."
  type        = number
  default     = 20
  validation {
    condition     = var.python_timeout_seconds >= 1 && var.python_timeout_seconds <= 840
    error_message = "python_timeout_seconds must be 1 to 840 (the function's own timeout is 900 s)."
  }
}

variable "python_reserved_concurrency" {
  description = "Concurrent python.execute calls at most (reserved concurrency), so an arbitrary-compute endpoint cannot take the account's whole Lambda concurrency from your other functions; e.g. 50 once the account's concurrency quota is at least 150 (the value plus the 100 Lambda keeps unreserved). 0 (the default, which a new account's quota of 10 needs) reserves nothing."
  type        = number
  default     = 0
  validation {
    condition     = var.python_reserved_concurrency >= 0 && var.python_reserved_concurrency <= 1000
    error_message = "python_reserved_concurrency must be 0 to 1000."
  }
}

variable "python_memory_mb" {
  description = "Address-space limit of each sandboxed script; at most 768, so that a script running out of it gets MemoryError inside the function's 1024 MB (the server and the warm sandbox take the rest) instead of ending the whole environment."
  type        = number
  default     = 256
  validation {
    condition     = var.python_memory_mb >= 64 && var.python_memory_mb <= 768
    error_message = "python_memory_mb must be 64 to 768 (the python-execute function has 1024 MB)."
  }
}

variable "cloud_ssm_prefix" {
  description = "SSM path under which each cloud account is a parameter, no trailing slash (see README)."
  type        = string
  default     = "/toolgate/clouds"
  validation {
    condition     = can(regex("^(/[a-zA-Z0-9_.-]+)+$", var.cloud_ssm_prefix))
    error_message = "cloud_ssm_prefix must be an SSM path such as /toolgate/clouds, with no trailing slash."
  }
}

variable "ssh_ssm_prefix" {
  description = "SSM path under which each SSH server is a parameter (and its key at .../NAME/private-key), no trailing slash."
  type        = string
  default     = "/toolgate/servers"
  validation {
    condition     = can(regex("^(/[a-zA-Z0-9_.-]+)+$", var.ssh_ssm_prefix))
    error_message = "ssh_ssm_prefix must be an SSM path such as /toolgate/servers, with no trailing slash."
  }
}

variable "ssh_timeout_seconds" {
  description = "The longest timeout an ssh_run command may ask for (the function's own timeout is 900 s). Through API Gateway a command is also cut at 30 s, its integration limit, unless an MCP client runs it as a task."
  type        = number
  default     = 600
  validation {
    condition     = var.ssh_timeout_seconds >= 10 && var.ssh_timeout_seconds <= 840
    error_message = "ssh_timeout_seconds must be 10 to 840 (the function's own timeout is 900 s)."
  }
}

variable "vpc_subnet_ids" {
  description = "Private subnets for the cloud and ssh functions; empty runs them outside any VPC. The subnets need a route to SSM (an interface endpoint with private DNS, or a NAT gateway), a NAT gateway for cloud MCP endpoints on the internet, and a route to your servers' port 22 (README, \"Deploy to AWS\")."
  type        = list(string)
  default     = []
}

variable "vpc_security_group_ids" {
  description = "Security groups for the VPC functions (required with vpc_subnet_ids): egress to SSM and the MCP endpoints on 443, and to the servers on 22."
  type        = list(string)
  default     = []
  validation {
    condition     = length(var.vpc_subnet_ids) == 0 || length(var.vpc_security_group_ids) > 0
    error_message = "vpc_subnet_ids needs vpc_security_group_ids (Lambda cannot join subnets without a security group)."
  }
}

variable "clarify_expiry_seconds" {
  description = "Seconds until an unanswered clarification expires. A schedule sweeps every minute, so a waiting workflow fails with Clarify.Expired within a minute of the expiry."
  type        = number
  default     = 86400
  validation {
    condition     = var.clarify_expiry_seconds >= 60 && var.clarify_expiry_seconds <= 2592000
    error_message = "clarify_expiry_seconds must be 60 to 2592000 (30 days)."
  }
}

variable "cloud_approve_tools" {
  description = "Comma-separated cloud tool names (<account>__<tool>, * matches any run) whose calls wait for a person's approval; an account's own document can add its tools (\"approve\")."
  type        = string
  default     = ""
}

variable "ssh_approve_preset" {
  description = "Which ssh_run commands wait for a person's approval on every server (or on those tagged ssh_approve_tags): what the readonly preset would refuse, or all of them."
  type        = string
  default     = "none"
  validation {
    condition     = contains(["none", "readonly", "all"], var.ssh_approve_preset)
    error_message = "ssh_approve_preset must be none, readonly or all."
  }
}

variable "ssh_approve_tags" {
  description = "Comma-separated server tags ssh_approve_preset applies to; empty for every server."
  type        = string
  default     = ""
}

variable "clarify_notify_email" {
  description = "An email address subscribed to the clarify topic (AWS asks it to confirm); empty subscribes none. Add phones (SMS) or more addresses with `aws sns subscribe` (README, \"Approvals and notifications\")."
  type        = string
  default     = ""
}

variable "clarify_notify_events" {
  description = "The clarification events the topic's subscribers hear of, comma-separated."
  type        = string
  default     = "created,expired"
  validation {
    condition     = can(regex("^(created|answered|expired|cancelled)(,(created|answered|expired|cancelled))*$", var.clarify_notify_events))
    error_message = "clarify_notify_events must be a comma-separated list of created, answered, expired and cancelled."
  }
}

variable "clarify_webhook_url" {
  description = "A webhook told of every clarification event, signed with the key clarify_webhook_secret_parameter names; empty for none."
  type        = string
  default     = ""
  validation {
    condition     = can(regex("^(https?://.+)?$", var.clarify_webhook_url))
    error_message = "clarify_webhook_url must be an http(s):// URL, or empty."
  }
  validation {
    condition     = var.clarify_webhook_url == "" || var.clarify_webhook_secret_parameter != ""
    error_message = "clarify_webhook_url needs clarify_webhook_secret_parameter (the SSM SecureString holding the key of the events' signature)."
  }
}

# Secrets by name: each is an SSM SecureString the functions read once at
# start, so no secret is in a function's environment (which anyone who may
# read the function's configuration reads), in a variable or in the state.

variable "clarify_webhook_secret_parameter" {
  description = "The SSM SecureString holding the webhook's HMAC key (at least 16 characters), by its full name, e.g. /toolgate/webhook-secret."
  type        = string
  default     = ""
  validation {
    condition     = can(regex("^(/[a-zA-Z0-9_.-]+)*$", var.clarify_webhook_secret_parameter))
    error_message = "clarify_webhook_secret_parameter must be an SSM parameter's full name such as /toolgate/webhook-secret, or empty."
  }
}

variable "clarify_slack_webhook_url_parameter" {
  description = "The SSM SecureString holding a Slack incoming webhook's URL (its credential), told of every clarification event; empty for none."
  type        = string
  default     = ""
  validation {
    condition     = can(regex("^(/[a-zA-Z0-9_.-]+)*$", var.clarify_slack_webhook_url_parameter))
    error_message = "clarify_slack_webhook_url_parameter must be an SSM parameter's full name such as /toolgate/slack-webhook-url, or empty."
  }
}

variable "slack_signing_secret_parameter" {
  description = "The SSM SecureString holding your Slack app's signing secret, so that approvers can decide from Slack; only the clarify function reads it. Empty for none."
  type        = string
  default     = ""
  validation {
    condition     = can(regex("^(/[a-zA-Z0-9_.-]+)*$", var.slack_signing_secret_parameter))
    error_message = "slack_signing_secret_parameter must be an SSM parameter's full name such as /toolgate/slack-signing-secret, or empty."
  }
}

# Who may decide approvals (docs/approvals.md, "Who can approve"). With none
# of these, no Slack app and no link-holder mode, nobody can approve a gated
# call: it waits until it expires.

variable "approvers_jwt_group" {
  description = "auth_mode = JWT: a JWT whose approvers_jwt_claim lists this group is an approver (e.g. a Cognito group \"toolgate-approvers\"); empty for none."
  type        = string
  default     = ""
  validation {
    condition     = can(regex("^\\S*$", var.approvers_jwt_group))
    error_message = "approvers_jwt_group must be a group name without spaces, or empty."
  }
}

variable "approvers_jwt_audience" {
  description = "auth_mode = JWT: the audience of the tokens people sign in with (for Cognito, the app client ids approvers use), comma-separated. Set, the approvers' routes take only these tokens (an authorizer of their own) and no other route takes them; empty, the approvers' routes take the agents' tokens (jwt_audience)."
  type        = string
  default     = ""
  validation {
    condition     = can(regex("^([^,\\s]+(,[^,\\s]+)*)?$", var.approvers_jwt_audience))
    error_message = "approvers_jwt_audience must be app client ids (audiences) separated by commas, without spaces, or empty."
  }
  validation {
    condition     = var.approvers_jwt_audience == "" || length(setintersection(split(",", var.approvers_jwt_audience), split(",", var.jwt_audience))) == 0
    error_message = "approvers_jwt_audience names the app clients people sign in with, none of the agents' (jwt_audience): an agent's token must not reach the approvers' routes."
  }
}

variable "approvers_jwt_claim" {
  description = "The JWT claim that lists the user's groups."
  type        = string
  default     = "cognito:groups"
  validation {
    condition     = can(regex("^\\S+$", var.approvers_jwt_claim))
    error_message = "approvers_jwt_claim must be a claim name without spaces."
  }
}

variable "approvers_iam_arns" {
  description = "auth_mode = IAM: comma-separated IAM user ARNs, as API Gateway reports the caller (arn:aws:iam::123456789012:user/alice), that are approvers; not roles (anyone who may assume one names its session); empty for none."
  type        = string
  default     = ""
  validation {
    condition     = can(regex("^(arn:aws[a-z-]*:iam::[0-9]{12}:user/[^,\\s]+(, ?arn:aws[a-z-]*:iam::[0-9]{12}:user/[^,\\s]+)*)?$", var.approvers_iam_arns))
    error_message = "approvers_iam_arns must be comma-separated IAM user ARNs such as arn:aws:iam::123456789012:user/alice, or empty."
  }
}

variable "approvers_slack_users" {
  description = "Comma-separated Slack user ids (U012ABCDEF) who may approve with the Slack message's buttons, or * for anyone the message reaches. The messages carry buttons only when this is set (and slack_signing_secret_parameter names your Slack app's signing secret)."
  type        = string
  default     = ""
  validation {
    condition     = can(regex("^(\\*|[A-Z0-9]{2,32}(, ?[A-Z0-9]{2,32})*)?$", var.approvers_slack_users))
    error_message = "approvers_slack_users must be comma-separated Slack user ids such as U012ABCDEF, or *, or empty."
  }
}

variable "approvals_link_holder" {
  description = "\"true\": whoever holds a channel's link (webhook, Slack, email) may decide, with no sign-in. Off unless you choose it."
  type        = string
  default     = "false"
  validation {
    condition     = contains(["false", "true"], var.approvals_link_holder)
    error_message = "approvals_link_holder must be \"false\" or \"true\"."
  }
}

variable "protect_tables" {
  description = "Deletion protection on the sessions and clarify tables (the approvals record), as the SAM template retains them: destroy then stops at the tables until this is false."
  type        = bool
  default     = true
}

variable "tags" {
  description = "Tags for every resource that takes them."
  type        = map(string)
  default     = {}
}

terraform {
  # 1.9: a variable's validation may refer to other variables ("subnets
  # need security groups", "JWT needs an issuer").
  required_version = ">= 1.9.0"

  required_providers {
    aws = {
      source = "hashicorp/aws"
      # 5.40: aws_lambda_function.logging_config.
      version = ">= 5.40.0, < 7.0.0"
    }
  }
}

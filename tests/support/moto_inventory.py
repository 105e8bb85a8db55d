#!/usr/bin/env python3
"""What a moto server holds, by kind, in the regions given, as JSON.

    python moto_inventory.py ENDPOINT REGION...

Prints {"roles": [...], "<region>": {"functions": [...], ...}, ...}: the
names of IAM roles (global) and, per region, Lambda functions, DynamoDB
tables, SNS topics, state machines, HTTP APIs, log groups and EventBridge
rules. It also asks ValidateStateMachineDefinition (moto_serial.py's
stand-in) about a definition AWS refuses, under "refused": its result.
"""

import json
import sys

import boto3


def client(service, endpoint, region):
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name=region,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def main(endpoint, regions):
    out = {
        "roles": sorted(
            r["RoleName"] for r in client("iam", endpoint, regions[0]).list_roles()["Roles"]
        )
    }
    for region in regions:
        c = lambda s: client(s, endpoint, region)  # noqa: E731
        out[region] = {
            "functions": sorted(f["FunctionName"] for f in c("lambda").list_functions()["Functions"]),
            "tables": sorted(c("dynamodb").list_tables()["TableNames"]),
            "topics": sorted(t["TopicArn"].split(":")[-1] for t in c("sns").list_topics()["Topics"]),
            "state_machines": sorted(
                m["name"] for m in c("stepfunctions").list_state_machines()["stateMachines"]
            ),
            "apis": sorted(a["Name"] for a in c("apigatewayv2").get_apis()["Items"]),
            "log_groups": sorted(
                g["logGroupName"] for g in c("logs").describe_log_groups()["logGroups"]
            ),
            "rules": sorted(r["Name"] for r in c("events").list_rules()["Rules"]),
        }
    # A Choice state's Default naming a state that does not exist.
    refused = {
        "StartAt": "A",
        "States": {
            "A": {"Type": "Choice", "Choices": [], "Default": "Missing"},
        },
    }
    answer = client("stepfunctions", endpoint, regions[0]).validate_state_machine_definition(
        definition=json.dumps(refused)
    )
    out["refused"] = {"result": answer["result"], "diagnostics": answer["diagnostics"]}
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])

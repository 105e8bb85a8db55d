#!/usr/bin/env python3
"""Does infra/terraform deploy what template.yaml deploys?

    python tf_parity.py TEMPLATE.yaml TERRAFORM_DIR [--dump] [--decisions=a,b,…]

Run it with the Python of the AWS tools venv (aws-sam-translator and
python-hcl2). Both sides are read into one model and compared:

  functions      runtime, architecture, handler, memory, timeout, the
                 environment's variable names, reserved concurrency, the VPC
                 (and when), the log group and its retention, and the IAM
                 statements of the function's role (effect, actions,
                 resources, conditions, and when they apply)
  routes         each route key, the function behind it, whether it takes
                 the authorizer, and which JWT authorizer when (the
                 approvers' routes: theirs once approvers_jwt_audience is
                 set, else the agents')
  api            integrations, invoke permissions, the stage (throttling,
                 access-log format), the JWT authorizers (when each exists,
                 issuer, audience)
  tables         keys, indexes, TTL, point-in-time recovery, encryption
  schedule       the sweep's rate, input and target
  state machine  its definition file, substitutions, type, logging, and its
                 role's statements
  parameters     every SAM parameter is a variable (snake_case) with the
                 same default
  outputs        every SAM output is an output (snake_case)

The SAM side is the template translated to CloudFormation (as
scripts/check-template does); the definition file comes from the template
itself. References are made comparable by naming what they point at, not
what it is called in either file: a function by its name
("{name}-python-execute"), a log group by its name, a table by its role
(SessionsTable and aws_dynamodb_table.sessions are "table:sessions").
A value present only when parameters are set (an `Fn::If` with
`AWS::NoValue`; a `compact([var…])` list) is written "VALUE when COND", and
a policy present only then has "when": COND, where COND is the canonical
"name != ''" (joined with " or " in name order) on both sides.
Anything this script cannot read is an error that names it: a module
written differently fails loudly rather than passing.

Two rules hold for the module on its own (template_rules.py checks the
same on the template): no function's environment takes a secret (a
`sensitive` variable, or one named like a secret that is not an SSM
parameter's name), and, with --decisions, no role but the clarify
function's may write those clarify-table attributes (a write needs a
dynamodb:Attributes condition that names none of them, and no ReturnValues
ALL_OLD/ALL_NEW).

Prints "parity: ok (N facts)" and exits 0, or prints a unified diff of the
two models (--- sam, +++ terraform) and each broken rule ("rule: …") and
exits 1. --dump prints both models.
"""

from __future__ import annotations

import difflib
import glob
import json
import os
import re
import sys


class Unreadable(Exception):
    """An expression or resource this script does not know how to read."""


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def statement_key(st: dict) -> str:
    return json.dumps(st, sort_keys=True)


def normalize_statements(statements: list) -> list:
    """Statements as a sorted list, one action list per statement."""
    out = []
    for st in statements:
        st = dict(st)
        st["actions"] = sorted(st["actions"])
        st["resources"] = sorted(st["resources"])
        out.append(st)
    return sorted(out, key=statement_key)


# ---------------------------------------------------------------- SAM side

PSEUDO = {
    "AWS::Partition": "{partition}",
    "AWS::Region": "{region}",
    "AWS::AccountId": "{account}",
    "AWS::StackName": "{name}",
    "AWS::URLSuffix": "{url_suffix}",
}


class Sam:
    def __init__(self, template_path: str):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from moto_deploy import translate
        from samtranslator.yaml_helper import yaml_parse

        self.base = os.path.dirname(os.path.abspath(template_path))
        with open(template_path) as f:
            self.raw = yaml_parse(f.read())
        self.t = translate(template_path)
        self.res = self.t["Resources"]
        self.params = self.t.get("Parameters", {})

    # A resource, named by what it is (see the module doc).
    def canon(self, logical: str) -> str:
        r = self.res.get(logical)
        if r is None:
            raise Unreadable(f"reference to {logical}, which is not a resource")
        kind, props = r["Type"], r.get("Properties", {})
        if kind == "AWS::Lambda::Function":
            return "function:" + self.value(props["FunctionName"])
        if kind == "AWS::Logs::LogGroup":
            return "loggroup:" + self.value(props["LogGroupName"])
        if kind == "AWS::DynamoDB::Table":
            return "table:" + snake(logical.removesuffix("Table"))
        if kind == "AWS::ApiGatewayV2::Api":
            return "api"
        if kind == "AWS::ApiGatewayV2::Authorizer":
            return "authorizer:" + self.value(props["Name"])
        if kind == "AWS::StepFunctions::StateMachine":
            return "statemachine:" + self.value(props["Name"])
        if kind == "AWS::ApiGatewayV2::Integration":
            return "integration:" + self.value(props["IntegrationUri"])
        if kind == "AWS::Events::Rule":
            (target,) = props["Targets"]
            return "rule:" + self.value(target["Arn"])
        if kind == "AWS::SNS::Topic":
            return "topic:" + self.value(props["TopicName"])
        raise Unreadable(f"no canonical name for {logical} ({kind})")

    def attr(self, logical: str, attr: str) -> str:
        kind = self.res.get(logical, {}).get("Type")
        if attr == "Arn":
            # CloudFormation's log-group ARN ends in ":*"; Terraform's does not.
            suffix = ":*" if kind == "AWS::Logs::LogGroup" else ""
            return f"arn({self.canon(logical)}){suffix}"
        raise Unreadable(f"Fn::GetAtt {logical}.{attr}")

    def ref(self, name: str) -> str:
        if name in PSEUDO:
            return PSEUDO[name]
        if name in self.params:
            return "{var.%s}" % snake(name)
        if name in self.res:
            kind = self.res[name]["Type"]
            if kind in ("AWS::Lambda::Function", "AWS::DynamoDB::Table", "AWS::Logs::LogGroup"):
                return f"id({self.canon(name)})"
            if kind == "AWS::SNS::Topic":
                return f"arn({self.canon(name)})"
            return f"ref({self.canon(name)})"
        raise Unreadable(f"Ref {name}")

    def value(self, node):
        """A property's value with references named canonically."""
        if isinstance(node, (str, int, float, bool)):
            return node
        if isinstance(node, list):
            return [self.value(v) for v in node]
        if isinstance(node, dict) and len(node) == 1:
            (fn, arg), = node.items()
            if fn == "Ref":
                return self.ref(arg)
            if fn == "Fn::GetAtt":
                logical, attr = arg if isinstance(arg, list) else arg.split(".", 1)
                return self.attr(logical, attr)
            if fn == "Fn::Sub":
                if not isinstance(arg, str):
                    raise Unreadable(f"Fn::Sub with variables: {arg}")

                def sub(m):
                    name = m.group(1)
                    if "." in name:
                        return self.attr(*name.split(".", 1))
                    return self.ref(name)

                return re.sub(r"\$\{([^}!]+)\}", sub, arg)
            if fn == "Fn::Join":
                sep, parts = arg
                return sep.join(str(self.value(p)) for p in parts)
            if fn == "Fn::Split":
                sep, whole = arg
                return f"split({sep!r}, {self.value(whole)})"
            if fn == "Fn::If" and arg[2] == {"Ref": "AWS::NoValue"}:
                return f"{self.value(arg[1])} when {self.cond_text(arg[0])}"
        if isinstance(node, dict):
            return {k: self.value(v) for k, v in node.items()}
        raise Unreadable(f"value {node!r}")

    def cond_text(self, name: str) -> str:
        """A Condition as the canonical "param != ''" (an Fn::Or of them
        joined with " or ", in name order); any other as its snake_case name."""

        def terms(node):
            if isinstance(node, dict) and list(node) == ["Condition"]:
                return terms(self.t["Conditions"][node["Condition"]])
            if isinstance(node, dict) and list(node) == ["Fn::Or"]:
                return [t for n in node["Fn::Or"] for t in terms(n)]
            try:
                (ref, empty), = [node["Fn::Not"][0]["Fn::Equals"]]
                if empty == "" and list(ref) == ["Ref"] and ref["Ref"] in self.params:
                    return [f"{snake(ref['Ref'])} != ''"]
            except (KeyError, TypeError, IndexError, ValueError):
                pass
            return None

        try:
            found = terms(self.t.get("Conditions", {})[name])
        except TypeError:
            found = None
        return " or ".join(sorted(set(found))) if found else snake(name)

    def cond_expr(self, node) -> str:
        """A Condition made of parameter tests as "name == VALUE" and
        "name != ''" terms, joined with " and " in order (as
        Terraform.condition reads `var.name == "VALUE" && …`)."""
        terms = []

        def walk(n):
            if isinstance(n, str):
                n = {"Condition": n}
            (fn, arg), = n.items()
            if fn == "Condition":
                return walk(self.t["Conditions"][arg])
            if fn == "Fn::And":
                return [walk(x) for x in arg]
            negated = fn == "Fn::Not"
            if negated:
                (fn, arg), = arg[0].items()
            if fn == "Fn::Equals" and list(arg[0]) == ["Ref"] and arg[0]["Ref"] in self.params \
                    and isinstance(arg[1], str) and (not negated or arg[1] == ""):
                name = snake(arg[0]["Ref"])
                return terms.append(f"{name} != ''" if negated else f"{name} == {arg[1]}")
            raise Unreadable(f"condition {n}")

        walk(node)
        return " and ".join(sorted(terms))

    def route_authorizer(self, node):
        """A route's AuthorizerId as "authorizer:NAME when COND[, else …]",
        each authorizer named only under the Condition it exists under."""
        if node is None or node == {"Ref": "AWS::NoValue"}:
            return None
        if isinstance(node, dict) and list(node) == ["Fn::If"]:
            cond, yes, no = node["Fn::If"]
            logical = yes.get("Ref") if isinstance(yes, dict) else None
            if self.res.get(logical, {}).get("Type") != "AWS::ApiGatewayV2::Authorizer":
                raise Unreadable(f"AuthorizerId {node}")
            when = self.cond_expr(cond)
            exists = self.res[logical].get("Condition")
            exists = self.cond_expr(exists) if exists else "always"
            if exists != when:
                raise Unreadable(f"AuthorizerId names {logical} when {when}, which exists when {exists}")
            rest = self.route_authorizer(no)
            return f"{self.canon(logical)} when {when}" + (f", else {rest}" if rest else "")
        raise Unreadable(f"AuthorizerId {node}")

    def conditional(self, node):
        """(condition, value) of a property that may be an Fn::If with NoValue."""
        if isinstance(node, dict) and list(node) == ["Fn::If"]:
            cond, yes, no = node["Fn::If"]
            if no == {"Ref": "AWS::NoValue"}:
                return self.cond_text(cond), yes
            raise Unreadable(f"Fn::If {cond} without NoValue")
        return None, node

    def statements(self, role_logical: str) -> list:
        role = self.res[role_logical]["Properties"]
        out = []
        for policy in role.get("Policies", []):
            when, policy = self.conditional(policy)
            for st in policy["PolicyDocument"]["Statement"]:
                actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
                resources = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
                cond = st.get("Condition")
                out.append({
                    "effect": st["Effect"],
                    "actions": actions,
                    "resources": [self.value(r) for r in resources],
                    "condition": self.value(cond) if cond else None,
                    "when": when,
                })
        return normalize_statements(out)

    def of_type(self, kind: str):
        return {k: v for k, v in self.res.items() if v["Type"] == kind}

    def when(self, condition):
        """A resource's Condition as `var != ''` (the one form used)."""
        if condition is None:
            return None
        d = self.t.get("Conditions", {}).get(condition)
        try:
            (ref, empty), = [d["Fn::Not"][0]["Fn::Equals"]]
            if empty == "":
                return f"{snake(ref['Ref'])} != ''"
        except (KeyError, TypeError, IndexError, ValueError):
            pass
        raise Unreadable(f"condition {condition}: {d}")

    def model(self) -> dict:
        m: dict = {"functions": {}, "routes": {}, "integrations": {}, "invoke_permissions": {}}
        for logical, r in self.of_type("AWS::Lambda::Function").items():
            p = r["Properties"]
            name = self.canon(logical)
            role = p["Role"]["Fn::GetAtt"][0]
            when_vpc, vpc = self.conditional(p.get("VpcConfig"))
            when_rc, rc = self.conditional(p.get("ReservedConcurrentExecutions"))
            # ReservePythonConcurrency is "the parameter is not 0".
            rc_when = "python_reserved_concurrency > 0" if when_rc == "reserve_python_concurrency" else when_rc
            log_group = self.value(p["LoggingConfig"]["LogGroup"])
            lg_logical = p["LoggingConfig"]["LogGroup"]["Ref"]
            m["functions"][name] = {
                "runtime": p["Runtime"],
                "architectures": p["Architectures"],
                "handler": p["Handler"],
                "memory": p["MemorySize"],
                "timeout": p["Timeout"],
                "description": p.get("Description"),
                "env": sorted(p.get("Environment", {}).get("Variables", {})),
                "reserved_concurrency": {"when": rc_when, "value": self.value(rc)} if rc is not None else None,
                "vpc": {"when": when_vpc, "subnets": self.value(vpc["SubnetIds"]),
                        "security_groups": self.value(vpc["SecurityGroupIds"])} if vpc else None,
                "log_group": log_group,
                "log_retention": self.value(self.res[lg_logical]["Properties"]["RetentionInDays"]),
                "permissions": self.statements(role),
            }
        for r in self.of_type("AWS::ApiGatewayV2::Route").values():
            p = r["Properties"]
            target = p["Target"]["Fn::Sub"]
            integ = re.fullmatch(r"integrations/\$\{(\w+)\}", target).group(1)
            function = self.value(self.res[integ]["Properties"]["IntegrationUri"])
            authorized = p["AuthorizationType"] != "NONE"
            m["routes"][p["RouteKey"]] = {
                "function": function,
                "authorized": authorized,
                # Each authorizer is attached only when it exists.
                "authorizer": self.route_authorizer(p.get("AuthorizerId")),
            }
            if authorized and p["AuthorizationType"] != {
                "Fn::If": ["UseJwt", "JWT", {"Fn::If": ["UseIam", "AWS_IAM", "NONE"]}]
            }:
                raise Unreadable(f"route {p['RouteKey']}: authorization {p['AuthorizationType']}")
        for r in self.of_type("AWS::ApiGatewayV2::Integration").values():
            p = r["Properties"]
            m["integrations"][self.value(p["IntegrationUri"])] = {
                "type": p["IntegrationType"],
                "payload_format": p["PayloadFormatVersion"],
                "timeout_ms": p["TimeoutInMillis"],
            }
        for r in self.of_type("AWS::Lambda::Permission").values():
            p = r["Properties"]
            fn = self.value(p["FunctionName"])
            m["invoke_permissions"].setdefault(fn, []).append(
                {"principal": p["Principal"], "source": self.value(p["SourceArn"])}
            )
        for v in m["invoke_permissions"].values():
            v.sort(key=statement_key)
        (stage,) = self.of_type("AWS::ApiGatewayV2::Stage").values()
        sp = stage["Properties"]
        m["stage"] = {
            "name": sp["StageName"],
            "auto_deploy": sp["AutoDeploy"],
            "throttling": [sp["DefaultRouteSettings"]["ThrottlingBurstLimit"],
                           sp["DefaultRouteSettings"]["ThrottlingRateLimit"]],
            "access_log": self.value(sp["AccessLogSettings"]["DestinationArn"]),
            "access_log_format": json.loads(sp["AccessLogSettings"]["Format"]),
        }
        (api,) = self.of_type("AWS::ApiGatewayV2::Api").values()
        m["api"] = {"name": self.value(api["Properties"]["Name"]),
                    "protocol": api["Properties"]["ProtocolType"]}
        m["authorizers"] = {}
        for logical, authz in self.of_type("AWS::ApiGatewayV2::Authorizer").items():
            ap = authz["Properties"]
            m["authorizers"][self.canon(logical)] = {
                "when": self.cond_expr(authz["Condition"]) if "Condition" in authz else None,
                "type": ap["AuthorizerType"],
                "identity": ap["IdentitySource"],
                "issuer": self.value(ap["JwtConfiguration"]["Issuer"]),
                "audience": self.value(ap["JwtConfiguration"]["Audience"]),
            }
        m["tables"] = {}
        for logical, r in self.of_type("AWS::DynamoDB::Table").items():
            p = r["Properties"]
            m["tables"][self.canon(logical)] = {
                "billing": p["BillingMode"],
                "attributes": {a["AttributeName"]: a["AttributeType"] for a in p["AttributeDefinitions"]},
                "key": {k["KeyType"]: k["AttributeName"] for k in p["KeySchema"]},
                "indexes": {
                    g["IndexName"]: {
                        "key": {k["KeyType"]: k["AttributeName"] for k in g["KeySchema"]},
                        "projection": g["Projection"]["ProjectionType"],
                    }
                    for g in p.get("GlobalSecondaryIndexes", [])
                },
                "ttl": p["TimeToLiveSpecification"]["AttributeName"]
                if p["TimeToLiveSpecification"]["Enabled"] else None,
                "pitr": p["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"],
                "sse": p["SSESpecification"]["SSEEnabled"],
            }
        m["schedules"] = []
        for r in self.of_type("AWS::Events::Rule").values():
            p = r["Properties"]
            for target in p["Targets"]:
                m["schedules"].append({
                    "expression": p["ScheduleExpression"],
                    "description": p.get("Description"),
                    "target": self.value(target["Arn"]),
                    "input": json.loads(target["Input"]),
                })
        m["log_groups"] = sorted(
            self.canon(k) for k in self.of_type("AWS::Logs::LogGroup")
        )
        m["topics"] = {
            self.canon(k): {"kms": r["Properties"].get("KmsMasterKeyId")}
            for k, r in self.of_type("AWS::SNS::Topic").items()
        }
        m["subscriptions"] = sorted(
            (
                {
                    "topic": self.value(r["Properties"]["TopicArn"]),
                    "protocol": r["Properties"]["Protocol"],
                    "endpoint": self.value(r["Properties"]["Endpoint"]),
                    "when": self.when(r.get("Condition")),
                }
                for r in self.of_type("AWS::SNS::Subscription").values()
            ),
            key=json.dumps,
        )
        (sm_logical, sm), = self.of_type("AWS::StepFunctions::StateMachine").items()
        sp = sm["Properties"]
        raw = self.raw["Resources"][sm_logical]["Properties"]
        logging = sp["LoggingConfiguration"]
        m["state_machine"] = {
            "name": self.value(sp["StateMachineName"]),
            "type": sp["StateMachineType"],
            "definition": os.path.normpath(os.path.join(self.base, raw["DefinitionUri"])),
            "substitutions": {k: self.value(v) for k, v in sp["DefinitionSubstitutions"].items()},
            "logging": {
                "level": logging["Level"],
                "include_execution_data": logging["IncludeExecutionData"],
                "destination": self.value(logging["Destinations"][0]["CloudWatchLogsLogGroup"]["LogGroupArn"]),
            },
            "permissions": self.statements(sp["RoleArn"]["Fn::GetAtt"][0]),
        }
        m["parameters"] = {
            snake(k): (v.get("Default") if v["Type"] != "CommaDelimitedList"
                       else [x for x in v.get("Default", "").split(",") if x])
            for k, v in self.params.items()
        }
        m["outputs"] = sorted(snake(k) for k in self.t.get("Outputs", {}))
        return m


# ---------------------------------------------------------------- Terraform side

DATA = {
    "data.aws_partition.current.partition": "{partition}",
    "data.aws_partition.current.dns_suffix": "{url_suffix}",
    "local.region": "{region}",
    "data.aws_caller_identity.current.account_id": "{account}",
    "var.name": "{name}",
}
# What each attribute of a resource is, in the SAM side's terms.
ATTRS = {"arn": "arn", "name": "id", "function_name": "id", "id": "ref"}


# Blocks that may repeat, so stay lists; any other block is given once and
# python-hcl2's one-element list is unwrapped.
REPEATED = {"statement", "condition", "attribute", "global_secondary_index", "dynamic",
            "resource", "data", "locals", "variable", "output", "validation", "principals"}


def unwrap_blocks(node, key=None):
    if isinstance(node, dict):
        return {k: unwrap_blocks(v, k) for k, v in node.items()}
    if isinstance(node, list):
        items = [unwrap_blocks(v) for v in node]
        if key not in REPEATED and len(items) == 1 and isinstance(items[0], dict):
            return items[0]
        return items
    return node


class Terraform:
    def __init__(self, tf_dir: str):
        import hcl2
        from hcl2 import SerializationOptions

        opts = SerializationOptions(with_comments=False, explicit_blocks=False, strip_string_quotes=True)
        self.dir = os.path.abspath(tf_dir)
        self.resources: dict = {}
        self.data: dict = {}
        self.locals: dict = {}
        self.variables: dict = {}
        self.outputs: dict = {}
        files = sorted(glob.glob(os.path.join(self.dir, "*.tf")))
        if not files:
            raise Unreadable(f"no .tf files in {tf_dir}")
        for path in files:
            with open(path) as f:
                doc = unwrap_blocks(hcl2.load(f, serialization_options=opts))
            for block in doc.get("resource", []):
                for kind, named in block.items():
                    for name, body in named.items():
                        self.resources[(kind, name)] = body
            for block in doc.get("data", []):
                for kind, named in block.items():
                    for name, body in named.items():
                        self.data[(kind, name)] = body
            for block in doc.get("locals", []):
                self.locals.update(block)
            for block in doc.get("variable", []):
                self.variables.update(block)
            for block in doc.get("output", []):
                self.outputs.update(block)

    # -- expressions

    def instances(self, kind: str, name: str) -> dict:
        """key -> (condition, each.value) of a resource or data source."""
        body = self.resources.get((kind, name)) or self.data.get((kind, name))
        if body is None:
            raise Unreadable(f"{kind}.{name} is not defined")
        fe = body.get("for_each")
        if fe is None:
            if "count" in body:
                m = re.fullmatch(r"\$\{(.+) \? 1 : 0\}", body["count"])
                if not m:
                    raise Unreadable(f"{kind}.{name}: count {body['count']}")
                return {0: (self.condition(m.group(1)), None)}
            return {None: (None, None)}
        m = re.fullmatch(r"\$\{local\.(\w+)\}", fe)
        if m and isinstance(self.locals[m.group(1)], str):
            return self.lists_by_key(m.group(1))
        if m:
            return {k: (None, v) for k, v in self.locals[m.group(1)].items()}
        # local.in_vpc ? toset([for f, spec in local.functions : f if spec.vpc]) : toset([])
        m = re.fullmatch(
            r"\$\{local\.(\w+) \? toset\(\[for (\w+), (\w+) in local\.(\w+) : \2 if \3\.(\w+)\]\) : toset\(\[\]\)\}", fe
        )
        if m:
            cond, _, _, src, field = m.groups()
            return {k: (cond, v) for k, v in self.locals[src].items() if v[field] is True}
        raise Unreadable(f"{kind}.{name}: for_each {fe}")

    def lists_by_key(self, local: str) -> dict:
        """key -> (condition, items) of a local of the one form
        `{for k, names in local.SRC : k => [for n in names : "TEMPLATE"] if
        length(names) > 0}`, where each of SRC's values is `compact([var.a,
        …])`: each item is "TEMPLATE with n = var.a when a != ''", and a key
        is there when any of its variables is set."""
        expr = self.locals[local]
        m = re.fullmatch(
            r'\$\{\{for (\w+), (\w+) in local\.(\w+) : \1 => \[for (\w+) in \2 : "(.+)"\] if length\(\2\) > 0\}\}',
            expr,
        )
        if not m:
            raise Unreadable(f"local.{local} {expr}")
        _, _, src, item, template = m.groups()
        out = {}
        for key, value in self.locals[src].items():
            c = re.fullmatch(r"\$\{compact\(\[(.+)\]\)\}", value)
            if not c:
                raise Unreadable(f"local.{src}.{key} {value}")
            names = [n.strip() for n in c.group(1).split(",")]
            if not all(re.fullmatch(r"var\.\w+", n) for n in names):
                raise Unreadable(f"local.{src}.{key} {value}")
            items = [
                "%s when %s != ''" % (self.expr(template.replace("${%s}" % item, "${%s}" % n)), n[4:])
                for n in names
            ]
            out[key] = (" or ".join(sorted(f"{n[4:]} != ''" for n in names)), items)
        return out

    def condition(self, expr: str) -> str:
        """`var.a == "V" && var.b != ""` as Sam.cond_expr writes it."""
        terms = []
        for term in expr.split(" && "):
            m = re.fullmatch(r'var\.(\w+) == "(\w+)"', term)
            n = re.fullmatch(r'var\.(\w+) != ""', term)
            if m:
                terms.append(f"{m.group(1)} == {m.group(2)}")
            elif n:
                terms.append(f"{n.group(1)} != ''")
            else:
                raise Unreadable(f"condition {expr}")
        return " and ".join(sorted(terms))

    def route_authorizer(self, expr: str, spec: dict):
        """A route's authorizer_id, a chain `COND ? aws_apigatewayv2_authorizer.X[0].id
        : … : null` whose COND tests each.value.auth and variables, for one
        route: "authorizer:NAME when COND[, else …]" (as Sam.route_authorizer)."""
        m = re.fullmatch(r"\$\{(.+)\}", expr)
        if not m:
            raise Unreadable(f"authorizer_id {expr}")
        rest, out = m.group(1), []
        while rest != "null":
            c = re.fullmatch(r"(.+?) \? aws_apigatewayv2_authorizer\.(\w+)\[0\]\.id : (.+)", rest)
            if not c:
                raise Unreadable(f"authorizer_id {expr}")
            cond, name, rest = c.groups()
            holds, var_terms = True, []
            for term in cond.split(" && "):
                e = re.fullmatch(r'each\.value\.auth (==|!=) "(\w+)"', term)
                if e:
                    holds = holds and ((spec["auth"] == e.group(2)) == (e.group(1) == "=="))
                else:
                    var_terms.append(term)
            if not holds:
                continue
            when = self.condition(" && ".join(var_terms))
            ((_, (exists, _)),) = self.instances("aws_apigatewayv2_authorizer", name).items()
            if exists != when:
                raise Unreadable(f"authorizer_id names aws_apigatewayv2_authorizer.{name} when {when}, "
                                 f"which exists when {exists}")
            out.append(f"{self.canon('aws_apigatewayv2_authorizer', name, 0)} when {when}")
        return ", else ".join(out) or None

    def canon(self, kind: str, name: str, key) -> str:
        """A resource instance named by what it is (as Sam.canon)."""
        body = self.resources.get((kind, name))
        if body is None:
            raise Unreadable(f"{kind}.{name} is not a resource")
        ctx = (key, self.instances(kind, name).get(key, (None, None))[1])
        if kind == "aws_lambda_function":
            return "function:" + self.expr(body["function_name"], ctx)
        if kind == "aws_cloudwatch_log_group":
            return "loggroup:" + self.expr(body["name"], ctx)
        if kind == "aws_dynamodb_table":
            return "table:" + name
        if kind == "aws_apigatewayv2_api":
            return "api"
        if kind == "aws_apigatewayv2_authorizer":
            return "authorizer:" + self.expr(body["name"], ctx)
        if kind == "aws_sfn_state_machine":
            return "statemachine:" + self.expr(body["name"], ctx)
        if kind == "aws_apigatewayv2_integration":
            return "integration:" + self.expr(body["integration_uri"], ctx)
        if kind == "aws_cloudwatch_event_rule":
            (target,) = [
                t for (k, _), t in self.resources.items()
                if k == "aws_cloudwatch_event_target" and t["rule"] == "${%s.%s.name}" % (kind, name)
            ]
            return "rule:" + self.expr(target["arn"])
        if kind == "aws_sns_topic":
            return "topic:" + self.expr(body["name"], ctx)
        raise Unreadable(f"no canonical name for {kind}.{name}")

    def reference(self, ref: str, ctx) -> str:
        """One `${...}` reference, in the SAM side's terms."""
        key, value = ctx
        if ref in DATA:
            return DATA[ref]
        if ref == "each.key":
            return key
        if ref == "each.value":
            return value
        m = re.fullmatch(r"each\.value\.(\w+)", ref)
        if m:
            return value[m.group(1)]
        m = re.fullmatch(r"var\.(\w+)", ref)
        if m:
            return "{var.%s}" % m.group(1)
        m = re.fullmatch(r"local\.(\w+)\[(.+)\]", ref)
        if m and m.group(1) == "function_names":
            return "{name}-" + self.index(m.group(2), ctx)
        m = re.fullmatch(r"local\.(\w+)", ref)
        if m:
            return self.expr(self.locals[m.group(1)], ctx)
        m = re.fullmatch(r"(aws_\w+)\.(\w+)(?:\[(.+?)\])?\.(\w+)", ref)
        if m:
            kind, name, index, attr = m.groups()
            inst = self.index(index, ctx) if index is not None else None
            if attr == "execution_arn":
                # What the template spells out with Fn::Sub.
                return f"arn:{{partition}}:execute-api:{{region}}:{{account}}:ref({self.canon(kind, name, inst)})"
            if attr not in ATTRS:
                raise Unreadable(f"attribute {attr} of {kind}.{name}")
            return f"{ATTRS[attr]}({self.canon(kind, name, inst)})"
        raise Unreadable(f"reference ${{{ref}}}")

    def index(self, index: str, ctx):
        if index == "each.key":
            return ctx[0]
        if re.fullmatch(r"\d+", index):
            return int(index)
        m = re.fullmatch(r'"([^"]+)"', index)
        if m:
            return m.group(1)
        raise Unreadable(f"index [{index}]")

    def expr(self, value, ctx=(None, None)):
        """A value with its references named canonically."""
        if isinstance(value, list):
            return [self.expr(v, ctx) for v in value]
        if isinstance(value, dict):
            return {k: self.expr(v, ctx) for k, v in value.items()}
        if not isinstance(value, str):
            return value
        whole = re.fullmatch(r"\$\{tostring\((.+)\)\}", value)
        if whole:
            return self.expr("${%s}" % whole.group(1), ctx)
        whole = re.fullmatch(r'\$\{split\("([^"]*)", ([^{}]+)\)\}', value)
        if whole:
            return f"split({whole.group(1)!r}, {self.reference(whole.group(2), ctx)})"
        whole = re.fullmatch(r"\$\{([^{}]+)\}", value)
        if whole:
            # One reference alone keeps its type (a number stays a number).
            return self.reference(whole.group(1), ctx)
        return re.sub(r"\$\{([^{}]+)\}", lambda m: str(self.reference(m.group(1), ctx)), value)

    # -- the model

    def policy_statements(self, data_name: str, key, when) -> list:
        doc = self.data[("aws_iam_policy_document", data_name)]
        ctx = (key, self.instances("aws_iam_policy_document", data_name).get(key, (None, None))[1])
        out = []
        for st in doc["statement"]:
            cond = None
            for c in st.get("condition", []):
                cond = cond or {}
                vals = self.expr(c["values"], ctx)
                cond.setdefault(c["test"], {})[c["variable"]] = vals[0] if len(vals) == 1 else vals
            out.append({
                "effect": st.get("effect", "Allow"),
                "actions": st["actions"],
                "resources": self.expr(st["resources"], ctx),
                "condition": cond,
                "when": when,
            })
        return out

    def role_statements(self, role_ref: str, role_key) -> list:
        """Every statement of every aws_iam_role_policy on one role instance."""
        out = []
        for (kind, name), body in self.resources.items():
            if kind != "aws_iam_role_policy":
                continue
            for key, (when, _) in self.instances(kind, name).items():
                m = re.fullmatch(r"\$\{aws_iam_role\.(\w+)(?:\[(.+?)\])?\.id\}", body["role"])
                if not m:
                    raise Unreadable(f"{kind}.{name}: role {body['role']}")
                r_key = self.index(m.group(2), (key, None)) if m.group(2) else None
                if (m.group(1), r_key) != (role_ref, role_key):
                    continue
                p = re.fullmatch(r"\$\{data\.aws_iam_policy_document\.(\w+)(?:\[(.+?)\])?\.json\}", body["policy"])
                if not p:
                    raise Unreadable(f"{kind}.{name}: policy {body['policy']}")
                d_key = self.index(p.group(2), (key, None)) if p.group(2) else None
                out += self.policy_statements(p.group(1), d_key, when)
        return normalize_statements(out)

    def model(self) -> dict:
        m: dict = {"functions": {}, "routes": {}, "integrations": {}, "invoke_permissions": {}}
        fn = self.resources[("aws_lambda_function", "this")]
        for key, (_, spec) in self.instances("aws_lambda_function", "this").items():
            ctx = (key, spec)
            name = self.canon("aws_lambda_function", "this", key)
            role = re.fullmatch(r"\$\{aws_iam_role\.(\w+)\[each\.key\]\.arn\}", fn["role"])
            if not role:
                raise Unreadable(f"aws_lambda_function.this: role {fn['role']}")
            rc = fn["reserved_concurrent_executions"]
            rcm = re.fullmatch(
                r'\$\{each\.key == "([\w-]+)" && var\.(\w+) > 0 \? var\.\2 : -1\}', rc
            )
            if not rcm:
                raise Unreadable(f"reserved_concurrent_executions {rc}")
            vpc = None
            for dyn in fn.get("dynamic", []):
                if "vpc_config" in dyn:
                    d = dyn["vpc_config"]
                    if d["for_each"] != "${each.value.vpc && local.in_vpc ? [1] : []}":
                        raise Unreadable(f"vpc_config for_each {d['for_each']}")
                    if spec["vpc"]:
                        c = d["content"]
                        vpc = {"when": "in_vpc", "subnets": self.expr(c["subnet_ids"], ctx),
                               "security_groups": self.expr(c["security_group_ids"], ctx)}
            env_ref = re.fullmatch(r"\$\{local\.(\w+)\[each\.key\]\}", fn["environment"]["variables"])
            if not env_ref:
                raise Unreadable(f"environment {fn['environment']['variables']}")
            lg = re.fullmatch(r"\$\{aws_cloudwatch_log_group\.(\w+)\[each\.key\]\.name\}",
                              fn["logging_config"]["log_group"])
            if not lg:
                raise Unreadable(f"logging_config {fn['logging_config']}")
            lg_body = self.resources[("aws_cloudwatch_log_group", lg.group(1))]
            m["functions"][name] = {
                "runtime": fn["runtime"],
                "architectures": fn["architectures"],
                "handler": fn["handler"],
                "memory": self.expr(fn["memory_size"], ctx),
                "timeout": self.expr(fn["timeout"], ctx),
                "description": self.expr(fn["description"], ctx),
                "env": sorted(self.locals[env_ref.group(1)][key]),
                "reserved_concurrency": {"when": f"{rcm.group(2)} > 0", "value": "{var.%s}" % rcm.group(2)}
                if key == rcm.group(1) else None,
                "vpc": vpc,
                "log_group": "id(%s)" % self.canon("aws_cloudwatch_log_group", lg.group(1), key),
                "log_retention": self.expr(lg_body["retention_in_days"], ctx),
                "permissions": self.role_statements(role.group(1), key),
            }
        routes = self.resources[("aws_apigatewayv2_route", "this")]
        self.check_authorization_type()
        for key, (_, spec) in self.instances("aws_apigatewayv2_route", "this").items():
            ctx = (key, spec)
            if self.expr(routes["route_key"], ctx) != key:
                raise Unreadable("route_key is not each.key")
            target = re.fullmatch(r"integrations/\$\{aws_apigatewayv2_integration\.(\w+)\[each\.value\.function\]\.id\}",
                                  routes["target"])
            if not target:
                raise Unreadable(f"route target {routes['target']}")
            integ = self.resources[("aws_apigatewayv2_integration", target.group(1))]
            auth = routes["authorization_type"]
            if auth != '${each.value.auth == "open" ? "NONE" : local.authorization_type}':
                raise Unreadable(f"authorization_type {auth}")
            if spec["auth"] not in ("open", "callers", "approvers"):
                raise Unreadable(f"route {key}: auth {spec['auth']!r}")
            m["routes"][key] = {
                "function": self.expr(integ["integration_uri"], (spec["function"], None)),
                "authorized": spec["auth"] != "open",
                "authorizer": self.route_authorizer(routes["authorizer_id"], spec),
            }
        integ = self.resources[("aws_apigatewayv2_integration", "function")]
        for key, (_, spec) in self.instances("aws_apigatewayv2_integration", "function").items():
            ctx = (key, spec)
            m["integrations"][self.expr(integ["integration_uri"], ctx)] = {
                "type": integ["integration_type"],
                "payload_format": integ["payload_format_version"],
                "timeout_ms": integ["timeout_milliseconds"],
            }
        for (kind, name), body in self.resources.items():
            if kind != "aws_lambda_permission":
                continue
            for key, (_, spec) in self.instances(kind, name).items():
                ctx = (key, spec)
                fn_name = self.expr(body["function_name"], ctx)
                m["invoke_permissions"].setdefault(fn_name, []).append(
                    {"principal": body["principal"], "source": self.expr(body["source_arn"], ctx)}
                )
        for v in m["invoke_permissions"].values():
            v.sort(key=statement_key)
        (stage,) = [b for (k, _), b in self.resources.items() if k == "aws_apigatewayv2_stage"]
        m["stage"] = {
            "name": stage["name"],
            "auto_deploy": stage["auto_deploy"],
            "throttling": [stage["default_route_settings"]["throttling_burst_limit"],
                           stage["default_route_settings"]["throttling_rate_limit"]],
            "access_log": self.expr(stage["access_log_settings"]["destination_arn"]) + ":*",
            "access_log_format": json.loads(stage["access_log_settings"]["format"]),
        }
        api = self.resources[("aws_apigatewayv2_api", "this")]
        m["api"] = {"name": self.expr(api["name"]), "protocol": api["protocol_type"]}
        m["authorizers"] = {}
        for (kind, name), authz in self.resources.items():
            if kind != "aws_apigatewayv2_authorizer":
                continue
            ((_, (when, _)),) = self.instances(kind, name).items()
            m["authorizers"][self.canon(kind, name, 0)] = {
                "when": when,
                "type": authz["authorizer_type"],
                "identity": authz["identity_sources"],
                "issuer": self.expr(authz["jwt_configuration"]["issuer"]),
                "audience": self.expr(authz["jwt_configuration"]["audience"]),
            }
        m["tables"] = {}
        for (kind, name), t in self.resources.items():
            if kind != "aws_dynamodb_table":
                continue
            attrs = t["attribute"] if isinstance(t["attribute"], list) else [t["attribute"]]
            gsis = t.get("global_secondary_index", [])
            gsis = gsis if isinstance(gsis, list) else [gsis]

            def key_of(b):
                k = {"HASH": b["hash_key"]}
                if "range_key" in b:
                    k["RANGE"] = b["range_key"]
                return k

            m["tables"][self.canon(kind, name, None)] = {
                "billing": t["billing_mode"],
                "attributes": {a["name"]: a["type"] for a in attrs},
                "key": key_of(t),
                "indexes": {g["name"]: {"key": key_of(g), "projection": g["projection_type"]} for g in gsis},
                "ttl": t["ttl"]["attribute_name"] if t["ttl"]["enabled"] else None,
                "pitr": t["point_in_time_recovery"]["enabled"],
                "sse": t["server_side_encryption"]["enabled"],
            }
        m["schedules"] = []
        for (kind, name), target in self.resources.items():
            if kind != "aws_cloudwatch_event_target":
                continue
            rule_ref = re.fullmatch(r"\$\{aws_cloudwatch_event_rule\.(\w+)\.name\}", target["rule"])
            rule = self.resources[("aws_cloudwatch_event_rule", rule_ref.group(1))]
            m["schedules"].append({
                "expression": rule["schedule_expression"],
                "description": rule.get("description"),
                "target": self.expr(target["arn"]),
                "input": json.loads(target["input"]),
            })
        m["log_groups"] = sorted(
            self.canon(kind, name, key)
            for (kind, name) in self.resources
            if kind == "aws_cloudwatch_log_group"
            for key in self.instances(kind, name)
        )
        m["topics"] = {
            self.canon(kind, name, None): {"kms": body.get("kms_master_key_id")}
            for (kind, name), body in self.resources.items()
            if kind == "aws_sns_topic"
        }
        subs = []
        for (kind, name), body in self.resources.items():
            if kind != "aws_sns_topic_subscription":
                continue
            when = None
            if "count" in body:
                c = re.fullmatch(r'\$\{var\.(\w+) != "" \? 1 : 0\}', str(body["count"]))
                if not c:
                    raise Unreadable(f"{kind}.{name} count {body['count']}")
                when = f"{c.group(1)} != ''"
            subs.append({
                "topic": self.expr(body["topic_arn"]),
                "protocol": body["protocol"],
                "endpoint": self.expr(body["endpoint"]),
                "when": when,
            })
        m["subscriptions"] = sorted(subs, key=json.dumps)
        sm = self.resources[("aws_sfn_state_machine", "clarify_then_run")]
        d = re.fullmatch(r'\$\{templatefile\("\$\{path\.module\}/([^"]+)", \{(.*)\}\)\}', sm["definition"], re.S)
        if not d:
            raise Unreadable(f"state machine definition {sm['definition']}")
        subs = dict(re.findall(r"(\w+)\s*=\s*([^\n,]+)", d.group(2)))
        role = re.fullmatch(r"\$\{aws_iam_role\.(\w+)\.arn\}", sm["role_arn"]).group(1)
        logging = sm["logging_configuration"]
        m["state_machine"] = {
            "name": self.expr(sm["name"]),
            "type": sm["type"],
            "definition": os.path.normpath(os.path.join(self.dir, d.group(1))),
            "substitutions": {k: self.expr("${%s}" % v.strip()) for k, v in subs.items()},
            "logging": {
                "level": logging["level"],
                "include_execution_data": logging["include_execution_data"],
                "destination": self.expr(logging["log_destination"]),
            },
            "permissions": self.role_statements(role, None),
        }
        m["parameters"] = {}
        for name, v in self.variables.items():
            if name in ("name", "lambda_build_dir", "tags", "protect_tables"):
                # What SAM finds itself (stack name, built code) or adds
                # (tags); the template retains its tables by DeletionPolicy,
                # which takes no parameter.
                continue
            m["parameters"][name] = v.get("default")
        m["outputs"] = sorted(self.outputs)
        return m

    def check_authorization_type(self):
        """The authorizer a protected route takes is the one auth_mode names
        (as the template's nested Fn::If)."""
        want = '${{JWT = "JWT", IAM = "AWS_IAM", NONE = "NONE"}[var.auth_mode]}'
        if self.locals["authorization_type"] != want:
            raise Unreadable(f"local.authorization_type {self.locals['authorization_type']!r}")


# ---------------------------------------------------------------- the module's own rules

SECRET_NAME = re.compile(r"secret|token|password|private.?key", re.I)
WRITES = ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem",
          "dynamodb:TransactWriteItems", "dynamodb:PartiQLInsert", "dynamodb:PartiQLUpdate",
          "dynamodb:PartiQLDelete"]


def rules(tf: Terraform, model: dict, decisions: list) -> list:
    """What the module breaks of the rules in the module doc."""
    import fnmatch

    problems = []
    for fn, env in tf.locals["environment"].items():
        for var, value in env.items():
            if SECRET_NAME.search(var) and not var.endswith("_PARAMETER"):
                problems.append(f"rule: {fn}'s environment has {var}, a secret by its name: give the name of "
                                f"an SSM SecureString instead ({var}_PARAMETER)")
            for name in re.findall(r"\bvar\.(\w+)", str(value)):
                if tf.variables.get(name, {}).get("sensitive") is True:
                    problems.append(f"rule: {fn}'s environment gives {var} the sensitive variable {name}: the "
                                    f"environment is readable with lambda:GetFunctionConfiguration and sits in "
                                    f"the state; keep the secret in SSM")
                elif SECRET_NAME.search(name) and not name.endswith("_parameter"):
                    problems.append(f"rule: {fn}'s environment gives {var} the variable {name}, a secret by its "
                                    f"name: keep the secret in SSM and pass its name")
    for fn, f in model["functions"].items():
        if not decisions or fn.endswith("-clarify"):
            continue
        for st in f["permissions"]:
            writes = sorted({w for a in st["actions"] for w in WRITES if fnmatch.fnmatchcase(w, a)})
            if not writes or not any(r in ("*", "arn(table:clarify)") for r in st["resources"]):
                continue
            cond = st["condition"] or {}
            allowed = None
            for op in ("ForAllValues:StringLike", "ForAllValues:StringEquals"):
                if "dynamodb:Attributes" in cond.get(op, {}):
                    v = cond[op]["dynamodb:Attributes"]
                    allowed = (op, v if isinstance(v, list) else [v])
            if allowed is None:
                problems.append(f"rule: {fn} may {', '.join(writes)} any attribute of the clarify table: only "
                                f"the clarify function may write a decision (add a dynamodb:Attributes condition)")
                continue
            op, patterns = allowed
            for attr in decisions:
                hit = [x for x in patterns
                       if (fnmatch.fnmatchcase(attr, x) if op.endswith("StringLike") else attr == x)]
                if hit:
                    problems.append(f"rule: {fn} may write {attr} on the clarify table ({hit[0]}): only the "
                                    f"clarify function decides")
            returns = set()
            for op in ("StringEquals", "StringEqualsIfExists"):
                v = cond.get(op, {}).get("dynamodb:ReturnValues", [])
                returns |= set(v if isinstance(v, list) else [v])
            if not returns or returns & {"ALL_OLD", "ALL_NEW"}:
                problems.append(f"rule: {fn} may write the clarify table with ReturnValues ALL_OLD or ALL_NEW: "
                                f"limit dynamodb:ReturnValues to NONE, UPDATED_OLD and UPDATED_NEW")
    return problems


def main(argv: list) -> int:
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    decisions = [d for a in argv if a.startswith("--decisions=") for d in a.split("=", 1)[1].split(",") if d]
    try:
        sam = Sam(args[0]).model()
        terraform = Terraform(args[1])
        tf = terraform.model()
        broken = rules(terraform, tf, decisions)
    except (Unreadable, KeyError, AttributeError, TypeError, ValueError) as e:
        print(f"parity: cannot read: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    if "--dump" in argv:
        print(json.dumps({"sam": sam, "terraform": tf}, indent=1, sort_keys=True))
    a = json.dumps(sam, indent=1, sort_keys=True).splitlines()
    b = json.dumps(tf, indent=1, sort_keys=True).splitlines()
    for line in broken:
        print(line)
    if a == b and not broken:
        print(f"parity: ok ({len(a)} facts)")
        return 0
    if a == b:
        print(f"parity: the models agree ({len(a)} facts), but the module breaks {len(broken)} rule(s)")
        return 1
    print("parity: template.yaml and infra/terraform differ (--- sam, +++ terraform)")
    for line in difflib.unified_diff(a, b, "sam", "terraform", lineterm="", n=4):
        print(line)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

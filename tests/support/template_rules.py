"""Rules template.yaml and its workflow must keep, checked by reading them
(tests/tests/deploy.rs runs this, on the real files and on broken copies).

Usage: template_rules.py TEMPLATE.yaml FACTS.json
FACTS.json holds what the code decides and the template must agree with:
{"margin_secs", "tool_max_secs": {binary: {"env": NAME, "default": secs}},
 "public_routes": [route keys], "sweep_input": {...}, "expiring_index": name,
 "required_output": {substitution name: [fields always present]}}.
Prints one line per broken rule and exits 1, or prints "ok" and exits 0.
"""

import json
import os
import re
import sys

from samtranslator.yaml_helper import yaml_parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from moto_deploy import condition as cfn_condition, parameter_values  # noqa: E402

template_path, facts_path = sys.argv[1], sys.argv[2]
with open(template_path) as f:
    template = yaml_parse(f.read())
with open(facts_path) as f:
    facts = json.load(f)
params = template.get("Parameters", {})
resources = template["Resources"]
problems = []


def defaults(**overrides):
    values = {k: str(v.get("Default", "")) for k, v in params.items()}
    values.update(overrides)
    return values


def condition(name, values):
    """A template Condition, for the given parameter values."""
    ctx = {"template": template, "params": parameter_values(template, values), "pseudo": {}}
    return cfn_condition(name, ctx)


NOVALUE = object()


def resolve(v, values):
    """Resolves Fn::If, Fn::Join and parameter Refs; other intrinsics stay."""
    if isinstance(v, list):
        out = [resolve(x, values) for x in v]
        return [x for x in out if x is not NOVALUE]
    if not isinstance(v, dict):
        return v
    if len(v) == 1:
        (fn, arg), = v.items()
        if fn == "Fn::If":
            return resolve(arg[1] if condition(arg[0], values) else arg[2], values)
        if fn == "Ref" and arg == "AWS::NoValue":
            return NOVALUE
        if fn == "Ref" and arg in params:
            raw = values[arg]
            return raw.split(",") if params[arg]["Type"] == "CommaDelimitedList" else raw
        if fn == "Fn::Join":
            parts = resolve(arg[1], values)
            if all(isinstance(p, str) for p in parts):
                return arg[0].join(parts)
    out = {k: resolve(x, values) for k, x in v.items()}
    return {k: x for k, x in out.items() if x is not NOVALUE}


def largest(v):
    """The largest value a (resolved) number can take: a parameter's MaxValue."""
    if isinstance(v, dict) and set(v) == {"Ref"} and v["Ref"] in params:
        return int(params[v["Ref"]]["MaxValue"])
    return int(v)


def smallest(v):
    """The smallest value a (resolved) number can take: a parameter's MinValue."""
    if isinstance(v, dict) and set(v) == {"Ref"} and v["Ref"] in params:
        return int(params[v["Ref"]]["MinValue"])
    return int(v)


def functions():
    for name, r in resources.items():
        if r["Type"] == "AWS::Serverless::Function":
            yield name, r, r.get("Metadata", {}).get("BuildProperties", {}).get("Binary", name)


# -- Routes: a tool route takes the authorizer; only the answer routes are public.
public = set(facts["public_routes"])
for mode, want in [("JWT", "JWT"), ("IAM", "AWS_IAM")]:
    values = defaults(AuthMode=mode)
    for name, r in resources.items():
        if r["Type"] != "AWS::ApiGatewayV2::Route":
            continue
        p = resolve(r["Properties"], values)
        key = p["RouteKey"]
        auth = p.get("AuthorizationType", "NONE")
        if key in public:
            if auth != "NONE":
                problems.append(f"{name} ({key}) is the person's link and must need no token, has {auth}")
            continue
        if auth != want:
            problems.append(f"{name} ({key}) is {auth} with AuthMode={mode}; every route but the answer routes needs {want}")
        if mode == "JWT" and p.get("AuthorizerId") != {"Ref": "JwtAuthorizer"}:
            problems.append(f"{name} ({key}) has no JWT authorizer (AuthorizerId)")
    for name, r, _ in functions():
        for ev_name, ev in r["Properties"].get("Events", {}).items():
            if ev["Type"] in ("Api", "HttpApi"):
                problems.append(f"{name}.Events.{ev_name} makes a route outside the checked HttpApi")
        if "FunctionUrlConfig" in r["Properties"]:
            problems.append(f"{name} has a function URL, which skips the API's authorizer")
for key in public:
    if not any(r["Type"] == "AWS::ApiGatewayV2::Route" and r["Properties"]["RouteKey"] == key for r in resources.values()):
        problems.append(f"no route for {key}: the person's link would fall to the authorized $default route")

# -- Timeouts: each function outlives its tool's longest call, plus a margin.
values = defaults()
for name, r, binary in functions():
    p = resolve(r["Properties"], values)
    timeout = smallest(p.get("Timeout", 3))
    rule = facts["tool_max_secs"].get(binary)
    if rule is None:
        continue
    env = r["Properties"].get("Environment", {}).get("Variables", {})
    tool_max = largest(env[rule["env"]]) if rule.get("env") in env else rule["default"]
    if timeout < tool_max + facts["margin_secs"]:
        problems.append(
            f"{name} times out after {timeout} s, but its tool may run {tool_max} s "
            f"(plus {facts['margin_secs']} s margin)")

# -- python-execute reserves its concurrency by default.
for name, r, binary in functions():
    if binary == "python-execute":
        p = resolve(r["Properties"], values)
        reserved = p.get("ReservedConcurrentExecutions")
        if reserved is None or int(reserved) <= 0:
            problems.append(f"{name} has no reserved concurrency by default: one caller could starve the account")

# -- VPC: subnets need security groups; ENI rights only inside a VPC.
if not any("VpcSubnetIds" in json.dumps(r.get("RuleCondition"))
           and any("VpcSecurityGroupIds" in json.dumps(a.get("Assert")) for a in r.get("Assertions", []))
           for r in template.get("Rules", {}).values()):
    problems.append("no Rule requires VpcSecurityGroupIds when VpcSubnetIds is set")
outside = resolve({k: v for k, v in resources.items() if v["Type"] == "AWS::IAM::Role"}, defaults(VpcSubnetIds=""))
if "ec2:CreateNetworkInterface" in json.dumps(outside):
    problems.append("a role may create network interfaces although no VPC is configured")
inside = resolve({k: v for k, v in resources.items() if v["Type"] == "AWS::IAM::Role"},
                 defaults(VpcSubnetIds="subnet-1", VpcSecurityGroupIds="sg-1"))
for name, r, _ in functions():
    if "VpcConfig" in r["Properties"]:
        role = r["Properties"]["Role"]["Fn::GetAtt"][0]
        if "ec2:CreateNetworkInterface" not in json.dumps(inside.get(role)):
            problems.append(f"{name} joins the VPC but its role {role} cannot create network interfaces")

# -- Clarify: a schedule sweeps; the sweep queries its index, never scans.
sweeps = []
for name, r, binary in functions():
    for ev in r["Properties"].get("Events", {}).values():
        if ev["Type"] in ("Schedule", "ScheduleV2"):
            sweeps.append((binary, ev["Properties"]))
ok = [p for b, p in sweeps if b == "clarify" and json.loads(p.get("Input", "null")) == facts["sweep_input"]]
if not ok:
    problems.append(f"the clarify function has no schedule sending {json.dumps(facts['sweep_input'])}")
for p in ok:
    m = re.fullmatch(r"rate\((\d+) minutes?\)", p.get("Schedule", ""))
    if not m or int(m.group(1)) > 1:
        problems.append(f"the sweep runs on {p.get('Schedule')}; a workflow must fail within a minute of expiry")
tables = [r for r in resources.values() if r["Type"] == "AWS::DynamoDB::Table"]
if not any(g["IndexName"] == facts["expiring_index"] for t in tables for g in t["Properties"].get("GlobalSecondaryIndexes", [])):
    problems.append(f"no table has the index {facts['expiring_index']} that the sweep queries")
if "dynamodb:Scan" in json.dumps(resources):
    problems.append("a role may Scan: the sweep queries its index")

# -- The workflow: heartbeats below timeouts, a wait that outlives any
# expiry, and results read only from fields a tool always returns.
for name, r in resources.items():
    if r["Type"] != "AWS::Serverless::StateMachine":
        continue
    p = r["Properties"]
    if "DefinitionUri" in p:
        with open(os.path.join(os.path.dirname(template_path), p["DefinitionUri"])) as f:
            definition = json.load(f)
    else:
        definition = p["Definition"]
    subs = p.get("DefinitionSubstitutions", {})
    expiry_max = int(params["ClarifyExpirySeconds"]["MaxValue"])

    def states(d):
        for sname, s in d["States"].items():
            yield sname, s
            for branch in s.get("Branches", []):
                yield from states(branch)
            if "Iterator" in s or "ItemProcessor" in s:
                yield from states(s.get("ItemProcessor", s.get("Iterator")))

    for sname, s in states(definition):
        if s.get("Type") != "Task":
            continue
        t, hb = s.get("TimeoutSeconds", 60), s.get("HeartbeatSeconds")
        if hb is not None and hb >= t:
            problems.append(f"{name}.{sname}: HeartbeatSeconds {hb} must be below TimeoutSeconds {t}")
        function = str(s.get("Parameters", {}).get("FunctionName", ""))
        sub = re.fullmatch(r"\$\{(\w+)\}", function)
        if s.get("Resource", "").endswith(".waitForTaskToken") and sub and \
                subs.get(sub.group(1), {}).get("Fn::GetAtt", [""])[0] == "ClarifyFunction" and t <= expiry_max:
            problems.append(f"{name}.{sname}: TimeoutSeconds {t} ends the wait before a clarification "
                            f"may expire ({expiry_max} s)")
        if sub and sub.group(1) in facts["required_output"]:
            always = set(facts["required_output"][sub.group(1)])
            for path in re.findall(r"\$\.Payload\.(\w+)", json.dumps(s.get("ResultSelector", {}))):
                if path not in always:
                    problems.append(f"{name}.{sname}: ResultSelector reads $.Payload.{path}, which the tool "
                                    f"may leave out (States.Runtime, which no Catch handles)")

for p in problems:
    print(p)
print("ok" if not problems else f"{len(problems)} rule(s) broken")
sys.exit(1 if problems else 0)

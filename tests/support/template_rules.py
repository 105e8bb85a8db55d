"""Rules template.yaml and its workflow must keep, checked by reading them
(tests/tests/deploy.rs runs this, on the real files and on broken copies).

Usage: template_rules.py TEMPLATE.yaml FACTS.json
FACTS.json holds what the code decides and the template must agree with:
{"margin_secs", "tool_max_secs": {binary: {"env": NAME, "default": secs}},
 "public_routes": [the open route keys: clarify's, the gateway's metadata],
 "approver_routes": [its route keys behind the authorizer],
 "approval_env": {binary: [the approval settings it reads]},
 "sweep_input": {...}, "expiring_index": name,
 "required_output": {substitution name: [fields always present]},
 "decision_attributes": [clarify item attributes only a decision writes]}.
Prints one line per broken rule and exits 1, or prints "ok" and exits 0.
"""

import fnmatch
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
    """Resolves Fn::If, Fn::Join, Fn::Split and parameter Refs; other
    intrinsics stay."""
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
        if fn == "Fn::Split":
            whole = resolve(arg[1], values)
            if isinstance(whole, str):
                return whole.split(arg[0])
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


# -- Routes: every route takes the authorizer but the clarify function's
# open ones (each checks its own proof: a clarification's id, the inbox
# page, a link's capability, Slack's signature). The approvers' routes
# exist, behind it, and API Gateway picks each route for its own path.
public = set(facts["public_routes"])
approver = set(facts["approver_routes"])
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
                problems.append(f"{name} ({key}) is an open route (it checks its own proof) and must need no "
                                f"token, has {auth}")
            continue
        if auth != want:
            problems.append(f"{name} ({key}) is {auth} with AuthMode={mode}; every route but the open ones "
                            f"needs {want}")
        if mode == "JWT" and p.get("AuthorizerId") != {"Ref": "JwtAuthorizer"}:
            problems.append(f"{name} ({key}) has no JWT authorizer (AuthorizerId)")
    for name, r, _ in functions():
        for ev_name, ev in r["Properties"].get("Events", {}).items():
            if ev["Type"] in ("Api", "HttpApi"):
                problems.append(f"{name}.Events.{ev_name} makes a route outside the checked HttpApi")
        if "FunctionUrlConfig" in r["Properties"]:
            problems.append(f"{name} has a function URL, which skips the API's authorizer")


# -- Two audiences with AuthMode=JWT: agents' tokens (JwtAudience) on every
# route that takes the authorizer but the approvers', and there, once
# ApproversJwtAudience is set, people's tokens alone (an authorizer of
# their own, the same issuer); unset, the approvers' routes take the
# agents' tokens as before. Read as API Gateway would: the authorizer each
# route names, which must exist with these parameters, and its audience.
ISSUER = "https://issuer.example.com"
AGENTS, PEOPLE = ["agent-1", "agent-2"], ["people-web", "people-cli"]
for people in ([], PEOPLE):
    values = defaults(AuthMode="JWT", JwtIssuer=ISSUER, JwtAudience=",".join(AGENTS),
                      ApproversJwtAudience=",".join(people))
    setting = f"ApproversJwtAudience={','.join(people)}"
    for name, r in resources.items():
        if r["Type"] != "AWS::ApiGatewayV2::Route":
            continue
        p = resolve(r["Properties"], values)
        key = p["RouteKey"]
        if key in public or p.get("AuthorizationType") != "JWT" or "AuthorizerId" not in p:
            continue  # the rules above
        ref = p["AuthorizerId"].get("Ref") if isinstance(p["AuthorizerId"], dict) else None
        authorizer = resources.get(ref, {})
        if authorizer.get("Type") != "AWS::ApiGatewayV2::Authorizer" or (
                "Condition" in authorizer and not condition(authorizer["Condition"], values)):
            problems.append(f"{name} ({key}) names the authorizer {ref}, which does not exist with {setting}")
            continue
        jwt_config = resolve(authorizer["Properties"], values).get("JwtConfiguration", {})
        audience = jwt_config.get("Audience")
        want = people if key in approver and people else AGENTS
        if jwt_config.get("Issuer") != ISSUER:
            problems.append(f"{name} ({key}) takes tokens of the issuer {jwt_config.get('Issuer')}, not JwtIssuer")
        if key in approver and people and audience != want:
            problems.append(f"{name} ({key}) takes tokens of audience {audience} with {setting} (it names "
                            f"{ref}): the approvers' routes then take people's tokens alone")
        elif audience != want:
            problems.append(f"{name} ({key}) takes tokens of audience {audience} with {setting} (it names "
                            f"{ref}): it must take the agents' tokens (JwtAudience {AGENTS}) alone")


def route_function(route):
    """The binary behind a route (its integration's function), or None."""
    m = re.fullmatch(r"integrations/\$\{(\w+)\}", str(route["Properties"].get("Target", {}).get("Fn::Sub", "")))
    uri = resources.get(m.group(1), {}).get("Properties", {}).get("IntegrationUri") if m else None
    fn = uri.get("Fn::GetAtt", [None])[0] if isinstance(uri, dict) else None
    return next((b for n, _, b in functions() if n == fn), None)


def route_match(key, method, path):
    """How specifically `key` matches a request (lower is more specific), or
    None. API Gateway's documented order: an exact route, then one ending in
    a greedy {name+}, then $default; a method before ANY; here also literal
    segments before {variables}."""
    if key == "$default":
        return (2, 0, 0)
    m, pattern = key.split(" ", 1)
    if m not in (method, "ANY"):
        return None
    want, got = pattern.strip("/").split("/"), path.strip("/").split("/")
    greedy = want[-1].startswith("{") and want[-1].endswith("+}")
    if len(got) < len(want) if greedy else len(got) != len(want):
        return None
    for w, g in zip(want[:-1] if greedy else want, got):
        if not (w.startswith("{") or w == g):
            return None
    return (1 if greedy else 0, sum(w.startswith("{") for w in want), m == "ANY")


routes = {r["Properties"]["RouteKey"]: (name, r) for name, r in resources.items()
          if r["Type"] == "AWS::ApiGatewayV2::Route"}
jwt = defaults(AuthMode="JWT")
for key in sorted(public | approver):
    # A request for this very path, routed as API Gateway would.
    method, path = key.split(" ", 1)
    path = re.sub(r"\{\w+\+\}", "a/b", re.sub(r"\{\w+\}", "5c1e", path))
    ranked = sorted((route_match(k, method, path), k) for k in routes if route_match(k, method, path))
    got = ranked[0][1] if ranked else None
    if got in (None, "$default"):
        where = "the approvers' API" if key in approver else "this open route"
        problems.append(f"no route for {key}: {where} would fall to the gateway's $default route")
        continue
    name, r = routes[got]
    via = f"{method} {path} goes to {name} ({got})"
    # RFC 9728's metadata is the gateway's; every other open or approver
    # route is the clarify function's.
    owner = "gateway" if "/.well-known/" in key else "clarify"
    if route_function(r) != owner:
        problems.append(f"{via}, which is the {route_function(r)} function's, not the {owner} function's")
    auth = resolve(r["Properties"], jwt).get("AuthorizationType", "NONE")
    if key in approver and auth == "NONE":
        problems.append(f"{via}, which needs no token: the approvers' API must take the authorizer")
    if key in public and auth != "NONE":
        problems.append(f"{via}, which takes the authorizer ({auth}): it must be open (it checks its own proof)")

# -- Approval settings: each function that reads one has it in its
# environment (else nobody can approve by that means, or the channels'
# messages lack the Slack buttons or the link).
for name, r, binary in functions():
    env = r["Properties"].get("Environment", {}).get("Variables", {})
    for var in facts["approval_env"].get(binary, []):
        if var not in env:
            problems.append(f"{name}'s environment lacks {var}, an approval setting it reads")

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

# -- Reserved concurrency: none with the defaults (Lambda keeps 100 of an
# account's concurrency unreserved, and a new account's quota is 10, so any
# reservation rolls a first deploy back); python-execute takes its cap from
# PythonReservedConcurrency when one is set.
for name, r, binary in functions():
    reserved = resolve(r["Properties"], values).get("ReservedConcurrentExecutions")
    if reserved is not None and int(reserved) > 0:
        problems.append(f"{name} reserves {reserved} concurrent executions with the default parameters: "
                        f"a new account (quota 10, 100 kept unreserved) cannot deploy it")
    if binary == "python-execute":
        capped = resolve(r["Properties"], defaults(PythonReservedConcurrency="50"))
        if str(capped.get("ReservedConcurrentExecutions")) != "50":
            problems.append(f"{name} ignores PythonReservedConcurrency: python.execute cannot be capped")

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

# -- Tables outlive the stack: the clarify table is the approvals record, and
# a replacement (a changed key) must not drop either table's items.
for name, r in resources.items():
    if r["Type"] == "AWS::DynamoDB::Table":
        for policy in ("DeletionPolicy", "UpdateReplacePolicy"):
            if r.get(policy) != "Retain":
                problems.append(f"{name} has {policy} {r.get(policy, 'Delete (the default)')}: a table must be Retain")

# -- Scan: only the clarify function may, and only its table (the
# approvers' lists read it whole); the sweep queries its index.
def allow_statements(node):
    """Every Allow statement anywhere in a resource (both sides of an Fn::If)."""
    if isinstance(node, list):
        for x in node:
            yield from allow_statements(x)
    elif isinstance(node, dict):
        if node.get("Effect") == "Allow" and "Action" in node:
            yield node
        else:
            for x in node.values():
                yield from allow_statements(x)


clarify_role = next((r["Properties"]["Role"]["Fn::GetAtt"][0] for _, r, b in functions() if b == "clarify"), None)
clarify_scans = False
for name, r in resources.items():
    for st in allow_statements(r.get("Properties", {})):
        actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
        if not any(fnmatch.fnmatchcase("dynamodb:Scan", a) for a in actions if isinstance(a, str)):
            continue
        targets = st.get("Resource", "*")
        targets = targets if isinstance(targets, list) else [targets]
        if name != clarify_role:
            problems.append(f"{name} may Scan {json.dumps(targets)}: only the clarify function lists its table, "
                            f"and the sweep queries its index")
        elif targets != [{"Fn::GetAtt": ["ClarifyTable", "Arn"]}]:
            problems.append(f"{name} may Scan {json.dumps(targets)}: the clarify function lists its table "
                            f"(ClarifyTable.Arn) and nothing else")
        else:
            clarify_scans = True
    if r["Type"].startswith("AWS::Serverless::"):
        for policy in r.get("Properties", {}).get("Policies", []) if isinstance(
                r.get("Properties", {}).get("Policies"), list) else []:
            if isinstance(policy, dict) and any(re.fullmatch(r"DynamoDB\w*Policy", k) for k in policy):
                problems.append(f"{name} has the SAM policy template {list(policy)[0]}, which may Scan")
if clarify_role and not clarify_scans:
    problems.append(f"{clarify_role} cannot Scan the clarify table, which the approvers' lists "
                    f"(GET /approvals, GET /clarifications) read whole")

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

# -- Secrets: no function's environment holds one. A Lambda function's
# environment is readable with lambda:GetFunctionConfiguration; a secret is
# an SSM SecureString the function reads at start, given by name
# (..._PARAMETER).
SECRET_NAME = re.compile(r"secret|token|password|private.?key", re.I)


def refs(node):
    """The names a value references (Ref, Fn::Sub's ${Name}, Fn::GetAtt)."""
    if isinstance(node, list):
        return [r for x in node for r in refs(x)]
    if isinstance(node, dict):
        out = []
        for fn, arg in node.items():
            if fn == "Ref":
                out.append(arg)
            elif fn == "Fn::Sub":
                text = arg if isinstance(arg, str) else arg[0]
                out += re.findall(r"\$\{([^}!.]+)[^}]*\}", text)
                out += refs(arg[1:] if isinstance(arg, list) else [])
            else:
                out += refs(arg)
        return out
    return []


environments = [("Globals", template.get("Globals", {}).get("Function", {}).get("Environment", {}))]
environments += [(name, r["Properties"].get("Environment", {})) for name, r, _ in functions()]
for name, env in environments:
    for var, value in env.get("Variables", {}).items():
        if SECRET_NAME.search(var) and not var.endswith("_PARAMETER"):
            problems.append(f"{name}'s environment has {var}, a secret by its name: give the name of an "
                            f"SSM SecureString instead ({var}_PARAMETER)")
        for ref in refs(value):
            param = params.get(ref)
            if param is None:
                continue
            if str(param.get("NoEcho", "")).lower() == "true":
                problems.append(f"{name}'s environment gives {var} the NoEcho parameter {ref}: the environment "
                                f"is readable with lambda:GetFunctionConfiguration; keep the secret in SSM")
            elif SECRET_NAME.search(ref) and not ref.endswith("Parameter"):
                problems.append(f"{name}'s environment gives {var} the parameter {ref}, a secret by its name: "
                                f"keep the secret in SSM and pass its name")

# -- Approvals: only the clarify function writes a decision. Any other role
# may write the clarify table only under a dynamodb:Attributes condition
# that names no decision attribute, and gets back no other attribute.
WRITES = ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem",
          "dynamodb:TransactWriteItems", "dynamodb:PartiQLInsert", "dynamodb:PartiQLUpdate",
          "dynamodb:PartiQLDelete"]


def branches(node):
    """Both branches of every Fn::If: a grant under any condition counts."""
    if isinstance(node, dict) and list(node) == ["Fn::If"]:
        for branch in node["Fn::If"][1:]:
            yield from branches(branch)
    elif node != {"Ref": "AWS::NoValue"}:
        yield node


def listed(v):
    return v if isinstance(v, list) else [v]


decisions = facts["decision_attributes"]
for name, r, binary in functions():
    if binary == "clarify":
        continue
    role = r["Properties"]["Role"]["Fn::GetAtt"][0]
    for policy in resources[role]["Properties"].get("Policies", []):
        for p in branches(policy):
            for st in listed(p["PolicyDocument"]["Statement"]):
                if st.get("Effect") != "Allow":
                    continue
                writes = sorted({w for a in listed(st["Action"]) for w in WRITES
                                 if fnmatch.fnmatchcase(w, a)})
                on_table = [x for x in listed(st["Resource"])
                            if x == "*" or "ClarifyTable" in json.dumps(x)]
                if not writes or not on_table:
                    continue
                where = f"{role} ({name}, policy {p['PolicyName']})"
                cond = st.get("Condition", {})
                allowed = None
                for op in ("ForAllValues:StringLike", "ForAllValues:StringEquals"):
                    if "dynamodb:Attributes" in cond.get(op, {}):
                        allowed = (op, listed(cond[op]["dynamodb:Attributes"]))
                if allowed is None:
                    problems.append(f"{where} may {', '.join(writes)} any attribute of the clarify table: only the "
                                    f"clarify function may write a decision (add a dynamodb:Attributes condition)")
                    continue
                op, patterns = allowed
                for attr in decisions:
                    hit = [x for x in patterns
                           if (fnmatch.fnmatchcase(attr, x) if op.endswith("StringLike") else attr == x)]
                    if hit:
                        problems.append(f"{where} may write {attr} on the clarify table ({hit[0]}): only the "
                                        f"clarify function decides")
                returns = {v for op in ("StringEquals", "StringEqualsIfExists")
                           for v in listed(cond.get(op, {}).get("dynamodb:ReturnValues", []))}
                if not returns or returns & {"ALL_OLD", "ALL_NEW"}:
                    problems.append(f"{where} may write the clarify table with ReturnValues ALL_OLD or ALL_NEW: "
                                    f"limit dynamodb:ReturnValues to NONE, UPDATED_OLD and UPDATED_NEW")

for p in problems:
    print(p)
print("ok" if not problems else f"{len(problems)} rule(s) broken")
sys.exit(1 if problems else 0)

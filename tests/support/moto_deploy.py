#!/usr/bin/env python3
"""Deploy the SAM template into moto's CloudFormation, as a real peer.

    python moto_deploy.py ENDPOINT_URL TEMPLATE.yaml [Key=Value ...]
                          [--with-vpc] [--stack-name NAME] [--timeout SECONDS]

Run it with the Python of the AWS tools venv (it needs aws-sam-translator and
boto3), against a running `moto_server`. It translates the template the way
scripts/check-template does, uploads a dummy zip for every S3 code object,
creates the stack over HTTP (AuthMode=IAM unless overridden, when the
template has that parameter), waits for it, and prints one JSON report:

  stack_status        the stack's status (CREATE_FAILED when moto rejected
                      CreateStack: moto creates synchronously and leaves such a
                      stack CREATE_IN_PROGRESS for ever, see `stack_status_reason`)
  resources           per template resource: logical_id, type, status, reason,
                      physical_id. Status is CREATE_COMPLETE, CREATE_FAILED,
                      NOT_CREATED, SKIPPED (its Condition is false) or
                      UNMODELLED (moto has no model for the type; removed).
  outputs             {key: value} as moto resolved them
  output_problems     {key: why} for outputs missing or unresolved
  outputs_via_unmodelled {key: [logical ids]}: outputs whose value contains a
                      placeholder for a removed unmodelled resource
  unmodelled          the template's resource types moto does not model
  moto_workarounds    where the template was adjusted for a moto gap other
                      than unmodelled types (see drop_novalue_items)
  local_checks        what real CloudFormation checks but moto ignores: Rules,
                      parameter constraints, unknown parameters, references
                      to nothing. Evaluated here.
  vpc                 with --with-vpc: the VPC made for the run, and the
                      VpcConfig each Lambda function got
  seconds             wall time of the run

Exit status: 0 when the stack and every modelled resource whose Condition
holds reached CREATE_COMPLETE, every output resolved and no local check
failed; 1 otherwise; 2 for bad usage or a template that does not translate.

What moto (5.2.5) does, found by running it, and why this script does what
it does:

* moto creates the stack inside the CreateStack call. A resource that fails
  makes CreateStack itself fail (often HTTP 500, e.g. a missing required
  property is a KeyError inside moto; some services answer with a JSON body
  botocore cannot parse), the stack stays CREATE_IN_PROGRESS and
  ListStackResources on it raises the same error again. moto has no
  per-resource CREATE_FAILED and no resource events: ListStackResources
  hard-codes CREATE_COMPLETE for whatever it built. So a resource counts as
  CREATE_COMPLETE when moto lists it under its logical id, and when the
  stack fails this script finds the culprit by deploying each modelled
  resource with its dependencies in a throw-away stack of its own.
* Unmodelled types: moto logs "No Moto CloudFormation support for T", skips
  the resource and still reaches CREATE_COMPLETE, listing a summary with an
  empty logical id and type. What breaks is references to the skipped
  resource: Fn::GetAtt fails CreateStack ("instance of Fn::GetAtt references
  undefined resource"), a Ref or GetAtt in Outputs is an HTTP 500, a Ref in
  a property becomes None (the property silently vanishes, or "None" inside
  Fn::Join) and Fn::Sub leaves "${Name}" in the string. The list of such
  types comes from moto itself: each resource type of the template is
  deployed alone with no properties in a probe stack; moto tries to build a
  modelled type (listed under its logical id, or failing for the missing
  properties) and silently skips an unmodelled one (or one of its NULL_MODELS,
  which it treats the same way). This agrees with
  moto.cloudformation.parsing.get_model_map().
* Therefore every resource of an unmodelled type is removed before
  deploying (moto would skip it anyway, so nothing modelled is lost), and
  with it what only makes sense with it: DependsOn entries naming it. Refs
  to it from modelled resources and Outputs are replaced by the placeholder
  "moto-unmodelled-<LogicalId>" (GetAtt: "...-<LogicalId>-<Attr>"), so the
  stack succeeds whatever intrinsic the template uses to reach it, the
  modelled resource is still created, and an output that depends on it is
  reported (outputs_via_unmodelled) rather than failing the run.
* moto ignores the Rules section, AllowedValues/AllowedPattern/Min/Max
  constraints and parameter keys the template does not declare, all of
  which real CloudFormation rejects before creating anything; those are
  checked here (local_checks) so a moto CREATE_COMPLETE is not mistaken for
  a deployable parameter set.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
import time
import uuid
import zipfile

ARTIFACT_BUCKET = "toolgate-artifacts"
PSEUDO = {
    "AWS::AccountId", "AWS::NoValue", "AWS::NotificationARNs", "AWS::Partition",
    "AWS::Region", "AWS::StackId", "AWS::StackName", "AWS::URLSuffix",
}
CAPABILITIES = ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"]


# ---------------------------------------------------------------- translation

def translate(template_path: str) -> dict:
    """What `sam package` does, then aws-sam-translator: local code goes to
    S3 and a local state-machine definition is inlined (scripts/check-template
    uses this too)."""
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    from samtranslator.translator.transform import transform
    from samtranslator.yaml_helper import yaml_parse

    base = os.path.dirname(os.path.abspath(template_path))
    with open(template_path) as f:
        template = yaml_parse(f.read())
    for name, res in template.get("Resources", {}).items():
        props = res.get("Properties", {})
        if res.get("Type") == "AWS::Serverless::Function":
            if "InlineCode" not in props and "ImageUri" not in props:
                props["CodeUri"] = f"s3://{ARTIFACT_BUCKET}/{name}.zip"
        if res.get("Type") == "AWS::Serverless::StateMachine" and "DefinitionUri" in props:
            if isinstance(props["DefinitionUri"], str):
                with open(os.path.join(base, props.pop("DefinitionUri"))) as f:
                    props["Definition"] = json.load(f)
    template.get("Globals", {}).get("Function", {}).pop("CodeUri", None)

    class Policies:
        """No AWS managed policies are looked up by name (as check-template)."""

        def load(self):
            return {}

    return transform(template, {}, Policies())


# ---------------------------------------------------------------- references

SUB_VAR = re.compile(r"\$\{([^}!][^}]*)\}")


def _getatt_target(value):
    if isinstance(value, list) and value and isinstance(value[0], str):
        return value[0], value[1] if len(value) > 1 and isinstance(value[1], str) else "?"
    if isinstance(value, str) and "." in value:
        return tuple(value.split(".", 1))
    return None, None


def references(node, out=None) -> set:
    """Names a template fragment refers to with Ref, Fn::GetAtt or Fn::Sub."""
    out = set() if out is None else out
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Ref" and isinstance(value, str):
                out.add(value)
            elif key == "Fn::GetAtt":
                target, _ = _getatt_target(value)
                if target:
                    out.add(target)
                else:
                    references(value, out)
            elif key == "Fn::Sub":
                text, variables = (value[0], value[1]) if isinstance(value, list) else (value, {})
                if isinstance(text, str):
                    for var in SUB_VAR.findall(text):
                        var = var.strip()
                        if var not in variables:
                            out.add(var.split(".", 1)[0] if not var.startswith("AWS::") else var)
                references(variables, out)
            else:
                references(value, out)
    elif isinstance(node, list):
        for item in node:
            references(item, out)
    return out


def depends_on(res: dict) -> list:
    deps = res.get("DependsOn", [])
    return [deps] if isinstance(deps, str) else list(deps)


def placeholder(name: str, attr: str | None = None) -> str:
    return f"moto-unmodelled-{name}" + (f"-{attr.replace('.', '-')}" if attr else "")


def rewrite(node, removed: set):
    """Replace Ref/GetAtt/Sub references to removed resources by placeholders."""
    if isinstance(node, dict):
        if len(node) == 1:
            (key, value), = node.items()
            if key == "Ref" and value in removed:
                return placeholder(value)
            if key == "Fn::GetAtt":
                target, attr = _getatt_target(value)
                if target in removed:
                    return placeholder(target, attr)
            if key == "Fn::Sub":
                text, variables = (value[0], value[1]) if isinstance(value, list) else (value, {})
                if isinstance(text, str):
                    def sub(m):
                        var = m.group(1).strip()
                        head, _, attr = var.partition(".")
                        if var not in variables and head in removed:
                            return placeholder(head, attr or None)
                        return m.group(0)
                    text = SUB_VAR.sub(sub, text)
                    variables = rewrite(variables, removed)
                    return {"Fn::Sub": [text, variables] if isinstance(value, list) else text}
        return {k: rewrite(v, removed) for k, v in node.items()}
    if isinstance(node, list):
        return [rewrite(v, removed) for v in node]
    return node


def drop_novalue_items(node, ctx: dict, where: str, log: list):
    """CloudFormation drops a list element that is Fn::If choosing
    AWS::NoValue; moto keeps it as None (its clean_json maps lists
    element-wise), and a model then fails on it, e.g. an IAM::Role's
    Policies: [..., !If [Cond, {...}, !Ref AWS::NoValue]] is an HTTP 500
    (TypeError in moto/iam/models.py). Such elements are dropped here, as
    CloudFormation would, and each drop is reported (moto_workarounds)."""
    novalue = {"Ref": "AWS::NoValue"}
    if isinstance(node, dict):
        return {k: drop_novalue_items(v, ctx, f"{where}.{k}", log) for k, v in node.items()}
    if isinstance(node, list):
        kept = []
        for i, item in enumerate(node):
            branches = item.get("Fn::If") if isinstance(item, dict) and len(item) == 1 else None
            if isinstance(branches, list) and len(branches) == 3 and novalue in branches[1:]:
                try:
                    chosen = branches[1] if condition(branches[0], ctx) else branches[2]
                except (Unevaluable, KeyError, IndexError, TypeError, ValueError):
                    chosen = None  # cannot tell: leave it to moto
                if chosen == novalue:
                    log.append(f"{where}[{i}]: dropped Fn::If [{branches[0]}, ..] element that is "
                               "AWS::NoValue (moto would keep it as null)")
                    continue
            kept.append(drop_novalue_items(item, ctx, f"{where}[{i}]", log))
        return kept
    return node


def resource_deps(resources: dict) -> dict:
    return {
        name: sorted((references(res) | set(depends_on(res))) & resources.keys() - {name})
        for name, res in resources.items()
    }


def closure(name: str, deps: dict) -> set:
    seen, todo = set(), [name]
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(deps.get(n, []))
    return seen


def topo_order(deps: dict) -> list:
    order, state = [], {}

    def visit(n):
        if state.get(n) == 2:
            return
        if state.get(n) == 1:  # a cycle: CloudFormation would refuse it, keep going
            return
        state[n] = 1
        for d in deps.get(n, []):
            visit(d)
        state[n] = 2
        order.append(n)

    for n in deps:
        visit(n)
    return order


# ---------------------------------------------------------------- conditions and rules

class Unevaluable(Exception):
    pass


def parameter_values(template: dict, overrides: dict) -> dict:
    values = {}
    for name, spec in template.get("Parameters", {}).items():
        raw = overrides.get(name, spec.get("Default"))
        if raw is None:
            values[name] = None
            continue
        raw = str(raw)
        kind = spec.get("Type", "String")
        values[name] = raw.split(",") if kind == "CommaDelimitedList" or kind.startswith("List<") else raw
    return values


def evaluate(node, ctx: dict):
    """Evaluates the intrinsics a Condition or Rule may use."""
    if isinstance(node, bool) or node is None or isinstance(node, str):
        return node
    if isinstance(node, (int, float)):
        return str(node)  # CloudFormation compares parameter values as strings
    if isinstance(node, list):
        return [evaluate(v, ctx) for v in node]
    if not isinstance(node, dict) or len(node) != 1:
        raise Unevaluable(json.dumps(node)[:80])
    (fn, arg), = node.items()
    if fn == "Ref":
        if arg in ctx["params"]:
            return ctx["params"][arg]
        if arg in ctx["pseudo"]:
            return ctx["pseudo"][arg]
        raise Unevaluable(f"Ref {arg}")
    if fn == "Condition":
        return condition(arg, ctx)
    if fn == "Fn::Equals":
        a, b = evaluate(arg, ctx)
        return str(a) == str(b) if not isinstance(a, list) and not isinstance(b, list) else a == b
    if fn == "Fn::Not":
        return not evaluate(arg[0], ctx)
    if fn == "Fn::And":
        return all(evaluate(v, ctx) for v in arg)
    if fn == "Fn::Or":
        return any(evaluate(v, ctx) for v in arg)
    if fn == "Fn::If":
        return evaluate(arg[1] if condition(arg[0], ctx) else arg[2], ctx)
    if fn == "Fn::Join":
        items = evaluate(arg[1], ctx)
        return arg[0].join(str(x) for x in (items if isinstance(items, list) else [items]))
    if fn == "Fn::Select":
        return evaluate(arg[1], ctx)[int(evaluate(arg[0], ctx))]
    if fn == "Fn::Split":
        return str(evaluate(arg[1], ctx)).split(arg[0])
    if fn == "Fn::FindInMap":
        m, k1, k2 = (evaluate(v, ctx) for v in arg)
        return ctx["mappings"][m][k1][k2]
    if fn == "Fn::Contains":  # rule functions from here on
        values, value = evaluate(arg, ctx)
        return value in values
    if fn == "Fn::EachMemberEquals":
        values, value = evaluate(arg, ctx)
        return all(v == value for v in values)
    if fn == "Fn::EachMemberIn":
        values, allowed = evaluate(arg, ctx)
        return all(v in allowed for v in values)
    raise Unevaluable(fn)


def condition(name: str, ctx: dict) -> bool:
    cache = ctx.setdefault("conditions", {})
    if name not in cache:
        cache[name] = bool(evaluate(ctx["template"]["Conditions"][name], ctx))
    return cache[name]


def check_parameters(template: dict, overrides: dict) -> list:
    problems = []
    specs = template.get("Parameters", {})
    for key in overrides:
        if key not in specs:
            problems.append(f"parameter {key} is not declared by the template")
    for name, spec in specs.items():
        raw = overrides.get(name, spec.get("Default"))
        if raw is None:
            problems.append(f"parameter {name} has no value and no Default")
            continue
        raw = str(raw)
        kind = spec.get("Type", "String")
        values = raw.split(",") if kind == "CommaDelimitedList" or kind.startswith("List<") else [raw]
        for v in values:
            if "AllowedValues" in spec and v not in [str(a) for a in spec["AllowedValues"]]:
                problems.append(f"parameter {name}={v!r} is not one of AllowedValues")
            if "AllowedPattern" in spec and not re.fullmatch(spec["AllowedPattern"], v):
                problems.append(f"parameter {name}={v!r} does not match AllowedPattern")
            if kind == "Number":
                try:
                    num = float(v)
                except ValueError:
                    problems.append(f"parameter {name}={v!r} is not a number")
                    continue
                if "MinValue" in spec and num < float(spec["MinValue"]):
                    problems.append(f"parameter {name}={v} is below MinValue {spec['MinValue']}")
                if "MaxValue" in spec and num > float(spec["MaxValue"]):
                    problems.append(f"parameter {name}={v} is above MaxValue {spec['MaxValue']}")
            if "MinLength" in spec and len(v) < int(spec["MinLength"]):
                problems.append(f"parameter {name} is shorter than MinLength")
            if "MaxLength" in spec and len(v) > int(spec["MaxLength"]):
                problems.append(f"parameter {name} is longer than MaxLength")
    return problems


def check_rules(template: dict, ctx: dict) -> dict:
    results = {}
    for name, rule in template.get("Rules", {}).items():
        try:
            if "RuleCondition" in rule and not evaluate(rule["RuleCondition"], ctx):
                results[name] = {"result": "NOT_APPLICABLE"}
                continue
            failed = [a.get("AssertDescription", json.dumps(a["Assert"]))
                      for a in rule.get("Assertions", []) if not evaluate(a["Assert"], ctx)]
            results[name] = {"result": "FAILED", "failed": failed} if failed else {"result": "PASSED"}
        except (Unevaluable, KeyError, IndexError, TypeError, ValueError) as e:
            results[name] = {"result": "UNEVALUATED", "reason": f"cannot evaluate {e}"}
    return results


# ---------------------------------------------------------------- moto over HTTP

def clients(endpoint: str):
    import boto3
    from botocore.config import Config

    # Fixed dummy credentials: this only ever talks to moto. No retries: a
    # retried CreateStack after moto's HTTP 500 would answer AlreadyExists
    # and hide the real error.
    kw = dict(
        endpoint_url=endpoint,
        region_name=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"total_max_attempts": 1}),
    )
    return lambda service: boto3.client(service, **kw)


def error_text(exc: Exception) -> str:
    """moto's errors, readable: a ClientError, a JSON body under a Query API
    (botocore cannot parse it), or an HTML 500 page (an exception in moto)."""
    from botocore.exceptions import ClientError

    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        return f"{err.get('Code')}: {err.get('Message')}"
    text = str(exc)
    if "500 Internal Server Error" in text:
        return ("HTTP 500 from moto: an exception inside moto while creating it, most often a "
                "missing required property or a reference to nothing (the moto server log has the traceback)")
    m = re.search(r"b'(\{.*\})'", text, re.S)
    if m:
        try:
            body = json.loads(m.group(1).encode().decode("unicode_escape"))
            return f"{body.get('__type') or body.get('code')}: {body.get('message') or body.get('Message')}"
        except ValueError:
            pass
    return f"{type(exc).__name__}: {text[:300]}"


def create(cfn, name: str, template: dict, params: dict):
    cfn.create_stack(
        StackName=name,
        TemplateBody=json.dumps(template),
        Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in params.items()],
        Capabilities=CAPABILITIES,
    )


def delete_quietly(cfn, name: str):
    try:
        cfn.delete_stack(StackName=name)
    except Exception:  # noqa: BLE001 - cleanup of a throw-away stack
        pass


def listed_resources(cfn, name: str) -> dict:
    found = {}
    for page in cfn.get_paginator("list_stack_resources").paginate(StackName=name):
        for s in page["StackResourceSummaries"]:
            if s.get("LogicalResourceId"):  # moto lists skipped resources with ""
                found[s["LogicalResourceId"]] = s
    return found


def probe_unmodelled(cfn, types: list, prefix: str) -> list:
    """Ask moto which of these types it does not model: deploy each alone."""
    unmodelled = []
    for i, rtype in enumerate(types):
        name = f"{prefix}-probe{i}"
        try:
            create(cfn, name, {"Resources": {"Probe": {"Type": rtype}}}, {})
            if "Probe" not in listed_resources(cfn, name):
                unmodelled.append(rtype)
        except Exception:  # noqa: BLE001 - moto tried to build it: modelled
            pass
        delete_quietly(cfn, name)
    return sorted(unmodelled)


def upload_code(s3, template: dict) -> list:
    """A small zip for every S3 object the template's code points at."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("bootstrap", "#!/bin/sh\necho dummy\n")
    objects = set()

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("S3Bucket"), str) and isinstance(node.get("S3Key"), str):
                objects.add((node["S3Bucket"], node["S3Key"]))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(template.get("Resources", {}))
    for bucket in sorted({b for b, _ in objects}):
        try:
            s3.create_bucket(Bucket=bucket)
        except s3.exceptions.BucketAlreadyOwnedByYou:
            pass
    for bucket, key in sorted(objects):
        s3.put_object(Bucket=bucket, Key=key, Body=buf.getvalue())
    return [f"s3://{b}/{k}" for b, k in sorted(objects)]


def make_vpc(ec2, template: dict, overrides: dict) -> dict:
    """A VPC, two subnets and a security group; fills the template's subnet
    and security-group list parameters that were not given explicitly."""
    vpc = ec2.create_vpc(CidrBlock="10.77.0.0/16")["Vpc"]["VpcId"]
    azs = [z["ZoneName"] for z in ec2.describe_availability_zones()["AvailabilityZones"]][:2]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.77.{i}.0/24", AvailabilityZone=az)["Subnet"]["SubnetId"]
        for i, az in enumerate(azs)
    ]
    sg = ec2.create_security_group(GroupName=f"moto-deploy-{uuid.uuid4().hex[:8]}",
                                   Description="moto_deploy --with-vpc", VpcId=vpc)["GroupId"]
    filled = {}
    for name, spec in template.get("Parameters", {}).items():
        kind = spec.get("Type", "String")
        if name in overrides or not (kind == "CommaDelimitedList" or kind.startswith("List<")):
            continue
        if kind == "List<AWS::EC2::Subnet::Id>" or re.search(r"subnet", name, re.I):
            filled[name] = ",".join(subnets)
        elif kind == "List<AWS::EC2::SecurityGroup::Id>" or re.search(r"security.?group", name, re.I):
            filled[name] = sg
    return {"vpc_id": vpc, "subnets": subnets, "security_groups": [sg], "parameters_set": filled}


# ---------------------------------------------------------------- the run

def attribute_failure(cfn, stack: str, deploy: dict, params: dict, modelled: list,
                      deps: dict, is_skipped) -> dict:
    """CreateStack failed and moto says no more: deploy each modelled resource
    with what it refers to in a stack of its own; the first that fails with
    all its dependencies fine is a culprit."""
    verdict = {}
    base = {k: v for k, v in deploy.items() if k not in ("Resources", "Outputs")}
    for i, name in enumerate(topo_order({n: deps[n] for n in modelled})):
        if is_skipped(name):
            continue
        broken = [d for d in deps[name] if verdict.get(d, ("ok",))[0] != "ok"]
        if broken:
            verdict[name] = ("blocked", f"not created: it refers to {', '.join(broken)}, which did not get created")
            continue
        keep = closure(name, deps)
        trial = dict(base, Resources={n: deploy["Resources"][n] for n in keep})
        trial_name = f"{stack}-iso{i}"
        try:
            create(cfn, trial_name, trial, params)
            verdict[name] = ("ok", None)
        except Exception as e:  # noqa: BLE001 - moto's verdict on this resource
            verdict[name] = ("failed", error_text(e))
        delete_quietly(cfn, trial_name)
    return verdict


def unresolved(value) -> str | None:
    if value is None:
        return "missing"
    text = str(value)
    for pattern, why in ((r"\$\{[^}]*\}", "unresolved ${...}"), (r"Fn::|'Ref'|\"Ref\"", "unresolved intrinsic"),
                         (r"\bNone\b", "contains None (a Ref that resolved to nothing)")):
        if re.search(pattern, text):
            return f"{why}: {text}"
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("endpoint")
    ap.add_argument("template")
    ap.add_argument("overrides", nargs="*", metavar="Key=Value")
    ap.add_argument("--with-vpc", action="store_true",
                    help="create a VPC, subnets and a security group in moto and pass their ids")
    ap.add_argument("--stack-name", default=None)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the stack")
    args = ap.parse_intermixed_args(argv)
    started = time.monotonic()

    overrides = {}
    for item in args.overrides:
        key, eq, value = item.partition("=")
        if not eq or not key:
            ap.error(f"not Key=Value: {item}")
        overrides[key] = value

    try:
        translated = translate(args.template)
    except Exception as e:  # noqa: BLE001 - any translator error ends the run
        print(json.dumps({"stack_status": None, "error": f"translation failed: {e}"}, indent=1))
        return 2

    stack = args.stack_name or f"moto-deploy-{uuid.uuid4().hex[:8]}"
    client = clients(args.endpoint)
    cfn, s3 = client("cloudformation"), client("s3")

    params = dict(overrides)
    if "AuthMode" in translated.get("Parameters", {}) and "AuthMode" not in params:
        params["AuthMode"] = "IAM"  # no JWT issuer needed
    report: dict = {"stack_name": stack}
    if args.with_vpc:
        vpc = make_vpc(client("ec2"), translated, params)
        if not vpc["parameters_set"]:
            ap.error("--with-vpc: the template has no subnet or security-group list parameter to fill")
        params.update(vpc["parameters_set"])
        report["vpc"] = vpc
    report["parameters"] = params

    resources = translated.get("Resources", {})
    types = sorted({r["Type"] for r in resources.values()})
    unmodelled = probe_unmodelled(cfn, types, stack)
    removed = {n for n, r in resources.items() if r["Type"] in unmodelled}

    account = client("sts").get_caller_identity()["Account"]
    region = cfn.meta.region_name
    ctx = {
        "template": translated,
        "params": parameter_values(translated, params),
        "mappings": translated.get("Mappings", {}),
        "pseudo": {"AWS::Region": region, "AWS::AccountId": account, "AWS::StackName": stack,
                   "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com", "AWS::NoValue": None},
    }
    workarounds: list = []

    # The template moto gets: unmodelled resources out, references to them
    # replaced by placeholders, DependsOn on them dropped (see the docstring),
    # and list elements that are AWS::NoValue dropped (drop_novalue_items).
    deploy = {k: v for k, v in translated.items() if k not in ("Resources", "Outputs")}
    deploy["Resources"] = {}
    for name, res in resources.items():
        if name in removed:
            continue
        res = drop_novalue_items(rewrite(res, removed), ctx, name, workarounds)
        if "DependsOn" in res:
            kept = [d for d in depends_on(res) if d not in removed]
            if kept:
                res["DependsOn"] = kept
            else:
                del res["DependsOn"]
        deploy["Resources"][name] = res
    outputs_via_unmodelled = {}
    if translated.get("Outputs"):
        deploy["Outputs"] = drop_novalue_items(rewrite(translated["Outputs"], removed), ctx,
                                               "Outputs", workarounds)
        for key, out in translated["Outputs"].items():
            via = sorted(references(out.get("Value")) & removed)
            if via:
                outputs_via_unmodelled[key] = via

    # What real CloudFormation would check before creating, and moto does not.
    declared = set(resources) | set(translated.get("Parameters", {})) | PSEUDO
    dangling = sorted(
        f"{where} refers to {ref}, which is neither a resource, a parameter nor a pseudo parameter"
        for where, node in [*((f"resource {n}", r) for n, r in resources.items()),
                            *((f"output {k}", o) for k, o in (translated.get("Outputs") or {}).items())]
        for ref in (references(node) | (set(depends_on(node)) if where.startswith("resource") else set()))
        if ref not in declared
    )
    local_checks = {"parameters": check_parameters(translated, params), "references": dangling}
    if translated.get("Rules"):
        local_checks["rules"] = check_rules(translated, ctx)
    report["local_checks"] = local_checks

    unknown_condition = {}

    def skipped_by(name):
        cond = resources[name].get("Condition")
        if not cond:
            return None
        try:
            return None if condition(cond, ctx) else f"Condition {cond} is false"
        except (Unevaluable, KeyError, IndexError, TypeError, ValueError) as e:
            unknown_condition[name] = f"has Condition {cond}, which this script cannot evaluate ({e})"
            return None

    upload_code(s3, deploy)

    # Create and wait.
    status, status_reason, listed, verdict = None, None, {}, {}
    try:
        create(cfn, stack, deploy, params)
        deadline = time.monotonic() + args.timeout
        while True:
            desc = cfn.describe_stacks(StackName=stack)["Stacks"][0]
            status, status_reason = desc["StackStatus"], desc.get("StackStatusReason")
            if not status.endswith("_IN_PROGRESS") or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        listed = listed_resources(cfn, stack)
        outputs = {o["OutputKey"]: o.get("OutputValue") for o in desc.get("Outputs") or []}
    except Exception as e:  # noqa: BLE001 - moto rejected the stack
        status = "CREATE_FAILED"
        status_reason = (f"CreateStack failed: {error_text(e)} (moto leaves this stack CREATE_IN_PROGRESS "
                         "and unlistable; it was deleted, and each resource tried in a stack of its own)")
        outputs = {}
        delete_quietly(cfn, stack)
        deps = resource_deps(deploy["Resources"])
        verdict = attribute_failure(cfn, stack, deploy, params, list(deploy["Resources"]), deps,
                                    lambda n: skipped_by(n) is not None)

    # Per resource.
    rows, bad = [], False
    for name, res in resources.items():
        row = {"logical_id": name, "type": res["Type"], "status": None, "reason": None, "physical_id": None}
        skip = skipped_by(name)
        if skip:
            row["status"], row["reason"] = "SKIPPED", skip
        elif name in removed:
            row["status"] = "UNMODELLED"
            row["reason"] = f"moto has no CloudFormation model for {res['Type']}; removed before deploying"
        elif name in listed:
            row["status"] = listed[name]["ResourceStatus"]
            row["physical_id"] = listed[name].get("PhysicalResourceId") or None
        elif verdict:
            kind, why = verdict.get(name, ("blocked", None))
            if kind == "failed":
                row["status"], row["reason"] = "CREATE_FAILED", why
            elif kind == "blocked":
                row["status"], row["reason"] = "NOT_CREATED", why
            else:
                row["status"] = "NOT_CREATED"
                row["reason"] = "creates fine with its dependencies alone; the stack failed elsewhere"
        else:
            row["status"] = "NOT_CREATED"
            row["reason"] = unknown_condition.get(name, "moto did not list it")
        if row["status"] not in ("CREATE_COMPLETE", "SKIPPED", "UNMODELLED"):
            bad = True
        rows.append(row)
    if verdict and not any(v[0] == "failed" for v in verdict.values()):
        status_reason += "; no resource fails alone, so the failure is in how they combine (e.g. a name clash)"

    # Outputs.
    problems = {}
    if status != "CREATE_FAILED":
        for key, out in (translated.get("Outputs") or {}).items():
            cond = out.get("Condition")
            if cond:
                try:
                    if not condition(cond, ctx):
                        continue
                except (Unevaluable, KeyError):
                    pass
            why = unresolved(outputs.get(key))
            if why:
                problems[key] = why
    else:
        problems = {k: "stack failed" for k in (translated.get("Outputs") or {})}

    if args.with_vpc and status != "CREATE_FAILED":
        lam, vpc_of = client("lambda"), {}
        for row in rows:
            if row["type"] == "AWS::Lambda::Function" and row["physical_id"]:
                cfg = lam.get_function_configuration(FunctionName=row["physical_id"]).get("VpcConfig") or {}
                vpc_of[row["logical_id"]] = (
                    {"SubnetIds": cfg.get("SubnetIds"), "SecurityGroupIds": cfg.get("SecurityGroupIds")}
                    if cfg.get("SubnetIds") else None)
        report["vpc"]["lambda_vpc_config"] = vpc_of

    failed_checks = (local_checks["parameters"] or local_checks["references"]
                     or any(r["result"] == "FAILED" for r in local_checks.get("rules", {}).values()))
    ok = status == "CREATE_COMPLETE" and not bad and not problems and not failed_checks
    report.update({
        "stack_status": status,
        "stack_status_reason": status_reason,
        "resources": rows,
        "outputs": outputs,
        "output_problems": problems,
        "outputs_via_unmodelled": outputs_via_unmodelled,
        "unmodelled": unmodelled,
        "moto_workarounds": workarounds,
        "ok": ok,
        "seconds": round(time.monotonic() - started, 2),
    })
    print(json.dumps(report, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

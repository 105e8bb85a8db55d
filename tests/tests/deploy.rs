//! The AWS deployment as a first-time user meets it: template.yaml's rules
//! (read from the file, with the facts the code decides), each rule seen
//! failing on a broken copy, the workflow through two independent ASL
//! parsers, and the whole stack created in moto's CloudFormation.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_e2e::peer::{moto, tools_dir};
use toolgate_e2e::stepfunctions::boto;
use toolgate_e2e::{support, workspace};
use toolgate_shared::config::{CloudConfig, DEFAULT_TIMEOUT_SECS, PythonConfig, SshConfig};

/// A function's timeout must exceed its tool's longest call by this much
/// (a cold start, connecting, writing the answer).
const MARGIN_SECS: u64 = 30;

/// What the code decides and template.yaml must agree with.
fn facts() -> Value {
    use toolgate_shared::tools::python_execute;
    use toolgate_ssh::ssh_run;
    let required = |spec: toolgate_shared::tool::ToolSpec| spec.output_schema["required"].clone();
    json!({
        "margin_secs": MARGIN_SECS,
        "tool_max_secs": {
            "python-execute": {"env": "TOOLGATE_PYTHON_TIMEOUT", "default": DEFAULT_TIMEOUT_SECS},
            "ssh": {"env": "TOOLGATE_SSH_MAX_TIMEOUT", "default": SshConfig::default().max_timeout_secs},
            "cloud": {"env": "TOOLGATE_CLOUD_TIMEOUT_SECS", "default": CloudConfig::default().timeout_secs},
            "clarify": {"default": toolgate_shared::clarify::MAX_WAIT_SECS},
        },
        // The open routes, each checking its own proof or telling nothing:
        // the clarify function's person's link and the routes its page
        // uses (the id is the capability, clarify/http.rs), the approvers'
        // inbox page, a link-holder's capability and Slack's signature
        // (docs/approvals.md, "The approvers' routes"); the gateway's
        // RFC 9728 metadata, which clients read before they sign in.
        "public_routes": [
            "GET /.well-known/oauth-protected-resource",
            "GET /.well-known/oauth-protected-resource/mcp",
            "GET /clarifications/{id}",
            "GET /clarifications/{id}/answer",
            "POST /clarifications/{id}/answer",
            "POST /clarifications/{id}/cancel",
            "GET /inbox",
            "GET /inbox/{id}",
            "POST /approval-links/{id}",
            "POST /slack/interactions",
        ],
        // The approvers' JSON API: behind the authorizer (with
        // ApproversJwtAudience, the approvers' own), whose identity the
        // clarify function checks against its approvers.
        "approver_routes": [
            "GET /approvals",
            "GET /approvals/{id}",
            "POST /approvals/{id}/decision",
            "GET /clarifications",
        ],
        "approval_env": {
            "clarify": APPROVERS_ENV.iter().chain(&CHANNELS_ENV).collect::<Vec<_>>(),
            "ssh": CHANNELS_ENV,
            "cloud": CHANNELS_ENV,
        },
        "sweep_input": {"toolgate": toolgate_lambda::SWEEP},
        "expiring_index": toolgate_aws::clarify_table::EXPIRING_INDEX,
        "required_output": {
            "PythonExecuteFunctionArn": required(python_execute::spec(&PythonConfig::default())),
            "SshFunctionArn": required(ssh_run::spec(Duration::from_secs(600))),
        },
        "decision_attributes": DECISION_ATTRIBUTES,
    })
}

/// Who may approve, which only the clarify function (the approvers'
/// routes) reads (config/approvals.rs).
const APPROVERS_ENV: [&str; 4] = [
    "TOOLGATE_APPROVERS_JWT_GROUP",
    "TOOLGATE_APPROVERS_JWT_CLAIM",
    "TOOLGATE_APPROVERS_JWT_AUDIENCE",
    "TOOLGATE_APPROVERS_IAM",
];

/// What every function that notifies needs to know of approvers: whether
/// its Slack messages carry buttons and its links a capability.
const CHANNELS_ENV: [&str; 2] = [
    "TOOLGATE_APPROVERS_SLACK_USERS",
    "TOOLGATE_APPROVALS_LINK_HOLDER",
];

/// The clarify item's attributes only a decision (or an answer) writes,
/// which only the clarify function may write (docs/approvals.md,
/// "On AWS").
const DECISION_ATTRIBUTES: [&str; 6] = [
    "decision",
    "approver",
    "decided_at",
    "decided_binding",
    "answer",
    "choice",
];

/// Runs template_rules.py on `template`; its status and output.
fn rules(template: &Path) -> (bool, String) {
    let dir = tempdir("facts");
    let facts_path = dir.join("facts.json");
    std::fs::write(&facts_path, facts().to_string()).unwrap();
    let out = Command::new(tools_dir().join("aws/bin/python"))
        .arg(support("template_rules.py"))
        .arg(template)
        .arg(&facts_path)
        .output()
        .expect("run template_rules.py");
    let _ = std::fs::remove_dir_all(&dir);
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn tempdir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "toolgate-deploy-{what}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("infra/statemachines")).unwrap();
    dir
}

/// A copy of template.yaml and its workflow with `edit` applied to one of
/// them (`file` is relative to the workspace); panics if `from` is absent,
/// so a mutation cannot silently stop applying.
fn broken_copy(file: &str, from: &str, to: &str) -> PathBuf {
    let dir = tempdir("mutant");
    let asl = "infra/statemachines/clarify-then-run.asl.json";
    for f in ["template.yaml", asl] {
        let mut text = std::fs::read_to_string(workspace().join(f)).unwrap();
        if f == file {
            assert!(text.contains(from), "{file} no longer contains {from:?}");
            text = text.replacen(from, to, 1);
        }
        std::fs::write(dir.join(f), text).unwrap();
    }
    dir
}

#[test]
fn the_template_keeps_its_rules() {
    let (ok, out) = rules(&workspace().join("template.yaml"));
    assert!(ok, "{out}");
    assert_eq!(out.trim(), "ok");
}

/// Each rule, broken on purpose, is caught with its own message.
#[test]
fn each_template_rule_fails_a_template_that_breaks_it() {
    let asl = "infra/statemachines/clarify-then-run.asl.json";
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "template.yaml",
            "      RouteKey: POST /tools/ssh_run\n      Target: !Sub integrations/${SshIntegration}\n      AuthorizationType: !If [UseJwt, JWT, !If [UseIam, AWS_IAM, NONE]]",
            "      RouteKey: POST /tools/ssh_run\n      Target: !Sub integrations/${SshIntegration}\n      AuthorizationType: NONE",
            "RouteSshRun (POST /tools/ssh_run) is NONE",
        ),
        (
            "template.yaml",
            "      RouteKey: GET /tools\n      Target: !Sub integrations/${GatewayIntegration}\n      AuthorizationType: !If [UseJwt, JWT, !If [UseIam, AWS_IAM, NONE]]\n      AuthorizerId: !If [UseJwt, !Ref JwtAuthorizer, !Ref AWS::NoValue]",
            "      RouteKey: GET /tools\n      Target: !Sub integrations/${GatewayIntegration}\n      AuthorizationType: !If [UseJwt, JWT, !If [UseIam, AWS_IAM, NONE]]",
            "RouteListTools (GET /tools) has no JWT authorizer",
        ),
        (
            "template.yaml",
            "      RouteKey: GET /clarifications/{id}/answer",
            "      RouteKey: GET /clarifications/{id}/page",
            "no route for GET /clarifications/{id}/answer",
        ),
        (
            "template.yaml",
            "      Timeout: 900\n      ReservedConcurrentExecutions",
            "      Timeout: 60\n      ReservedConcurrentExecutions",
            "PythonExecuteFunction times out after 60 s, but its tool may run 840 s",
        ),
        (
            "template.yaml",
            "    MaxValue: 840\n    Description: >\n      The longest timeout an ssh_run",
            "    MaxValue: 900\n    Description: >\n      The longest timeout an ssh_run",
            "SshFunction times out after 900 s, but its tool may run 900 s",
        ),
        (
            "template.yaml",
            "      ReservedConcurrentExecutions: !If [ReservePythonConcurrency, !Ref PythonReservedConcurrency, !Ref AWS::NoValue]\n",
            "",
            "PythonExecuteFunction ignores PythonReservedConcurrency: python.execute cannot be capped",
        ),
        // A new account's first deploy: no reservation by default.
        (
            "template.yaml",
            "    # deploy there.\n    Default: 0\n",
            "    # deploy there.\n    Default: 50\n",
            "PythonExecuteFunction reserves 50 concurrent executions with the default parameters: a new account (quota 10, 100 kept unreserved) cannot deploy it",
        ),
        (
            "template.yaml",
            "      - Assert: !Not [!EachMemberEquals [!Ref VpcSecurityGroupIds, \"\"]]",
            "      - Assert: !Not [!EachMemberEquals [!Ref VpcSubnetIds, \"\"]]",
            "no Rule requires VpcSecurityGroupIds",
        ),
        (
            "template.yaml",
            "        - !If\n          - InVpc\n          - PolicyName: vpc",
            "        - !If\n          - UseJwt\n          - PolicyName: vpc",
            "a role may create network interfaces although no VPC is configured",
        ),
        (
            "template.yaml",
            "            Schedule: rate(1 minute)",
            "            Schedule: rate(5 minutes)",
            "the sweep runs on rate(5 minutes)",
        ),
        (
            "template.yaml",
            "            Input: '{\"toolgate\": \"sweep\"}'",
            "            Input: '{\"toolgate\": \"sweeep\"}'",
            "the clarify function has no schedule sending",
        ),
        // Only the clarify function may Scan, and only its table.
        (
            "template.yaml",
            "                Action: [dynamodb:PutItem, dynamodb:GetItem, dynamodb:UpdateItem, dynamodb:DeleteItem]",
            "                Action: [dynamodb:PutItem, dynamodb:GetItem, dynamodb:UpdateItem, dynamodb:DeleteItem, dynamodb:Scan]",
            "PythonExecuteRole may Scan [{\"Fn::GetAtt\": [\"SessionsTable\", \"Arn\"]}]: only the clarify function",
        ),
        (
            "template.yaml",
            "                Action: dynamodb:GetItem\n                Resource: !GetAtt ClarifyTable.Arn",
            "                Action: [dynamodb:GetItem, \"dynamodb:*\"]\n                Resource: !GetAtt ClarifyTable.Arn",
            "PythonExecuteRole may Scan [{\"Fn::GetAtt\": [\"ClarifyTable\", \"Arn\"]}]: only the clarify function",
        ),
        (
            "template.yaml",
            "                Action: dynamodb:Scan\n                Resource: !GetAtt ClarifyTable.Arn",
            "                Action: dynamodb:Scan\n                Resource: \"*\"",
            "ClarifyRole may Scan [\"*\"]: the clarify function lists its table (ClarifyTable.Arn) and nothing else",
        ),
        (
            "template.yaml",
            "                Action: dynamodb:Scan\n",
            "                Action: dynamodb:GetItem\n",
            "ClarifyRole cannot Scan the clarify table, which the approvers' lists",
        ),
        // The approvers' routes: there, the clarify function's, behind the
        // authorizer; the open ones open.
        (
            "template.yaml",
            "      RouteKey: GET /approvals\n",
            "      RouteKey: GET /approval\n",
            "no route for GET /approvals: the approvers' API would fall to the gateway's $default route",
        ),
        (
            "template.yaml",
            "      RouteKey: POST /approvals/{id}/decision\n      Target: !Sub integrations/${ClarifyIntegration}\n      AuthorizationType: !If [UseJwt, JWT, !If [UseIam, AWS_IAM, NONE]]\n      AuthorizerId: !If [UseApproversJwt, !Ref ApproversJwtAuthorizer, !If [UseJwt, !Ref JwtAuthorizer, !Ref AWS::NoValue]]",
            "      RouteKey: POST /approvals/{id}/decision\n      Target: !Sub integrations/${ClarifyIntegration}\n      AuthorizationType: NONE",
            "POST /approvals/5c1e/decision goes to RouteApprovalDecision (POST /approvals/{id}/decision), which needs no token",
        ),
        (
            "template.yaml",
            "      RouteKey: GET /approvals/{id}\n      Target: !Sub integrations/${ClarifyIntegration}",
            "      RouteKey: GET /approvals/{id}\n      Target: !Sub integrations/${GatewayIntegration}",
            "GET /approvals/5c1e goes to RouteApprovalRead (GET /approvals/{id}), which is the gateway function's",
        ),
        // Two audiences: once ApproversJwtAudience is set, the approvers'
        // routes take people's tokens alone and no other route takes them.
        (
            "template.yaml",
            "      RouteKey: POST /approvals/{id}/decision\n      Target: !Sub integrations/${ClarifyIntegration}\n      AuthorizationType: !If [UseJwt, JWT, !If [UseIam, AWS_IAM, NONE]]\n      AuthorizerId: !If [UseApproversJwt, !Ref ApproversJwtAuthorizer, !If [UseJwt, !Ref JwtAuthorizer, !Ref AWS::NoValue]]",
            "      RouteKey: POST /approvals/{id}/decision\n      Target: !Sub integrations/${ClarifyIntegration}\n      AuthorizationType: !If [UseJwt, JWT, !If [UseIam, AWS_IAM, NONE]]\n      AuthorizerId: !If [UseJwt, !Ref JwtAuthorizer, !Ref AWS::NoValue]",
            "RouteApprovalDecision (POST /approvals/{id}/decision) takes tokens of audience ['agent-1', 'agent-2'] with ApproversJwtAudience=people-web,people-cli (it names JwtAuthorizer): the approvers' routes then take people's tokens alone",
        ),
        (
            "template.yaml",
            "      RouteKey: POST /tools/ssh_run\n      Target: !Sub integrations/${SshIntegration}\n      AuthorizationType: !If [UseJwt, JWT, !If [UseIam, AWS_IAM, NONE]]\n      AuthorizerId: !If [UseJwt, !Ref JwtAuthorizer, !Ref AWS::NoValue]",
            "      RouteKey: POST /tools/ssh_run\n      Target: !Sub integrations/${SshIntegration}\n      AuthorizationType: !If [UseJwt, JWT, !If [UseIam, AWS_IAM, NONE]]\n      AuthorizerId: !If [UseApproversJwt, !Ref ApproversJwtAuthorizer, !If [UseJwt, !Ref JwtAuthorizer, !Ref AWS::NoValue]]",
            "RouteSshRun (POST /tools/ssh_run) takes tokens of audience ['people-web', 'people-cli'] with ApproversJwtAudience=people-web,people-cli (it names ApproversJwtAuthorizer): it must take the agents' tokens",
        ),
        (
            "template.yaml",
            "        Audience: !Split [\",\", !Ref ApproversJwtAudience]",
            "        Audience: !Split [\",\", !Join [\",\", [!Ref ApproversJwtAudience, !Ref JwtAudience]]]",
            "RouteApprovalsList (GET /approvals) takes tokens of audience ['people-web', 'people-cli', 'agent-1', 'agent-2'] with ApproversJwtAudience=people-web,people-cli",
        ),
        (
            "template.yaml",
            "      RouteKey: GET /approvals\n      Target: !Sub integrations/${ClarifyIntegration}\n      AuthorizationType: !If [UseJwt, JWT, !If [UseIam, AWS_IAM, NONE]]\n      AuthorizerId: !If [UseApproversJwt, !Ref ApproversJwtAuthorizer, !If [UseJwt, !Ref JwtAuthorizer, !Ref AWS::NoValue]]",
            "      RouteKey: GET /approvals\n      Target: !Sub integrations/${ClarifyIntegration}\n      AuthorizationType: !If [UseJwt, JWT, !If [UseIam, AWS_IAM, NONE]]\n      AuthorizerId: !If [UseJwt, !Ref ApproversJwtAuthorizer, !Ref AWS::NoValue]",
            "RouteApprovalsList (GET /approvals) names the authorizer ApproversJwtAuthorizer, which does not exist with ApproversJwtAudience=",
        ),
        (
            "template.yaml",
            "        Audience: !Split [\",\", !Ref JwtAudience]",
            "        Audience: !Split [\",\", !Join [\",\", [!Ref JwtAudience, !Ref ApproversJwtAudience]]]",
            "RouteMcp (ANY /mcp) takes tokens of audience ['agent-1', 'agent-2', 'people-web', 'people-cli'] with ApproversJwtAudience=people-web,people-cli (it names JwtAuthorizer): it must take the agents' tokens",
        ),
        // The list alone is the approvers': a greedy open route in its
        // place would not catch it (the gateway's $default would).
        (
            "template.yaml",
            "      RouteKey: GET /clarifications\n      Target: !Sub integrations/${ClarifyIntegration}\n      AuthorizationType: !If [UseJwt, JWT, !If [UseIam, AWS_IAM, NONE]]\n      AuthorizerId: !If [UseApproversJwt, !Ref ApproversJwtAuthorizer, !If [UseJwt, !Ref JwtAuthorizer, !Ref AWS::NoValue]]",
            "      RouteKey: ANY /clarifications/{proxy+}\n      Target: !Sub integrations/${ClarifyIntegration}\n      AuthorizationType: NONE",
            "no route for GET /clarifications: the approvers' API would fall to the gateway's $default route",
        ),
        // The metadata is the gateway's (it knows the issuer), and open.
        (
            "template.yaml",
            "      RouteKey: GET /.well-known/oauth-protected-resource/mcp\n      Target: !Sub integrations/${GatewayIntegration}",
            "      RouteKey: GET /.well-known/oauth-protected-resource/mcp\n      Target: !Sub integrations/${ClarifyIntegration}",
            "GET /.well-known/oauth-protected-resource/mcp goes to RouteProtectedResourceMcp (GET /.well-known/oauth-protected-resource/mcp), which is the clarify function's, not the gateway function's",
        ),
        (
            "template.yaml",
            "      RouteKey: GET /.well-known/oauth-protected-resource\n      Target: !Sub integrations/${GatewayIntegration}\n      AuthorizationType: NONE",
            "      RouteKey: GET /.well-known/oauth-protected-resource\n      Target: !Sub integrations/${GatewayIntegration}\n      AuthorizationType: !If [UseJwt, JWT, !If [UseIam, AWS_IAM, NONE]]\n      AuthorizerId: !If [UseJwt, !Ref JwtAuthorizer, !Ref AWS::NoValue]",
            "RouteProtectedResource (GET /.well-known/oauth-protected-resource) is an open route (it checks its own proof) and must need no token, has JWT",
        ),
        // An open catch-all is not an open route.
        (
            "template.yaml",
            "      RouteKey: GET /inbox\n      Target: !Sub integrations/${ClarifyIntegration}\n      AuthorizationType: NONE",
            "      RouteKey: ANY /{proxy+}\n      Target: !Sub integrations/${ClarifyIntegration}\n      AuthorizationType: NONE",
            "RouteInbox (ANY /{proxy+}) is NONE with AuthMode=JWT; every route but the open ones needs JWT",
        ),
        (
            "template.yaml",
            "      RouteKey: POST /slack/interactions\n      Target: !Sub integrations/${ClarifyIntegration}\n      AuthorizationType: NONE",
            "      RouteKey: POST /slack/interactions\n      Target: !Sub integrations/${ClarifyIntegration}\n      AuthorizationType: !If [UseJwt, JWT, !If [UseIam, AWS_IAM, NONE]]\n      AuthorizerId: !If [UseJwt, !Ref JwtAuthorizer, !Ref AWS::NoValue]",
            "RouteSlackInteractions (POST /slack/interactions) is an open route (it checks its own proof) and must need no token, has JWT",
        ),
        (
            "template.yaml",
            "          TOOLGATE_APPROVERS_JWT_GROUP: !Ref ApproversJwtGroup\n",
            "",
            "ClarifyFunction's environment lacks TOOLGATE_APPROVERS_JWT_GROUP",
        ),
        (
            "template.yaml",
            "          TOOLGATE_APPROVALS_LINK_HOLDER: !Ref ApprovalsLinkHolder\n",
            "",
            "CloudFunction's environment lacks TOOLGATE_APPROVALS_LINK_HOLDER",
        ),
        // No secret in an environment: a NoEcho parameter, or a variable
        // named like a secret.
        (
            "template.yaml",
            "  ClarifySlackWebhookUrlParameter:\n    Type: String\n",
            "  ClarifySlackWebhookUrlParameter:\n    Type: String\n    NoEcho: true\n",
            "CloudFunction's environment gives TOOLGATE_CLARIFY_SLACK_URL_PARAMETER the NoEcho parameter ClarifySlackWebhookUrlParameter",
        ),
        (
            "template.yaml",
            "          TOOLGATE_CLARIFY_WEBHOOK_SECRET_PARAMETER: !Ref",
            "          TOOLGATE_CLARIFY_WEBHOOK_SECRET: !Ref",
            "CloudFunction's environment has TOOLGATE_CLARIFY_WEBHOOK_SECRET, a secret by its name",
        ),
        // Only the clarify function writes a decision.
        (
            "template.yaml",
            "                      - approval_used_at\n",
            "                      - approval_used_at\n                      - decision\n",
            "CloudRole (CloudFunction, policy approvals) may write decision on the clarify table",
        ),
        (
            "template.yaml",
            "                      - approval_cap\n",
            "                      - approv*\n",
            "CloudRole (CloudFunction, policy approvals) may write approver on the clarify table (approv*)",
        ),
        (
            "template.yaml",
            "                  ForAllValues:StringLike:\n                    dynamodb:Attributes:",
            "                  ForAllValues:StringLike:\n                    dynamodb:LeadingKeys:",
            "CloudRole (CloudFunction, policy approvals) may dynamodb:PutItem, dynamodb:UpdateItem any attribute of the clarify table",
        ),
        (
            "template.yaml",
            "dynamodb:ReturnValues: [NONE, UPDATED_OLD, UPDATED_NEW]",
            "dynamodb:ReturnValues: [NONE, ALL_NEW]",
            "CloudRole (CloudFunction, policy approvals) may write the clarify table with ReturnValues ALL_OLD or ALL_NEW",
        ),
        (
            "template.yaml",
            "(who approved what).\n    DeletionPolicy: Retain\n",
            "(who approved what).\n",
            "ClarifyTable has DeletionPolicy Delete (the default): a table must be Retain",
        ),
        (
            asl,
            "      \"TimeoutSeconds\": 2595600,\n",
            "      \"TimeoutSeconds\": 86400,\n      \"HeartbeatSeconds\": 86400,\n",
            "AskHuman: HeartbeatSeconds 86400 must be below TimeoutSeconds 86400",
        ),
        (
            asl,
            "      \"TimeoutSeconds\": 2595600,\n",
            "      \"TimeoutSeconds\": 86400,\n",
            "AskHuman: TimeoutSeconds 86400 ends the wait before a clarification may expire",
        ),
        (
            asl,
            "\"ResultSelector\": {\n        \"output.$\": \"$.Payload\"\n",
            "\"ResultSelector\": {\n        \"output.$\": \"$.Payload\", \"server.$\": \"$.Payload.result\"\n",
            "CheckAnswer: ResultSelector reads $.Payload.result",
        ),
    ];
    for (file, from, to, want) in cases {
        let dir = broken_copy(file, from, to);
        let (ok, out) = rules(&dir.join("template.yaml"));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(!ok, "a template with {to:?} passed:\n{out}");
        assert!(out.contains(want), "wanted {want:?}, got:\n{out}");
    }
}

/// The target dir the tests were built in (`$CARGO_TARGET_DIR`, else the
/// one above this test binary's `deps/`).
fn target_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("CARGO_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().unwrap();
    exe.ancestors().nth(3).unwrap().to_path_buf()
}

/// The largest Lambda zip stays at most 20 MiB (issue "Faster and smaller":
/// the zip is downloaded on every cold start). scripts/test builds
/// python-execute, the largest by far, with `sam build` for arm64 at
/// opt-level 1; its deflated size tracks the release zip's within 1%
/// (19.56 and 19.66 MB on 2026-12-02; 20.03 MB on 2026-12-06, past the
/// 20,000,000 bytes this held until then; 20,766,591 bytes before the
/// OTLP exporter and 20,875,200 with it, whose hyper client would have
/// taken it to 21,104,359; 20,975,843 with MCP elicitation on Lambda,
/// 20,501,885 once the modules that need a network, a terminal or a
/// window were no longer frozen; 20,973,655 with code mode on AWS, whose
/// scripts' calls link the Lambda Invoke client: the budget is 20.5 MiB
/// since 2026-12-07), so a feature that adds a megabyte fails here rather
/// than in a deploy.
#[test]
fn the_python_execute_zip_stays_under_20_mb() {
    const LIMIT: u64 = (20 << 20) + (512 << 10);
    let bootstrap = target_dir().join("lambda-ci/sam-build/PythonExecuteFunction/bootstrap");
    assert!(
        bootstrap.exists(),
        "{} is missing: scripts/test builds it (sam build PythonExecuteFunction)",
        bootstrap.display()
    );
    // gzip's deflate at level 6 is what cargo-lambda's zip uses.
    let out = Command::new("gzip")
        .args(["-6", "-c"])
        .arg(&bootstrap)
        .output()
        .expect("run gzip");
    assert!(out.status.success());
    let size = out.stdout.len() as u64;
    eprintln!("python-execute bootstrap deflated: {size} bytes");
    assert!(
        size <= LIMIT,
        "python-execute's zip would be {size} bytes, over {LIMIT}"
    );
}

/// What `wrangler deploy` runs, as a normal user whose machine has no sshd
/// and no chromium: each Worker's [build] command and wrangler's own bundle
/// and config checks (`--dry-run`, so nothing is uploaded).
#[test]
fn the_worker_builds_for_deploy_as_a_normal_user() {
    // A second Worker build keeps every core busy for minutes: it holds
    // the machine's share, never beside a test that bounds times.
    let _share = toolgate_e2e::timing::machine_share();
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    assert!(
        root,
        "this test makes a user and a mount namespace, so it runs as root (as CI does)"
    );
    let scratch = tempdir("user-build");
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "bash"])
        .arg(support("build_worker_as_user.sh"))
        .arg(workspace())
        .arg(target_dir())
        .arg(tools_dir())
        .arg(&scratch)
        .output()
        .expect("run unshare");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&scratch);
    assert!(out.status.success(), "{log}");
    assert!(
        log.contains("(uid ") && !log.contains("(uid 0)"),
        "not a normal user: {log}"
    );
    assert!(
        log.contains("sshd absent, chromium absent"),
        "the machine still had sshd or chromium: {log}"
    );
    assert!(log.contains("built for deploy as toolgate-build"), "{log}");
}

/// `sam deploy --guided` in a pseudo-terminal (support/sam_guided.py) on
/// a copy of template.yaml (`edit` applied to it) whose functions' code is
/// a placeholder (SAM zips each CodeUri folder; the code is not what is
/// tested here), answered with `answers` and Enter everywhere else.
fn guided_deploy(endpoint: &str, answers: &Value, edit: (&str, &str)) -> (Value, String) {
    let dir = broken_copy("template.yaml", edit.0, edit.1);
    let template = std::fs::read_to_string(dir.join("template.yaml")).unwrap();
    for code in template
        .lines()
        .filter_map(|l| l.trim().strip_prefix("CodeUri: "))
    {
        std::fs::create_dir_all(dir.join(code)).unwrap();
        std::fs::write(dir.join(code).join("placeholder"), "not the function").unwrap();
    }
    let out = Command::new(tools_dir().join("aws/bin/python"))
        .arg(support("sam_guided.py"))
        .arg(answers.to_string())
        .arg("--")
        .arg(tools_dir().join("aws/bin/sam"))
        .args(["deploy", "--guided"])
        .current_dir(&dir)
        .env_clear()
        .env("PATH", toolgate_e2e::peer::tools_path())
        .env("HOME", &dir)
        .env("AWS_ENDPOINT_URL", endpoint)
        .envs(toolgate_e2e::stepfunctions::AWS)
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .env("SAM_CLI_TELEMETRY", "0")
        .output()
        .expect("run sam_guided.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    let saved = std::fs::read_to_string(dir.join("samconfig.toml")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    (report, saved)
}

/// `sam deploy --guided` itself, answered as docs/deploy-aws.md says: the
/// stack name it names, the issuer and audience step 1 prints, and Enter
/// (the default) for every other prompt. SAM must get past every prompt to
/// "Initiating deployment" and save those answers in samconfig.toml, and
/// the docs must name every parameter it asks for. A parameter SAM cannot
/// take empty (no default: click asks again, as it did for the NoEcho
/// secrets once) fails the run, as the control shows. moto stands in for
/// AWS: SAM's managed bucket stack is made beforehand (moto's copy of it
/// has no Outputs, so SAM would refuse it), and the change set then fails
/// in moto (it cannot read the template back from S3 by URL), past what
/// this test checks; the_stack_deploys_into_moto_cloudformation creates
/// the stack itself.
#[test]
fn the_guided_deploy_takes_the_answers_the_docs_give() {
    let docs = std::fs::read_to_string(workspace().join("docs/deploy-aws.md")).unwrap();
    let stack = docs
        .lines()
        .find(|l| l.starts_with("sam deploy --guided"))
        .and_then(|l| l.split("answer ").nth(1))
        .and_then(|rest| {
            rest.split(|c: char| !c.is_ascii_alphanumeric() && c != '-')
                .next()
        })
        .expect("docs/deploy-aws.md: `sam deploy --guided  # … (answer <stack name> …)`")
        .to_owned();
    let (_moto, endpoint) = moto();
    boto(
        &endpoint,
        "boto3.client('cloudformation', **kw).create_stack(StackName='aws-sam-cli-managed-default', TemplateBody=json.dumps({'Resources': {'SamCliSourceBucket': {'Type': 'AWS::S3::Bucket'}}, 'Outputs': {'SourceBucket': {'Value': {'Ref': 'SamCliSourceBucket'}}}}), Tags=[{'Key': 'ManagedStackSource', 'Value': 'AwsSamCli'}])",
        &[],
    );
    let issuer = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_AbCdEf123";
    let answers = json!({
        "Stack Name": stack,
        "Parameter JwtIssuer": issuer,
        "Parameter JwtAudience": "1example23456789",
    });
    let (report, saved) =
        guided_deploy(&endpoint, &answers, ("\nParameters:\n", "\nParameters:\n"));
    assert!(
        report["asked_again"].is_null() && report["reached"] == true,
        "{report:#}"
    );
    let prompts = report["prompts"].as_array().unwrap();
    assert!(prompts.len() > 30, "{report:#}");
    for p in prompts {
        if let Some(name) = p[0].as_str().unwrap().strip_prefix("Parameter ") {
            assert!(
                docs.contains(&format!("`{name}`")),
                "SAM asks for {name}, which docs/deploy-aws.md does not name"
            );
        }
    }
    for want in [
        format!("stack_name = \"{stack}\""),
        format!("JwtIssuer=\\\"{issuer}\\\""),
        "JwtAudience=\\\"1example23456789\\\"".to_owned(),
    ] {
        assert!(
            saved.contains(&want),
            "{want} not in samconfig.toml:\n{saved}"
        );
    }

    // The control: a parameter with no default, as the NoEcho secrets were.
    let (report, _) = guided_deploy(
        &endpoint,
        &answers,
        (
            "\nParameters:\n",
            "\nParameters:\n  WebhookSecret:\n    Type: String\n    NoEcho: true\n",
        ),
    );
    assert_eq!(
        report["asked_again"], "Parameter WebhookSecret",
        "{report:#}"
    );
}

/// Creates template.yaml's stack in moto's CloudFormation
/// (support/moto_deploy.py); its exit status and JSON report.
fn deploy_into_moto(endpoint: &str, args: &[&str]) -> (bool, Value) {
    let out = Command::new(tools_dir().join("aws/bin/python"))
        .arg(support("moto_deploy.py"))
        .arg(endpoint)
        .arg(workspace().join("template.yaml"))
        .args(args)
        .output()
        .expect("run moto_deploy.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    (out.status.success(), report)
}

/// The resource types moto 5.2.5 does not model: API Gateway v2, Lambda's
/// asynchronous-invocation settings, and SNS subscriptions (its `Topic` is
/// its only SNS CloudFormation model). The
/// report lists them; the rest of the stack is created for real.
const UNMODELLED: [&str; 7] = [
    "AWS::ApiGatewayV2::Api",
    "AWS::ApiGatewayV2::Authorizer",
    "AWS::ApiGatewayV2::Integration",
    "AWS::ApiGatewayV2::Route",
    "AWS::ApiGatewayV2::Stage",
    "AWS::Lambda::EventInvokeConfig",
    "AWS::SNS::Subscription",
];

#[test]
fn the_stack_deploys_into_moto_cloudformation() {
    let (_moto, endpoint) = moto();
    let outputs: Vec<String> = {
        let text = std::fs::read_to_string(workspace().join("template.yaml")).unwrap();
        let section = text
            .split("\nOutputs:\n")
            .nth(1)
            .expect("an Outputs section");
        section
            .lines()
            .filter_map(|l| l.strip_prefix("  ")?.strip_suffix(':'))
            .filter(|k| !k.starts_with(' '))
            .map(str::to_owned)
            .collect()
    };
    assert!(outputs.len() >= 8, "{outputs:?}");
    let runs: [&[&str]; 4] = [
        &["AuthMode=IAM"],
        &[
            "AuthMode=JWT",
            "JwtIssuer=https://issuer.example.com",
            "JwtAudience=agent-1,agent-2",
        ],
        &[
            "AuthMode=JWT",
            "JwtIssuer=https://issuer.example.com",
            "JwtAudience=agent-1,agent-2",
            "ApproversJwtAudience=people-web,people-cli",
        ],
        &["AuthMode=IAM", "--with-vpc"],
    ];
    for args in runs {
        let (ok, report) = deploy_into_moto(&endpoint, args);
        assert!(ok, "{args:?}: {report:#}");
        each_route_takes_its_authorizer(&endpoint, &report, args);
        assert_eq!(report["stack_status"], "CREATE_COMPLETE", "{report:#}");
        let mut unmodelled: Vec<&str> = report["unmodelled"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        unmodelled.sort();
        assert_eq!(unmodelled, UNMODELLED, "{args:?}: moto's coverage changed");
        for r in report["resources"].as_array().unwrap() {
            let status = r["status"].as_str().unwrap();
            let unmodelled = UNMODELLED.contains(&r["type"].as_str().unwrap());
            assert!(
                status == "CREATE_COMPLETE"
                    || (unmodelled && status == "UNMODELLED")
                    || status == "SKIPPED",
                "{args:?}: {r}"
            );
        }
        for key in &outputs {
            let value = report["outputs"][key].as_str().unwrap_or_default();
            assert!(
                !value.is_empty(),
                "{args:?}: output {key} missing: {report:#}"
            );
            assert!(
                !value.contains("${") && !value.contains("None"),
                "{args:?}: {key} = {value}"
            );
        }
        // Only ApiUrl and InboxUrl name the (unmodelled) API.
        assert_eq!(
            report["outputs_via_unmodelled"],
            json!({"ApiUrl": ["HttpApi"], "InboxUrl": ["HttpApi"]})
        );
        let table = report["outputs"]["ClarifyTableName"].as_str().unwrap();
        assert!(table.contains("ClarifyTable"), "{table}");
        // In a VPC exactly the ssh and cloud functions join it, with the
        // subnets and security groups given.
        if args.contains(&"--with-vpc") {
            let configs = report["vpc"]["lambda_vpc_config"].as_object().unwrap();
            let mut joined: Vec<&str> = configs
                .iter()
                .filter(|(_, c)| !c["SubnetIds"].as_array().is_none_or(|a| a.is_empty()))
                .map(|(k, _)| k.as_str())
                .collect();
            joined.sort();
            assert_eq!(
                joined,
                ["CloudFunction", "SshFunction"],
                "{:#}",
                report["vpc"]
            );
            for c in configs
                .values()
                .filter(|c| c["SubnetIds"].as_array().is_some_and(|a| !a.is_empty()))
            {
                assert!(!c["SecurityGroupIds"].as_array().unwrap().is_empty(), "{c}");
            }
        }
    }
    // Secrets named: each function that notifies may read exactly those
    // parameters, and only clarify the Slack app's signing secret. And the
    // approvers given.
    let iam_approvers =
        "arn:aws:iam::123456789012:user/alice, arn:aws-us-gov:iam::123456789012:user/ops/bob";
    let (ok, report) = deploy_into_moto(
        &endpoint,
        &[
            "AuthMode=IAM",
            "ClarifyWebhookUrl=https://hooks.example/toolgate",
            "ClarifyWebhookSecretParameter=/toolgate/webhook-secret",
            "ClarifySlackWebhookUrlParameter=/toolgate/slack-url",
            "SlackSigningSecretParameter=/toolgate/slack-signing-secret",
            "ApproversJwtGroup=toolgate-approvers",
            &format!("ApproversIamArns={iam_approvers}"),
            "ApproversSlackUsers=U012ABCDEF,U0456GHIJ",
            "ApprovalsLinkHolder=true",
        ],
    );
    assert!(ok, "{report:#}");
    approvers_reach_their_functions(&endpoint, &report, iam_approvers);
    let readable: Value = serde_json::from_str(&boto(
        &endpoint,
        // Each role's `secrets` policy, by role; moto keeps a policy that
        // CloudFormation made as a Python literal.
        "import ast\niam = boto3.client('iam', **kw)\nout = {}\nfor r in iam.list_roles()['Roles']:\n    n = r['RoleName']\n    if n.startswith(sys.argv[2] + '-') and 'secrets' in iam.list_role_policies(RoleName=n)['PolicyNames']:\n        d = iam.get_role_policy(RoleName=n, PolicyName='secrets')['PolicyDocument']\n        d = ast.literal_eval(d) if isinstance(d, str) else d\n        out[n.split('-')[-2]] = [s['Resource'] for s in d['Statement'] if s['Action'] == 'ssm:GetParameter'][0]\nprint(json.dumps(out))",
        &[report["stack_name"].as_str().unwrap()],
    ))
    .unwrap();
    let arn = |name: &str| format!("arn:aws:ssm:us-east-1:123456789012:parameter/toolgate/{name}");
    let channels = json!([arn("webhook-secret"), arn("slack-url")]);
    assert_eq!(
        readable,
        json!({
            "ClarifyRole": [arn("webhook-secret"), arn("slack-url"), arn("slack-signing-secret")],
            "SshRole": channels,
            "CloudRole": channels,
        })
    );
    // A parameter that is not what the code reads is refused before
    // anything is created.
    for bad in [
        "ApproversSlackUsers=alice",
        "ApproversIamArns=alice",
        "ApproversIamArns=arn:aws:sts::123456789012:assumed-role/Ops/alice",
        "ApprovalsLinkHolder=yes",
        "ApproversJwtGroup=tool gate",
        "JwtAudience=agent-1, agent-2",
        "ApproversJwtAudience=people-web,",
        // More than the function's 1024 MB can hold beside the server.
        "PythonMemoryMB=1024",
    ] {
        let (ok, report) = deploy_into_moto(&endpoint, &["AuthMode=IAM", bad]);
        let name = bad.split('=').next().unwrap();
        assert!(!ok, "{bad} was accepted: {report:#}");
        assert!(
            report["local_checks"]["parameters"]
                .to_string()
                .contains(&format!("parameter {name}=")),
            "{bad}: {}",
            report["local_checks"]
        );
    }
    // What CloudFormation refuses before creating anything (moto skips
    // Rules; the script evaluates them).
    for (args, rule) in [
        (
            &["AuthMode=IAM", "VpcSubnetIds=subnet-1"][..],
            "VpcNeedsSecurityGroups",
        ),
        (&["AuthMode=JWT"][..], "JwtNeedsIssuerAndAudience"),
        (
            &[
                "AuthMode=JWT",
                "JwtIssuer=https://issuer.example.com",
                "JwtAudience=agents",
                "ApproversJwtAudience=agents",
            ][..],
            "ApproversAudienceIsNotAgents",
        ),
        (
            &[
                "AuthMode=IAM",
                "ClarifyWebhookUrl=https://hooks.example/toolgate",
            ][..],
            "WebhookNeedsSecret",
        ),
    ] {
        let (ok, report) = deploy_into_moto(&endpoint, args);
        assert!(!ok, "{args:?} was accepted: {report:#}");
        assert!(
            report["local_checks"]["rules"][rule]
                .to_string()
                .contains("FAIL"),
            "{args:?}: {}",
            report["local_checks"]
        );
    }
}

/// API Gateway v2 as the stack made with `args` would have it, read back
/// from moto: moto's CloudFormation does not model it (UNMODELLED), so the
/// template's authorizers and routes, their intrinsics resolved with the
/// same parameters (support/moto_deploy.py's translation and conditions),
/// are created through moto's apigatewayv2 API. Route key => its
/// authorization type and, when it names one, the authorizer's name,
/// issuer and audience as moto returns them.
const READ_ROUTES_BACK: &str = r#"
sys.path.insert(0, sys.argv[2])
from moto_deploy import translate, parameter_values, condition
template = translate(sys.argv[3])
params = dict(a.split('=', 1) for a in sys.argv[5:])
ctx = {'template': template, 'params': parameter_values(template, params), 'pseudo': {}}
gw = boto3.client('apigatewayv2', **kw)
ids = {'HttpApi': gw.create_api(Name=sys.argv[4] + '-api', ProtocolType='HTTP')['ApiId']}
NOVALUE = object()
def resolve(v):
    if isinstance(v, list):
        return [x for x in map(resolve, v) if x is not NOVALUE]
    if isinstance(v, dict) and len(v) == 1:
        (fn, arg), = v.items()
        if fn == 'Fn::If':
            return resolve(arg[1] if condition(arg[0], ctx) else arg[2])
        if fn == 'Ref':
            return NOVALUE if arg == 'AWS::NoValue' else ctx['params'][arg] if arg in ctx['params'] else ids[arg]
        if fn == 'Fn::Split':
            return resolve(arg[1]).split(arg[0])
    if isinstance(v, dict):
        return {k: x for k, x in ((k, resolve(x)) for k, x in v.items()) if x is not NOVALUE}
    return v
res = template['Resources']
made = lambda kind: [(n, r) for n, r in res.items() if r['Type'] == kind and ('Condition' not in r or condition(r['Condition'], ctx))]
for name, r in made('AWS::ApiGatewayV2::Authorizer'):
    ids[name] = gw.create_authorizer(**resolve(r['Properties']))['AuthorizerId']
for name, r in made('AWS::ApiGatewayV2::Route'):
    p = resolve({k: v for k, v in r['Properties'].items() if k != 'Target'})
    gw.create_route(**p)
out = {}
for route in gw.get_routes(ApiId=ids['HttpApi'])['Items']:
    seen = {'type': route['AuthorizationType']}
    if route.get('AuthorizerId'):
        a = gw.get_authorizer(ApiId=ids['HttpApi'], AuthorizerId=route['AuthorizerId'])
        seen.update(authorizer=a['Name'], issuer=a['JwtConfiguration']['Issuer'], audience=a['JwtConfiguration']['Audience'])
    out[route['RouteKey']] = seen
print(json.dumps(out))
"#;

/// The routes' authorizers of the stack `report` made with `args`, read
/// back (READ_ROUTES_BACK): the open routes take none; with AuthMode=JWT
/// every other route takes the agents' tokens (JwtAudience), but the
/// approvers' routes take people's alone (ApproversJwtAudience) once it is
/// set; with IAM, SigV4 and no authorizer.
fn each_route_takes_its_authorizer(endpoint: &str, report: &Value, args: &[&str]) {
    let params: Vec<&str> = args.iter().copied().filter(|a| a.contains('=')).collect();
    let param = |name: &str| {
        params
            .iter()
            .find_map(|a| a.strip_prefix(name)?.strip_prefix('='))
            .unwrap_or_default()
    };
    let mut script_args = vec![
        support("").to_str().unwrap().to_owned(),
        workspace()
            .join("template.yaml")
            .to_str()
            .unwrap()
            .to_owned(),
        report["stack_name"].as_str().unwrap().to_owned(),
    ];
    script_args.extend(params.iter().map(|a| a.to_string()));
    let script_args: Vec<&str> = script_args.iter().map(String::as_str).collect();
    let seen: Value =
        serde_json::from_str(&boto(endpoint, READ_ROUTES_BACK, &script_args)).unwrap();
    let facts = facts();
    let listed = |k: &str| -> Vec<String> {
        facts[k]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    };
    let (public, approver) = (listed("public_routes"), listed("approver_routes"));
    let audience = |list: &str| Value::from(list.split(',').collect::<Vec<_>>());
    let routes = seen.as_object().unwrap();
    assert!(routes.len() > public.len() + approver.len(), "{seen:#}");
    for key in public.iter().chain(&approver) {
        assert!(
            routes.contains_key(key),
            "{args:?}: no route {key}: {seen:#}"
        );
    }
    for (key, route) in routes {
        let want = if public.contains(key) {
            json!({"type": "NONE"})
        } else if param("AuthMode") == "IAM" {
            json!({"type": "AWS_IAM"})
        } else if approver.contains(key) && !param("ApproversJwtAudience").is_empty() {
            json!({"type": "JWT", "authorizer": "jwt-approvers", "issuer": param("JwtIssuer"),
                   "audience": audience(param("ApproversJwtAudience"))})
        } else {
            json!({"type": "JWT", "authorizer": "jwt", "issuer": param("JwtIssuer"),
                   "audience": audience(param("JwtAudience"))})
        };
        assert_eq!(route, &want, "{args:?}: {key}");
    }
}

/// In the stack `report` made: each function's approval settings are the
/// parameters given (the clarify function all of them, ssh and cloud what
/// their messages offer, the others none), and only the clarify role may
/// Scan, its own table alone.
fn approvers_reach_their_functions(endpoint: &str, report: &Value, iam_approvers: &str) {
    let stack = report["stack_name"].as_str().unwrap();
    let seen: Value = serde_json::from_str(&boto(
        endpoint,
        "import ast\nlam = boto3.client('lambda', **kw)\niam = boto3.client('iam', **kw)\nstack = sys.argv[2]\nenv = {}\nfor f in ['python-execute', 'cloud', 'ssh', 'clarify', 'gateway']:\n    v = lam.get_function_configuration(FunctionName=stack + '-' + f).get('Environment', {}).get('Variables', {})\n    env[f] = {k: x for k, x in v.items() if k.startswith('TOOLGATE_APPROV')}\nscans = {}\nfor r in iam.list_roles(MaxItems=1000)['Roles']:\n    n = r['RoleName']\n    if not n.startswith(stack + '-'):\n        continue\n    for p in iam.list_role_policies(RoleName=n)['PolicyNames']:\n        d = iam.get_role_policy(RoleName=n, PolicyName=p)['PolicyDocument']\n        d = ast.literal_eval(d) if isinstance(d, str) else d\n        for s in d['Statement']:\n            a = s['Action'] if isinstance(s['Action'], list) else [s['Action']]\n            if any(x in ('dynamodb:Scan', 'dynamodb:*', '*') for x in a):\n                scans.setdefault(n.split('-')[-2], []).append(s['Resource'])\nprint(json.dumps({'env': env, 'scans': scans}))",
        &[stack],
    ))
    .unwrap();
    let channels = json!({
        "TOOLGATE_APPROVERS_SLACK_USERS": "U012ABCDEF,U0456GHIJ",
        "TOOLGATE_APPROVALS_LINK_HOLDER": "true",
    });
    assert_eq!(
        seen["env"],
        json!({
            "python-execute": {},
            "cloud": channels,
            "ssh": channels,
            "clarify": {
                "TOOLGATE_APPROVERS_JWT_GROUP": "toolgate-approvers",
                "TOOLGATE_APPROVERS_JWT_CLAIM": "cognito:groups",
                "TOOLGATE_APPROVERS_JWT_AUDIENCE": "",
                "TOOLGATE_APPROVERS_IAM": iam_approvers,
                "TOOLGATE_APPROVERS_SLACK_USERS": "U012ABCDEF,U0456GHIJ",
                "TOOLGATE_APPROVALS_LINK_HOLDER": "true",
            },
            "gateway": {},
        })
    );
    let table = report["outputs"]["ClarifyTableName"].as_str().unwrap();
    assert_eq!(
        seen["scans"],
        json!({"ClarifyRole": [format!("arn:aws:dynamodb:us-east-1:123456789012:table/{table}")]})
    );
}

const ASL: &str = "infra/statemachines/clarify-then-run.asl.json";

/// The workflow with the template's ARNs in place, as AWS receives it.
fn substituted(definition: &str) -> String {
    let mut text = definition.replace("${Partition}", "aws");
    for name in [
        "ClarifyFunctionArn",
        "PythonExecuteFunctionArn",
        "SshFunctionArn",
    ] {
        text = text.replace(
            &format!("${{{name}}}"),
            &format!("arn:aws:lambda:us-east-1:123456789012:function:toolgate-{name}"),
        );
    }
    assert!(
        !text.contains("${"),
        "a substitution is not covered: {text}"
    );
    text
}

/// Both parsers on `definition`: LocalStack's (as moto vendors it, with
/// the checks AWS makes at CreateStateMachine; support/check_asl.py) and
/// asl-validator from npm. Each one's success and output.
fn asl_parsers(definition: &str) -> [(bool, String); 2] {
    let dir = tempdir("asl");
    let file = dir.join("definition.asl.json");
    std::fs::write(&file, substituted(definition)).unwrap();
    let run = |cmd: &mut Command| {
        let out = cmd.output().expect("run an ASL parser");
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    let localstack = run(Command::new(tools_dir().join("aws/bin/python"))
        .arg(support("check_asl.py"))
        .arg("--strict")
        .arg(&file));
    let validator = run(
        Command::new(tools_dir().join("node_modules/.bin/asl-validator"))
            .arg("--json-path")
            .arg(&file),
    );
    let _ = std::fs::remove_dir_all(&dir);
    [localstack, validator]
}

#[test]
fn the_workflow_passes_two_asl_parsers() {
    let definition = std::fs::read_to_string(workspace().join(ASL)).unwrap();
    for (ok, out) in asl_parsers(&definition) {
        assert!(ok, "{out}");
    }
    // Each parser refuses what AWS refuses (the mutants each one catches).
    let mutants: [(&str, &str, usize); 4] = [
        (
            "      \"TimeoutSeconds\": 2595600,\n",
            "      \"TimeoutSeconds\": 86400,\n      \"HeartbeatSeconds\": 86400,\n",
            0,
        ),
        ("import re; answer", "import re;\\nanswer", 0),
        ("\"Next\": \"CheckAnswer\"", "\"Next\": \"CheckAnswr\"", 1),
        ("States.Format('import", "States.Formatt('import", 1),
    ];
    for (from, to, parser) in mutants {
        assert!(definition.contains(from), "the workflow lost {from:?}");
        let results = asl_parsers(&definition.replacen(from, to, 1));
        assert!(
            !results[parser].0,
            "parser {parser} accepted {to:?}: {}",
            results[parser].1
        );
    }
}

/// Every error the workflow catches is one the functions fail with (the
/// error codes' `errorType`s, clarify's task failures) or one Step
/// Functions or Lambda's integration raises: a misspelt name catches
/// nothing, and the run would end on the error instead.
#[test]
fn the_workflow_catches_errors_the_functions_raise() {
    use toolgate_shared::error::ErrorCode;
    let definition: Value =
        serde_json::from_str(&std::fs::read_to_string(workspace().join(ASL)).unwrap()).unwrap();
    let raised: Vec<&str> = ErrorCode::ALL
        .into_iter()
        .map(toolgate_lambda::envelope::error_type)
        .chain([
            toolgate_shared::clarify::callback::EXPIRED,
            toolgate_shared::clarify::callback::CANCELLED,
        ])
        .collect();
    let platform = [
        "States.ALL",
        "States.Timeout",
        "States.TaskFailed",
        "Lambda.TooManyRequestsException",
        "Lambda.ServiceException",
        "Lambda.AWSLambdaException",
        "Lambda.SdkClientException",
    ];
    let mut seen = 0;
    for (name, state) in definition["States"].as_object().unwrap() {
        for handler in ["Catch", "Retry"] {
            for rule in state[handler].as_array().into_iter().flatten() {
                for error in rule["ErrorEquals"].as_array().unwrap() {
                    let error = error.as_str().unwrap();
                    seen += 1;
                    assert!(
                        raised.contains(&error) || platform.contains(&error),
                        "{name} {handler}es {error:?}, which nothing raises (raised: {raised:?})"
                    );
                }
            }
        }
    }
    assert!(seen > 10, "the workflow handles {seen} errors");
}

/// CheckAnswer's script, as Step Functions builds it (States.Format with
/// the answer as a JSON string), run by python.execute for real: a server
/// name passes, anything else stops the workflow at NotAServer.
#[test]
fn the_workflow_checks_answers_with_a_script_the_sandbox_runs() {
    let definition: Value =
        serde_json::from_str(&std::fs::read_to_string(workspace().join(ASL)).unwrap()).unwrap();
    let call = definition["States"]["CheckAnswer"]["Parameters"]["Payload"]["arguments"]["code.$"]
        .as_str()
        .unwrap();
    let literal = call
        .strip_prefix("States.Format('")
        .and_then(|r| r.split_once("', States.JsonToString($.clarification.answer))"))
        .map(|(l, _)| l)
        .expect("States.Format('…', States.JsonToString($.clarification.answer))");
    // States.Format's escapes: \' \{ \} \\.
    let mut template = String::new();
    let mut chars = literal.chars();
    while let Some(c) = chars.next() {
        template.push(if c == '\\' { chars.next().unwrap() } else { c });
    }
    assert_eq!(template.matches("{}").count(), 1, "{template}");
    let server = toolgate_e2e::Server::start(&[]);
    for (answer, server_name) in [
        ("web-1", Some("web-1")),
        ("  db.internal\n", Some("db.internal")),
        ("web-1; rm -rf /", None),
        ("", None),
        ("a\"b", None),
        (&"x".repeat(65), None),
        ("web\u{2028}-1", None),
        ("web\\1", None),
        ("caf\u{e9}", None),
        ("\u{1f680}", None),
        ("{}", None),
        ("web-1/../x", None),
        ("', __import__('os')", None),
    ] {
        let code = template.replacen("{}", &Value::from(answer).to_string(), 1);
        let out = server
            .post_json("/tools/python.execute", &json!({"code": code}))
            .json();
        match server_name {
            Some(name) => {
                assert_eq!(out["exit_code"], 0, "{answer:?}: {out}");
                assert_eq!(out["result"], name, "{answer:?}: {out}");
            }
            None => {
                assert_eq!(out["exit_code"], 1, "{answer:?}: {out}");
                assert!(out.get("result").is_none(), "{answer:?}: {out}");
                assert!(
                    out["stderr"]
                        .as_str()
                        .unwrap()
                        .contains("not a server name"),
                    "{answer:?}: {out}"
                );
            }
        }
    }
}

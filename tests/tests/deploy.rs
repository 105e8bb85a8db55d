//! The AWS deployment as a first-time user meets it: template.yaml's rules
//! (read from the file, with the facts the code decides), each rule seen
//! failing on a broken copy, the workflow through two independent ASL
//! parsers, and the whole stack created in moto's CloudFormation.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_e2e::peer::{moto, tools_dir};
use toolgate_e2e::{support, workspace};
use toolgate_shared::config::{CloudConfig, DEFAULT_TIMEOUT_SECS, PythonConfig, SshConfig};

/// A function's timeout must exceed its tool's longest call by this much
/// (a cold start, connecting, writing the answer).
const MARGIN_SECS: u64 = 30;

/// What the code decides and template.yaml must agree with.
fn facts() -> Value {
    use toolgate_shared::tools::{python_execute, ssh_run};
    let required = |spec: toolgate_shared::tool::ToolSpec| spec.output_schema["required"].clone();
    json!({
        "margin_secs": MARGIN_SECS,
        "tool_max_secs": {
            "python-execute": {"env": "TOOLGATE_PYTHON_TIMEOUT", "default": DEFAULT_TIMEOUT_SECS},
            "ssh": {"env": "TOOLGATE_SSH_MAX_TIMEOUT", "default": SshConfig::default().max_timeout_secs},
            "cloud": {"env": "TOOLGATE_CLOUD_TIMEOUT_SECS", "default": CloudConfig::default().timeout_secs},
            "clarify": {"default": toolgate_shared::clarify::MAX_WAIT_SECS},
        },
        // The person's link and the routes the page uses: the id is the
        // capability (clarify/http.rs).
        "public_routes": [
            "GET /clarifications/{id}",
            "GET /clarifications/{id}/answer",
            "POST /clarifications/{id}/answer",
            "POST /clarifications/{id}/cancel",
        ],
        "sweep_input": {"toolgate": toolgate_shared::lambda::SWEEP},
        "expiring_index": toolgate_shared::clarify::dynamo::EXPIRING_INDEX,
        "required_output": {
            "PythonExecuteFunctionArn": required(python_execute::spec(&PythonConfig::default())),
            "SshFunctionArn": required(ssh_run::spec(Duration::from_secs(600))),
        },
    })
}

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
            "PythonExecuteFunction has no reserved concurrency",
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
        (
            "template.yaml",
            "                Action: [dynamodb:PutItem, dynamodb:GetItem, dynamodb:UpdateItem]",
            "                Action: [dynamodb:PutItem, dynamodb:GetItem, dynamodb:UpdateItem, dynamodb:Scan]",
            "a role may Scan",
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
            "\"ResultSelector\": { \"output.$\": \"$.Payload\" }",
            "\"ResultSelector\": { \"output.$\": \"$.Payload\", \"server.$\": \"$.Payload.result\" }",
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

/// The largest Lambda zip stays at most 20 MB (issue "Faster and smaller":
/// the zip is downloaded on every cold start). scripts/test builds
/// python-execute, the largest by far, with `sam build` for arm64 at
/// opt-level 1; its deflated size tracks the release zip's within 1%
/// (19.56 and 19.66 MB on 2026-12-02), so a feature that adds a megabyte
/// fails here rather than in a deploy.
#[test]
fn the_python_execute_zip_stays_under_20_mb() {
    const LIMIT: u64 = 20_000_000;
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

/// The resource types moto 5.2.5 does not model: API Gateway v2, and SNS
/// subscriptions (its `Topic` is its only SNS CloudFormation model). The
/// report lists them; the rest of the stack is created for real.
const UNMODELLED: [&str; 6] = [
    "AWS::ApiGatewayV2::Api",
    "AWS::ApiGatewayV2::Authorizer",
    "AWS::ApiGatewayV2::Integration",
    "AWS::ApiGatewayV2::Route",
    "AWS::ApiGatewayV2::Stage",
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
    let runs: [&[&str]; 3] = [
        &["AuthMode=IAM"],
        &[
            "AuthMode=JWT",
            "JwtIssuer=https://issuer.example.com",
            "JwtAudience=agents",
        ],
        &["AuthMode=IAM", "--with-vpc"],
    ];
    for args in runs {
        let (ok, report) = deploy_into_moto(&endpoint, args);
        assert!(ok, "{args:?}: {report:#}");
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
        // Only ApiUrl names the (unmodelled) API.
        assert_eq!(
            report["outputs_via_unmodelled"],
            json!({"ApiUrl": ["HttpApi"]})
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
    // What CloudFormation refuses before creating anything (moto skips
    // Rules; the script evaluates them).
    for (args, rule) in [
        (
            &["AuthMode=IAM", "VpcSubnetIds=subnet-1"][..],
            "VpcNeedsSecurityGroups",
        ),
        (&["AuthMode=JWT"][..], "JwtNeedsIssuerAndAudience"),
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

const ASL: &str = "infra/statemachines/clarify-then-run.asl.json";

/// The workflow with the template's ARNs in place, as AWS receives it.
fn substituted(definition: &str) -> String {
    let mut text = definition.to_owned();
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

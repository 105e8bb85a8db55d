//! infra/terraform as a Terraform user meets it: every file parses
//! (python-hcl2), checkov is clean and each skip says why, the layout is
//! what `terraform fmt` makes, the module deploys what template.yaml deploys
//! (tests/support/tf_parity.py), and the example root applies, plans clean
//! and destroys in two regions of one account, against moto with the
//! provider plugin this machine keeps. Each static check is also shown
//! failing on a copy broken on purpose.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use std::time::Duration;

use serde_json::Value;
use toolgate_e2e::launch::Launch;
use toolgate_e2e::peer::{moto, tools_dir};
use toolgate_e2e::timing::machine_share;
use toolgate_e2e::{support, workspace};

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A scratch copy of template.yaml and infra/ (the module and the workflow
/// definition both sides name), with `from` replaced by `to` in `file`;
/// panics if `from` is absent, so a mutation cannot silently stop applying.
fn copy_with(file: &str, from: &str, to: &str) -> PathBuf {
    copy_tree(Some((file, from, to)))
}

fn copy_tree(change: Option<(&str, &str, &str)>) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "toolgate-terraform-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let files = [
        "template.yaml",
        "infra/statemachines/clarify-then-run.asl.json",
    ]
    .into_iter()
    .map(String::from)
    .chain(tf_files().into_iter().map(|p| {
        p.strip_prefix(workspace())
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }));
    let mut applied = false;
    for f in files {
        let mut body = std::fs::read_to_string(workspace().join(&f)).unwrap();
        if let Some((file, from, to)) = change
            && f == file
        {
            assert!(body.contains(from), "{file} no longer contains {from:?}");
            body = body.replacen(from, to, 1);
            applied = true;
        }
        let dest = dir.join(&f);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(dest, body).unwrap();
    }
    if let Some((file, ..)) = change {
        assert!(applied, "no file {file}");
    }
    dir
}

/// Every .tf file under infra/terraform, the example root included.
fn tf_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if !p.file_name().unwrap().to_string_lossy().starts_with('.') {
                    walk(&p, out);
                }
            } else if p.extension().is_some_and(|x| x == "tf") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&workspace().join("infra/terraform"), &mut out);
    out.sort();
    out
}

/// The clarify item's attributes only a decision (or an answer) writes,
/// which only the clarify function's role may write (as deploy.rs's facts).
const DECISION_ATTRIBUTES: [&str; 6] = [
    "decision",
    "approver",
    "decided_at",
    "decided_binding",
    "answer",
    "choice",
];

fn parity(root: &Path) -> Output {
    Command::new(tools_dir().join("aws/bin/python"))
        .arg(support("tf_parity.py"))
        .arg(root.join("template.yaml"))
        .arg(root.join("infra/terraform"))
        .arg(format!("--decisions={}", DECISION_ATTRIBUTES.join(",")))
        .output()
        .expect("run tf_parity.py")
}

fn checkov(dir: &Path) -> Output {
    // Seconds of every core: never beside a test that bounds times.
    let _share = machine_share();
    Command::new(tools_dir().join("checkov/bin/checkov"))
        .args(["--framework", "terraform", "--quiet", "--compact", "-d"])
        .arg(dir)
        .output()
        .expect("run checkov")
}

/// hclwrite.Format, the formatter `terraform fmt` is built on.
fn hcl_format_check(dir: &Path) -> Output {
    Command::new("node")
        .arg(support("hcl_fmt_check.js"))
        .arg(dir)
        .env("NODE_PATH", tools_dir().join("node_modules"))
        .output()
        .expect("run node")
}

#[test]
fn every_tf_file_parses() {
    let files = tf_files();
    // The module's files per concern and the example root.
    for want in [
        "versions.tf",
        "variables.tf",
        "lambda.tf",
        "api.tf",
        "iam.tf",
        "clarify.tf",
        "workflow.tf",
        "outputs.tf",
        "examples/basic/main.tf",
    ] {
        assert!(
            files
                .iter()
                .any(|f| f.ends_with(Path::new("infra/terraform").join(want))),
            "infra/terraform/{want} is missing"
        );
    }
    let out = Command::new(tools_dir().join("aws/bin/python"))
        .arg("-c")
        .arg("import sys, hcl2\nfor f in sys.argv[1:]:\n    with open(f) as h:\n        hcl2.load(h)\nprint(len(sys.argv) - 1, 'parsed')")
        .args(&files)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("{} parsed", files.len())
    );

    // A broken file is an error, not an empty document.
    let dir = copy_with(
        "infra/terraform/lambda.tf",
        "  runtime       = \"provided.al2023\"",
        "  runtime       = \"provided.al2023",
    );
    let out = Command::new(tools_dir().join("aws/bin/python"))
        .arg("-c")
        .arg("import sys, hcl2\nhcl2.load(open(sys.argv[1]))")
        .arg(dir.join("infra/terraform/lambda.tf"))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!out.status.success(), "a broken file parsed");
}

#[test]
fn checkov_is_clean_and_each_skip_says_why() {
    let out = checkov(&workspace().join("infra/terraform"));
    let log = text(&out);
    assert!(out.status.success(), "{log}");
    assert!(log.contains("Failed checks: 0"), "{log}");
    assert!(
        log.contains("Passed checks: "),
        "checkov checked nothing: {log}"
    );

    for file in tf_files() {
        let body = std::fs::read_to_string(&file).unwrap();
        for line in body.lines().filter(|l| l.contains("checkov:skip")) {
            let reason = line
                .trim()
                .strip_prefix("#checkov:skip=CKV")
                .and_then(|rest| rest.split_once(':'))
                .map(|(_, reason)| reason.trim());
            assert!(
                reason.is_some_and(|r| r.len() >= 30),
                "{}: a skip without a reason: {line}",
                file.display()
            );
        }
    }

    // checkov reads our files: a table without point-in-time recovery fails.
    let dir = copy_with(
        "infra/terraform/sessions.tf",
        "  point_in_time_recovery {\n    enabled = true",
        "  point_in_time_recovery {\n    enabled = false",
    );
    let out = checkov(&dir.join("infra/terraform"));
    let _ = std::fs::remove_dir_all(&dir);
    let log = text(&out);
    assert!(!out.status.success(), "{log}");
    assert!(
        log.contains("CKV_AWS_28") && log.contains("aws_dynamodb_table.sessions"),
        "{log}"
    );
}

#[test]
fn the_layout_is_what_terraform_fmt_makes() {
    match Command::new("terraform")
        .args(["fmt", "-check", "-recursive", "-diff"])
        .arg(workspace().join("infra/terraform"))
        .output()
    {
        Ok(out) => assert!(
            out.status.success(),
            "terraform fmt -check:\n{}",
            text(&out)
        ),
        Err(_) => toolgate_e2e::cannot_check(
            "terraform is not installed: `terraform fmt -check` was not run; hclwrite.Format, \
             the formatter it is built on, checks the layout below",
        ),
    }
    let out = hcl_format_check(&workspace().join("infra/terraform"));
    assert!(out.status.success(), "{}", text(&out));

    let dir = copy_with(
        "infra/terraform/outputs.tf",
        "  value       = var.auth_mode",
        "  value = var.auth_mode",
    );
    let out = hcl_format_check(&dir.join("infra/terraform"));
    let _ = std::fs::remove_dir_all(&dir);
    let log = text(&out);
    assert!(!out.status.success(), "{log}");
    assert!(
        log.contains("outputs.tf:") && log.contains("not formatted"),
        "{log}"
    );
}

#[test]
fn terraform_deploys_what_the_sam_template_deploys() {
    let out = parity(workspace());
    let log = text(&out);
    assert!(out.status.success(), "{log}");
    assert!(log.starts_with("parity: ok ("), "{log}");
}

/// Each kind of difference, on either side, fails with a diff naming it.
#[test]
fn parity_fails_on_a_difference_on_either_side() {
    let cases: &[(&str, &str, &str, &[&str])] = &[
        (
            "infra/terraform/main.tf",
            "      memory      = 1024",
            "      memory      = 512",
            &["-   \"memory\": 1024,", "+   \"memory\": 512,"],
        ),
        (
            "template.yaml",
            "      RouteKey: GET /healthz\n      Target: !Sub integrations/${GatewayIntegration}\n      AuthorizationType: !If [UseJwt, JWT, !If [UseIam, AWS_IAM, NONE]]\n      AuthorizerId: !If [UseJwt, !Ref JwtAuthorizer, !Ref AWS::NoValue]",
            "      RouteKey: GET /healthz\n      Target: !Sub integrations/${GatewayIntegration}\n      AuthorizationType: NONE",
            &[
                "\"GET /healthz\"",
                "-   \"authorized\": false,",
                "+   \"authorized\": true,",
            ],
        ),
        (
            "infra/terraform/api.tf",
            "    \"POST /tools/ssh_run\"              = { function = \"ssh\", auth = \"callers\" }\n",
            "",
            &["-  \"POST /tools/ssh_run\": {"],
        ),
        (
            "infra/terraform/iam.tf",
            "actions   = [\"dynamodb:PutItem\", \"dynamodb:GetItem\", \"dynamodb:UpdateItem\", \"dynamodb:DeleteItem\"]",
            "actions   = [\"dynamodb:PutItem\", \"dynamodb:GetItem\", \"dynamodb:UpdateItem\", \"dynamodb:DeleteItem\", \"dynamodb:Scan\"]",
            &["+      \"dynamodb:Scan\","],
        ),
        (
            "infra/terraform/iam.tf",
            "      \"${local.ssm_parameter_arn}${var.ssh_ssm_prefix}/*\",",
            "      \"${local.ssm_parameter_arn}${var.ssh_ssm_prefix}*\",",
            &["+      \"arn:{partition}:ssm:{region}:{account}:parameter{var.ssh_ssm_prefix}*\""],
        ),
        (
            "template.yaml",
            "          TOOLGATE_SSH_MAX_TIMEOUT: !Ref SshTimeoutSeconds",
            "          TOOLGATE_SSH_TIMEOUT: !Ref SshTimeoutSeconds",
            &[
                "-    \"TOOLGATE_SSH_TIMEOUT\"",
                "+    \"TOOLGATE_SSH_MAX_TIMEOUT\"",
            ],
        ),
        (
            "infra/terraform/clarify.tf",
            "  protocol  = \"email\"",
            "  protocol  = \"sms\"",
            &["-   \"protocol\": \"email\",", "+   \"protocol\": \"sms\","],
        ),
        (
            "template.yaml",
            "    Condition: HasNotifyEmail\n",
            "",
            &[
                "-   \"when\": null",
                "+   \"when\": \"clarify_notify_email != ''\"",
            ],
        ),
        (
            "infra/terraform/variables.tf",
            "  default     = 86400",
            "  default     = 3600",
            &[
                "-  \"clarify_expiry_seconds\": 86400,",
                "+  \"clarify_expiry_seconds\": 3600,",
            ],
        ),
        (
            "infra/terraform/workflow.tf",
            "/../statemachines/clarify-then-run.asl.json",
            "/../statemachines/other.asl.json",
            &["+  \"definition\": ", "other.asl.json"],
        ),
        (
            "infra/terraform/lambda.tf",
            "for_each = each.value.vpc && local.in_vpc ? [1] : []",
            "for_each = local.in_vpc ? [1] : []",
            &["cannot read", "vpc_config for_each"],
        ),
        // The approvers' routes, settings and Scan, as the template's.
        (
            "infra/terraform/api.tf",
            "    \"GET /clarifications\"              = { function = \"clarify\", auth = \"approvers\" }",
            "    \"GET /clarifications\"              = { function = \"clarify\", auth = \"open\" }",
            &[
                "\"GET /clarifications\": {",
                "-   \"authorized\": true,",
                "+   \"authorized\": false,",
            ],
        ),
        (
            "infra/terraform/api.tf",
            "    \"POST /slack/interactions\"         = { function = \"clarify\", auth = \"open\" }\n",
            "",
            &["-  \"POST /slack/interactions\": {"],
        ),
        // Two JWT authorizers: the approvers' routes take people's tokens
        // (theirs, once approvers_jwt_audience is set), every other route
        // the agents'; each audience a comma-separated list.
        (
            "infra/terraform/api.tf",
            "    \"POST /approvals/{id}/decision\"    = { function = \"clarify\", auth = \"approvers\" }",
            "    \"POST /approvals/{id}/decision\"    = { function = \"clarify\", auth = \"callers\" }",
            &[
                "-   \"authorizer\": \"authorizer:jwt-approvers when approvers_jwt_audience != '' and auth_mode == JWT, else authorizer:jwt when auth_mode == JWT\",",
                "+   \"authorizer\": \"authorizer:jwt when auth_mode == JWT\",",
            ],
        ),
        (
            "infra/terraform/api.tf",
            "audience = split(\",\", var.approvers_jwt_audience)",
            "audience = split(\",\", var.jwt_audience)",
            &[
                "-   \"audience\": \"split(',', {var.approvers_jwt_audience})\",",
                "+   \"audience\": \"split(',', {var.jwt_audience})\",",
            ],
        ),
        (
            "template.yaml",
            "        Audience: !Split [\",\", !Ref JwtAudience]",
            "        Audience: [!Ref JwtAudience]",
            &["+   \"audience\": \"split(',', {var.jwt_audience})\","],
        ),
        (
            "infra/terraform/api.tf",
            "each.value.auth == \"approvers\" && var.auth_mode == \"JWT\" && var.approvers_jwt_audience != \"\"",
            "each.value.auth == \"approvers\" && var.auth_mode == \"JWT\"",
            &[
                "cannot read",
                "authorizer_id names aws_apigatewayv2_authorizer.approvers when auth_mode == JWT, which exists when approvers_jwt_audience != '' and auth_mode == JWT",
            ],
        ),
        (
            "template.yaml",
            "    Condition: UseApproversJwt\n",
            "    Condition: UseJwt\n",
            &[
                "cannot read",
                "AuthorizerId names ApproversJwtAuthorizer when approvers_jwt_audience != '' and auth_mode == JWT, which exists when auth_mode == JWT",
            ],
        ),
        (
            "infra/terraform/variables.tf",
            "variable \"approvers_jwt_audience\" {",
            "variable \"approvers_audience\" {",
            &[
                "-  \"approvers_jwt_audience\": \"\",",
                "+  \"approvers_audience\": \"\",",
            ],
        ),
        (
            "infra/terraform/iam.tf",
            "  statement {\n    effect    = \"Allow\"\n    actions   = [\"dynamodb:Scan\"]\n    resources = [aws_dynamodb_table.clarify.arn]\n  }\n",
            "",
            &["-      \"dynamodb:Scan\""],
        ),
        (
            "infra/terraform/main.tf",
            "      TOOLGATE_APPROVERS_JWT_GROUP    = var.approvers_jwt_group\n",
            "",
            &["-    \"TOOLGATE_APPROVERS_JWT_GROUP\","],
        ),
        (
            "infra/terraform/variables.tf",
            "  default     = \"cognito:groups\"",
            "  default     = \"groups\"",
            &[
                "-  \"approvers_jwt_claim\": \"cognito:groups\",",
                "+  \"approvers_jwt_claim\": \"groups\",",
            ],
        ),
        // The Slack app's signing secret is the clarify function's alone.
        (
            "infra/terraform/iam.tf",
            "    ssh     = compact([var.clarify_webhook_secret_parameter, var.clarify_slack_webhook_url_parameter])",
            "    ssh     = compact([var.clarify_webhook_secret_parameter, var.clarify_slack_webhook_url_parameter, var.slack_signing_secret_parameter])",
            &[
                "+      \"arn:{partition}:ssm:{region}:{account}:parameter{var.slack_signing_secret_parameter} when slack_signing_secret_parameter != ''\"",
            ],
        ),
        (
            "template.yaml",
            "  NotifySecretsInSsm: !Or [!Condition HasWebhookSecretParameter, !Condition HasSlackWebhookUrlParameter]",
            "  NotifySecretsInSsm: !Or [!Condition HasWebhookSecretParameter]",
            &[
                "-     \"when\": \"clarify_webhook_secret_parameter != ''\"",
                "+     \"when\": \"clarify_slack_webhook_url_parameter != '' or clarify_webhook_secret_parameter != ''\"",
            ],
        ),
    ];
    for (file, from, to, want) in cases {
        let dir = copy_with(file, from, to);
        let out = parity(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        let log = text(&out);
        assert!(!out.status.success(), "{file} with {to:?} passed:\n{log}");
        for w in *want {
            assert!(
                log.contains(w),
                "{file} with {to:?}: wanted {w:?} in:\n{log}"
            );
        }
    }
}

/// The module keeps secrets out of every environment (and so out of the
/// state) and decisions to the clarify function, checked on the module
/// itself as template_rules.py checks the template; each rule broken on
/// purpose fails with its own message.
#[test]
fn the_module_keeps_secrets_out_and_decisions_to_clarify() {
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "infra/terraform/variables.tf",
            "  type        = string\n  default     = \"\"\n  validation {\n    condition     = can(regex(\"^(/[a-zA-Z0-9_.-]+)*$\", var.clarify_webhook_secret_parameter))",
            "  type        = string\n  default     = \"\"\n  sensitive   = true\n  validation {\n    condition     = can(regex(\"^(/[a-zA-Z0-9_.-]+)*$\", var.clarify_webhook_secret_parameter))",
            "rule: cloud's environment gives TOOLGATE_CLARIFY_WEBHOOK_SECRET_PARAMETER the sensitive variable clarify_webhook_secret_parameter",
        ),
        (
            "infra/terraform/main.tf",
            "TOOLGATE_CLARIFY_WEBHOOK_SECRET_PARAMETER = var.clarify_webhook_secret_parameter",
            "TOOLGATE_CLARIFY_WEBHOOK_SECRET = var.clarify_webhook_secret_parameter",
            "rule: cloud's environment has TOOLGATE_CLARIFY_WEBHOOK_SECRET, a secret by its name",
        ),
        (
            "infra/terraform/iam.tf",
            "        \"approval_used_at\",\n",
            "        \"approval_used_at\",\n        \"decided_at\",\n",
            "rule: function:{name}-ssh may write decided_at on the clarify table",
        ),
        (
            "infra/terraform/iam.tf",
            "      variable = \"dynamodb:Attributes\"",
            "      variable = \"dynamodb:LeadingKeys\"",
            "rule: function:{name}-cloud may dynamodb:PutItem, dynamodb:UpdateItem any attribute of the clarify table",
        ),
    ];
    for (file, from, to, want) in cases {
        let dir = copy_with(file, from, to);
        let out = parity(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        let log = text(&out);
        assert!(!out.status.success(), "{file} with {to:?} passed:\n{log}");
        assert!(
            log.contains(want),
            "{file} with {to:?}: wanted {want:?} in:\n{log}"
        );
    }
}

/// The AWS provider plugin this machine kind keeps for offline
/// `terraform init` (`TOOLGATE_TF_PLUGIN_DIR`, else /opt/tf-plugins), when
/// it and the Terraform CLI are both here.
fn offline_terraform() -> Option<PathBuf> {
    let plugins = std::env::var_os("TOOLGATE_TF_PLUGIN_DIR")
        .map_or_else(|| PathBuf::from("/opt/tf-plugins"), PathBuf::from);
    let cli = Command::new("terraform")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    (cli && plugins.join("registry.terraform.io/hashicorp/aws").is_dir()).then_some(plugins)
}

/// Every AWS API the module calls, at moto's `endpoint`, with moto's dummy
/// keys: a Terraform override file, so the example root is applied as a
/// user has it.
fn moto_override(endpoint: &str) -> String {
    let services = [
        "apigatewayv2",
        "cloudwatchlogs",
        "dynamodb",
        "events",
        "iam",
        "lambda",
        "sfn",
        "sns",
        "sts",
    ];
    let endpoints: String = services
        .iter()
        .map(|s| format!("    {s} = \"{endpoint}\"\n"))
        .collect();
    format!(
        "provider \"aws\" {{\n  access_key = \"testing\"\n  secret_key = \"testing\"\n  \
         skip_credentials_validation = true\n  skip_metadata_api_check = true\n  \
         endpoints {{\n{endpoints}  }}\n}}\n\
         module \"toolgate\" {{\n  protect_tables = false\n}}\n"
    )
}

/// What moto holds in `regions` (support/moto_inventory.py).
fn inventory(endpoint: &str, regions: &[&str]) -> Value {
    let out = Launch::new(tools_dir().join("aws/bin/python"))
        .arg(support("moto_inventory.py"))
        .arg(endpoint)
        .args(regions)
        .output();
    assert!(out.status.success(), "moto_inventory.py: {}", text(&out));
    serde_json::from_slice(&out.stdout).expect("inventory JSON")
}

/// `terraform init`, `validate`, then `apply` of the example root in two
/// regions of one account (IAM names are global: a second region must not
/// meet the first one's), `plan` changing nothing after each, and `destroy`
/// leaving nothing. moto stands in for AWS (no AWS account here); its
/// gaps the provider meets are filled in support/moto_serial.py, the state
/// machine's validation by our ASL checker.
#[test]
fn the_module_applies_in_two_regions_plans_clean_and_destroys_in_moto() {
    let Some(plugins) = offline_terraform() else {
        toolgate_e2e::cannot_check(
            "the Terraform CLI or the AWS provider plugin (/opt/tf-plugins, or \
             TOOLGATE_TF_PLUGIN_DIR) is missing: the module was not applied",
        );
        return;
    };
    let (_moto, endpoint) = moto();
    let dir = copy_tree(None);
    let root = dir.join("infra/terraform/examples/basic");
    std::fs::write(root.join("moto_override.tf"), moto_override(&endpoint)).unwrap();
    std::fs::write(dir.join("terraformrc"), "").unwrap();
    // What scripts/build-lambda leaves: a zip per function (moto runs none).
    let zips = dir.join("lambda");
    for f in ["python-execute", "cloud", "ssh", "clarify", "gateway"] {
        std::fs::create_dir_all(zips.join(f)).unwrap();
    }
    let out = Launch::new("python3")
        .args(["-c", "import sys, zipfile\nfor d in sys.argv[1:]:\n    with zipfile.ZipFile(d + '/bootstrap.zip', 'w') as z:\n        z.writestr('bootstrap', '#!/bin/sh\\n')"])
        .args(["python-execute", "cloud", "ssh", "clarify", "gateway"].map(|f| zips.join(f)))
        .output();
    assert!(out.status.success(), "{}", text(&out));

    let terraform = |args: &[&str]| {
        let out = Launch::new("terraform")
            .arg(format!("-chdir={}", root.display()))
            .args(args)
            .env("TF_CLI_CONFIG_FILE", dir.join("terraformrc"))
            .env("TF_IN_AUTOMATION", "1")
            .env("CHECKPOINT_DISABLE", "1")
            .within(Duration::from_secs(300))
            .output();
        (out.status.code(), text(&out))
    };
    let ok = |args: &[&str]| {
        let (code, log) = terraform(args);
        assert_eq!(code, Some(0), "terraform {args:?}:\n{log}");
        log
    };
    let plugin_dir = format!("-plugin-dir={}", plugins.display());
    ok(&[
        "init",
        "-backend=false",
        "-input=false",
        "-no-color",
        &plugin_dir,
    ]);
    ok(&["validate", "-no-color"]);

    let regions = ["us-east-1", "us-west-2"];
    let vars = |region: &str| {
        [
            format!("-state={}/{region}.tfstate", dir.display()),
            format!("-var=region={region}"),
            format!("-var=lambda_build_dir={}", zips.display()),
            "-var=jwt_issuer=https://cognito-idp.us-east-1.amazonaws.com/us-east-1_AbCdEf123"
                .to_string(),
            "-var=jwt_audience=agent-client".to_string(),
            "-input=false".to_string(),
            "-no-color".to_string(),
        ]
    };
    let with = |verb: &[&str], region: &str| {
        let v = vars(region);
        let mut args: Vec<&str> = verb.to_vec();
        args.extend(v.iter().map(String::as_str));
        terraform(&args)
    };
    for region in regions {
        let (code, log) = with(&["apply", "-auto-approve"], region);
        assert_eq!(code, Some(0), "apply in {region}:\n{log}");
        let url = format!(".execute-api.{region}.amazonaws.com\"");
        assert!(log.contains(&url), "api_url in {region}:\n{log}");
        // 2: there are changes to make; 0: none (the provider read back
        // what it wrote).
        let (code, log) = with(&["plan", "-detailed-exitcode"], region);
        assert_eq!(code, Some(0), "a plan after apply in {region}:\n{log}");
    }
    let held = inventory(&endpoint, &regions);
    assert_eq!(held["roles"].as_array().unwrap().len(), 12, "{held:#}");
    for region in regions {
        let r = &held[region];
        assert_eq!(r["functions"].as_array().unwrap().len(), 5, "{held:#}");
        assert_eq!(
            r["tables"],
            serde_json::json!(["toolgate-clarify", "toolgate-sessions"])
        );
        assert_eq!(
            r["state_machines"],
            serde_json::json!(["toolgate-clarify-then-run"])
        );
        assert_eq!(r["apis"], serde_json::json!(["toolgate-api"]));
    }
    // The stand-in validator refuses what AWS refuses.
    assert_eq!(held["refused"]["result"], "FAIL", "{held:#}");

    for region in regions {
        let (code, log) = with(&["destroy", "-auto-approve"], region);
        assert_eq!(code, Some(0), "destroy in {region}:\n{log}");
    }
    let left = inventory(&endpoint, &regions);
    assert_eq!(left["roles"], serde_json::json!([]), "{left:#}");
    for region in regions {
        for (kind, names) in left[region].as_object().unwrap() {
            assert_eq!(names, &serde_json::json!([]), "{kind} left in {region}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

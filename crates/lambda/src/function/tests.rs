use super::*;

/// An HTTP API event for `GET path`, from the authorizer's `authorizer`.
fn event(path: &str, authorizer: Value) -> Value {
    let mut e: Value = serde_json::from_str(include_str!(
        "../../../../tests/fixtures/lambda/apigw_v2_healthz.json"
    ))
    .unwrap();
    e["rawPath"] = json!(path);
    e["requestContext"]["http"]["path"] = json!(path);
    e["requestContext"]["authorizer"] = authorizer;
    e
}

async fn answer(f: &Function, event: Value) -> (u64, Value) {
    let r = f
        .handle(LambdaEvent::new(event, Context::default()))
        .await
        .unwrap();
    let body: Value = serde_json::from_str(r["body"].as_str().unwrap()).unwrap();
    (r["statusCode"].as_u64().unwrap(), body)
}

#[tokio::test]
async fn the_authorizers_identity_is_an_approver_only_when_configured() {
    let approvals = ApprovalsConfig {
        jwt_group: Some("ops".into()),
        iam_approvers: vec!["arn:aws:iam::123456789012:user/boss".into()],
        ..Default::default()
    };
    let tools = Toolset::new();
    let f = Function::with_approvals(&tools, &approvals);
    let jwt = |groups: &str| json!({"jwt": {"claims": {"sub": "u-1", "cognito:groups": groups}}});
    let iam = |arn: &str| json!({"iam": {"userArn": arn}});
    // Past the auth layer: this function serves no approvals (404).
    for who in [
        jwt("[admins ops]"),
        iam("arn:aws:iam::123456789012:user/boss"),
    ] {
        let (status, body) = answer(&f, event("/approvals", who.clone())).await;
        assert_eq!(status, 404, "{who}: {body}");
    }
    // Authenticated, but no approver.
    for who in [jwt("[admins]"), iam("arn:aws:iam::123456789012:user/agent")] {
        let (status, body) = answer(&f, event("/approvals", who.clone())).await;
        assert_eq!(
            (status, &body["error"]["code"]),
            (403, &json!("forbidden")),
            "{who}"
        );
    }
    // Without the configuration nobody is.
    let f = Function::new(&tools);
    let (status, _) = answer(&f, event("/approvals", jwt("[ops]"))).await;
    assert_eq!(status, 403);
    let (status, _) = answer(&f, event("/approvals", json!(null))).await;
    assert_eq!(status, 401);
}

/// API Gateway's event for `POST /tools/{name}` with `{}` as its body.
fn post_tool_event(name: &str) -> Value {
    let mut e: Value = serde_json::from_str(include_str!(
        "../../../../tests/fixtures/lambda/apigw_v2_call.json"
    ))
    .unwrap();
    e["rawPath"] = json!(format!("/tools/{name}"));
    e["requestContext"]["http"]["path"] = json!(format!("/tools/{name}"));
    e["body"] = json!("{}");
    e["isBase64Encoded"] = json!(false);
    e["headers"]["content-length"] = json!("2");
    e
}

/// A tool answering how long its call may still run, in ms.
struct TimeLeft(toolgate_shared::tool::ToolSpec);

impl toolgate_shared::tool::Tool for TimeLeft {
    fn spec(&self) -> &toolgate_shared::tool::ToolSpec {
        &self.0
    }
    fn call<'a>(&'a self, _: Value, ctx: &'a CallContext) -> toolgate_shared::tool::ToolFuture<'a> {
        let left = ctx
            .deadline
            .map(|d| d.saturating_duration_since(Instant::now()).as_millis() as u64);
        Box::pin(async move { Ok(json!({ "left_ms": left })) })
    }
}

fn time_left_function() -> Function {
    function_with(Arc::new(TimeLeft(toolgate_shared::tool::ToolSpec {
        name: "time_left".into(),
        ..Default::default()
    })))
}

fn function_with(tool: Arc<dyn toolgate_shared::tool::Tool>) -> Function {
    let mut tools = Toolset::new();
    tools.registry.add(tool).unwrap();
    Function::new(&tools)
}

/// A tool answering as python.execute does, with 4.5 MB and 1 MB of
/// returned files (6.7 MB as base64: past Lambda's 6 MB).
struct BigFiles(toolgate_shared::tool::ToolSpec);

impl toolgate_shared::tool::Tool for BigFiles {
    fn spec(&self) -> &toolgate_shared::tool::ToolSpec {
        &self.0
    }
    fn call<'a>(&'a self, _: Value, _: &'a CallContext) -> toolgate_shared::tool::ToolFuture<'a> {
        Box::pin(async move {
            Ok(json!({
                "stdout": "made two files\n", "stderr": "", "exit_code": 0, "timed_out": false,
                "files": {
                    "big.bin": {"base64": "A".repeat(6_000_000)},
                    "small.bin": {"base64": "B".repeat(1_400_000)},
                    "note.txt": "a \"quoted\" line\n",
                }
            }))
        })
    }
}

fn big_files_function() -> Function {
    function_with(Arc::new(BigFiles(toolgate_shared::tool::ToolSpec {
        name: "big_files".into(),
        ..Default::default()
    })))
}

/// The files kept and the note, whatever the route.
fn left_out_big_only(out: &Value) {
    let files = out["files"].as_object().unwrap();
    assert!(!files.contains_key("big.bin"), "{}", out["stderr"]);
    assert!(files.contains_key("small.bin") && files.contains_key("note.txt"));
    assert!(
            out["stderr"]
                .as_str()
                .unwrap()
                .starts_with("[file \"big.bin\" (4500000 bytes) not returned: the answer would pass this runtime's response limit of"),
            "{}",
            out["stderr"]
        );
}

#[tokio::test]
async fn answers_past_lambdas_6_mb_leave_files_out_on_every_route() {
    let f = big_files_function();
    // Direct.
    let out = f
        .handle(LambdaEvent::new(
            json!({"tool": "big_files", "arguments": {}}),
            Context::default(),
        ))
        .await
        .unwrap();
    left_out_big_only(&out);
    // POST /tools/{name}: the whole response, as API Gateway takes it.
    let e = post_tool_event("big_files");
    let r = f
        .handle(LambdaEvent::new(e, Context::default()))
        .await
        .unwrap();
    let whole = r.to_string().len();
    assert!(whole <= 6 * 1024 * 1024, "{whole}");
    assert_eq!(r["statusCode"], 200);
    left_out_big_only(&serde_json::from_str(r["body"].as_str().unwrap()).unwrap());
    // /mcp: the result as text, as structured content and its files as
    // resources, all inside API Gateway's body.
    let mut e: Value = serde_json::from_str(include_str!(
        "../../../../tests/fixtures/lambda/apigw_v2_mcp_call_ssh.json"
    ))
    .unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "big_files", "arguments": {}}})
    .to_string();
    e["headers"]["content-length"] = json!(call.len().to_string());
    e["body"] = json!(call);
    let r = f
        .handle(LambdaEvent::new(e, Context::default()))
        .await
        .unwrap();
    let whole = r.to_string().len();
    assert!(whole <= 6 * 1024 * 1024, "{whole}");
    let body: Value = serde_json::from_str(r["body"].as_str().unwrap()).unwrap();
    let result = &body["result"];
    assert_eq!(result["isError"], false, "{}", result["content"][0]);
    left_out_big_only(&result["structuredContent"]);
}

fn near(got: &Value, want_ms: u64) -> bool {
    got.as_u64()
        .is_some_and(|g| g <= want_ms && g + 1_500 >= want_ms)
}

#[tokio::test]
async fn a_forwarded_calls_deadline_is_kept() {
    let f = time_left_function();
    let at = crate::envelope::epoch_ms(Instant::now() + Duration::from_secs(7));
    let payload = json!({"tool": "time_left", "arguments": {}, "deadline": at});
    let got = f.direct(payload, &CallContext::default()).await.unwrap();
    assert!(near(&got["left_ms"], 7_000), "{got}");
    // The function's own, sooner deadline wins.
    let ctx = CallContext {
        deadline: Some(Instant::now() + Duration::from_secs(3)),
        ..Default::default()
    };
    let payload = json!({"tool": "time_left", "arguments": {}, "deadline": at});
    let got = f.direct(payload, &ctx).await.unwrap();
    assert!(near(&got["left_ms"], 3_000), "{got}");
}

#[tokio::test]
async fn api_gateways_limit_counts_from_when_it_took_the_request() {
    let f = time_left_function();
    let mut e = post_tool_event("time_left");
    let now = crate::envelope::epoch_ms(Instant::now());
    // Taken 10 s ago (a cold start): 29 - 10 s left. From the future,
    // or a stored event's old time: 29 s from now.
    for (received, left) in [
        (now - 10_000, 19_000),
        (now + 60_000, 29_000),
        (now - 3_600_000, 29_000),
    ] {
        e["requestContext"]["timeEpoch"] = json!(received);
        let (status, body) = answer(&f, e.clone()).await;
        assert_eq!(status, 200, "{body}");
        assert!(near(&body["left_ms"], left), "{received}: {body}");
    }
}

#[test]
fn a_groups_claim_in_every_shape_api_gateway_sends() {
    for raw in [
        r#"["ops","approvers"]"#,
        "[ops approvers]",
        " [ops  approvers] ",
    ] {
        assert_eq!(claim_values(raw), ["ops", "approvers"], "{raw}");
    }
    assert_eq!(claim_values("approvers"), ["approvers"]);
    // One group whose name holds a separator is that one group.
    assert_eq!(claim_values("[eng,ops]"), ["eng,ops"]);
    assert_eq!(claim_values("eng,ops"), ["eng,ops"]);
    assert_eq!(claim_values("Team ops"), ["Team ops"]);
    assert_eq!(claim_values(r#"["Team ops"]"#), ["Team ops"]);
    assert!(claim_values("[]").is_empty());
    assert!(claim_values("").is_empty());
}

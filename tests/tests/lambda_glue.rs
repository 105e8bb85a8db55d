//! The Lambda glue in process: committed events of each kind (API Gateway
//! HTTP API v2, Function URL, direct invocation) through the same
//! `Function` the Lambda binaries run, with the real sandbox behind it
//! (its zygote is the `toolgate` binary, which shares the sandbox code).
//! `lambda_invoke.rs` sends the same fixtures through the real Runtime API.

use std::time::{Duration, Instant};

use lambda_http::lambda_runtime::LambdaEvent;
use serde_json::json;
use toolgate_e2e::lambda_events::{context, fixture, http_parts, invoke, python_function};
use toolgate_e2e::timing::machine_lock;
use toolgate_lambda::Function;

fn function() -> Function {
    function_with_timeout(None)
}

/// A function whose python.execute timeout is configured (else the default 20 s).
fn function_with_timeout(secs: Option<u64>) -> Function {
    let env = move |key: &str| {
        (key == "TOOLGATE_PYTHON_TIMEOUT")
            .then_some(secs)
            .flatten()
            .map(|s| s.to_string())
    };
    python_function(&env)
}

#[tokio::test(flavor = "multi_thread")]
async fn api_gateway_lists_tools_in_the_requested_format() {
    let f = function();
    let resp = invoke(&f, fixture("apigw_v2_list_tools.json"))
        .await
        .expect("HTTP events always answer");
    let (status, headers, body) = http_parts(&resp);
    assert_eq!(status, 200, "{resp}");
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(body["tools"][0]["function"]["name"], "python__execute");
}

#[tokio::test(flavor = "multi_thread")]
async fn api_gateway_calls_python_execute() {
    let f = function();
    let (status, _, body) = http_parts(&invoke(&f, fixture("apigw_v2_call.json")).await.unwrap());
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["stdout"], "hi from lambda\n");
    assert_eq!(body["result"], json!({"sum": 45}));
    assert_eq!(body["exit_code"], 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn api_gateway_base64_body_is_decoded() {
    let f = function();
    let (status, _, body) = http_parts(
        &invoke(&f, fixture("apigw_v2_call_base64.json"))
            .await
            .unwrap(),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["stdout"], "é ✓\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn api_gateway_errors_keep_the_contract() {
    let f = function();
    let (status, headers, body) =
        http_parts(&invoke(&f, fixture("apigw_v2_bad_json.json")).await.unwrap());
    assert_eq!(status, 400);
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(body["error"]["code"], "invalid_input");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not valid JSON"),
        "{body}"
    );

    let (status, _, body) = http_parts(
        &invoke(&f, fixture("apigw_v2_unknown_tool.json"))
            .await
            .unwrap(),
    );
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "unknown_tool");
}

#[tokio::test(flavor = "multi_thread")]
async fn api_gateway_healthz_reports_the_walls() {
    let f = function();
    let (status, _, body) =
        http_parts(&invoke(&f, fixture("apigw_v2_healthz.json")).await.unwrap());
    assert_eq!(status, 200);
    assert_eq!(body["tools"], json!(["python.execute"]));
    assert!(body["sandbox"]["walls"].is_object(), "{body}");
    // A route without an authorizer (AuthMode NONE): nothing but "ok".
    let mut anonymous = fixture("apigw_v2_healthz.json");
    anonymous["requestContext"]
        .as_object_mut()
        .unwrap()
        .remove("authorizer");
    let (status, _, body) = http_parts(&invoke(&f, anonymous).await.unwrap());
    assert_eq!((status, body), (200, json!({"status": "ok"})));
}

#[tokio::test(flavor = "multi_thread")]
async fn function_url_event_returns_a_failed_script_as_a_result() {
    let f = function();
    let (status, _, body) =
        http_parts(&invoke(&f, fixture("function_url_call.json")).await.unwrap());
    assert_eq!(status, 200, "a script's failure is a result: {body}");
    assert_eq!(body["exit_code"], 1);
    assert!(
        body["stderr"]
            .as_str()
            .unwrap()
            .contains("ValueError: from a function URL")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn direct_invocation_with_arguments_or_envelope() {
    let f = function();
    let out = invoke(&f, fixture("direct_arguments.json")).await.unwrap();
    assert_eq!(out["result"], json!({"answer": 42}), "{out}");

    // A script's failure is a normal return, not a function error.
    let out = invoke(&f, fixture("direct_envelope.json")).await.unwrap();
    assert_eq!(out["exit_code"], 3, "{out}");
    assert_eq!(out["stdout"], "partial\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn direct_invocation_bad_input_is_an_invalid_input_function_error() {
    let f = function();
    for (payload, needle) in [
        (fixture("direct_invalid.json"), "code"),
        (json!("print(1)"), ""),
        (json!([1, 2]), ""),
        (json!(null), ""),
        (json!({"tool": 7}), "\"tool\" must be"),
        (
            json!({"tool": "python.execute", "arguments": "print(1)"}),
            "\"arguments\" must be",
        ),
    ] {
        let (kind, message) = invoke(&f, payload.clone())
            .await
            .expect_err(&payload.to_string());
        assert_eq!(kind, "InvalidInput", "{payload}: {message}");
        assert!(message.contains(needle), "{payload}: {message}");
    }
    // An unknown name is UnknownTool on every transport (`every_transport.rs`).
    let (kind, message) = invoke(&f, fixture("direct_unknown_tool.json"))
        .await
        .expect_err("an unknown tool");
    assert_eq!(kind, "UnknownTool", "{message}");
    assert!(message.contains("python.evaluate"), "{message}");
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_http_event_is_an_error_not_a_panic() {
    let f = function();
    let mut event = fixture("apigw_v2_call.json");
    event["headers"] = json!("not a map");
    let err = invoke(&f, event).await.expect_err("unreadable event");
    assert_eq!(err.0, "InvalidEvent", "{err:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn remaining_time_lowers_the_timeout_and_says_so() {
    let _machine = machine_lock();
    let f = function();
    let payload = json!({"code": "while True:\n    pass"});
    let started = Instant::now();
    let out = f
        .handle(LambdaEvent::new(
            payload,
            context(Duration::from_millis(2500)),
        ))
        .await
        .expect("a timeout is a result");
    let wall = started.elapsed();
    assert_eq!(out["timed_out"], true, "{out}");
    assert_eq!(out["exit_code"], -1);
    assert!(
        out["stderr"]
            .as_str()
            .unwrap()
            .contains("timeout lowered to"),
        "{out}"
    );
    // Stopped before Lambda's own deadline, with the safety margin to spare.
    assert!(wall < Duration::from_millis(2400), "took {wall:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn api_gateway_caps_the_timeout_at_its_30_s_limit_but_function_urls_do_not() {
    let f = function_with_timeout(Some(120));
    let args = json!({"code": "print(1)"}).to_string();
    let mut via_gateway = fixture("apigw_v2_call.json");
    via_gateway["body"] = json!(args);
    via_gateway["headers"]["content-length"] = json!(args.len().to_string());
    let mut via_url = fixture("function_url_call.json");
    via_url["body"] = json!(args);
    via_url["headers"]["content-length"] = json!(args.len().to_string());

    let long = |event| f.handle(LambdaEvent::new(event, context(Duration::from_secs(900))));
    let (_, _, body) = http_parts(&long(via_gateway).await.unwrap());
    assert_eq!(body["stdout"], "1\n");
    assert!(
        body["stderr"]
            .as_str()
            .unwrap()
            .contains("timeout lowered to 28s"),
        "{body}"
    );
    let (_, _, body) = http_parts(&long(via_url).await.unwrap());
    assert_eq!(body["stderr"], "", "{body}");
}

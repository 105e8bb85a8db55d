//! The SSH tools behind the Lambda glue, in process: the caller's scope from
//! a JWT claim (which outranks the header), from the header, and from a
//! direct invocation's `scope`; against a real sshd on loopback.

use serde_json::{Value, json};
use toolgate_e2e::lambda_events::{fixture, http_parts, invoke};
use toolgate_e2e::sshd::Sshd;
use toolgate_lambda::Function;
use toolgate_shared::config::Config;
use toolgate_shared::toolset::Toolset;

async fn function(d: &Sshd) -> Function {
    let text = format!("{}{}", d.server_toml("box", ""), d.server_toml("db", ""));
    let cfg = Config::from_parts(&text, "(test)", &|_: &str| None).expect("config");
    let tools = toolgate_ssh::WithSsh::with_ssh(Toolset::new(), &cfg)
        .await
        .expect("ssh tools");
    Function::new(&tools)
}

/// An HTTP API event calling `tool` with `args`, with these JWT claims and headers.
fn event(tool: &str, args: &Value, claims: Value, headers: Value) -> Value {
    let mut e = fixture("apigw_v2_call.json");
    e["rawPath"] = json!(format!("/tools/{tool}"));
    e["requestContext"]["http"]["path"] = e["rawPath"].clone();
    e["pathParameters"]["name"] = json!(tool);
    e["body"] = json!(args.to_string());
    e["headers"]["content-length"] = json!(args.to_string().len().to_string());
    for (k, v) in claims.as_object().unwrap() {
        e["requestContext"]["authorizer"]["jwt"]["claims"][k] = v.clone();
    }
    for (k, v) in headers.as_object().unwrap() {
        e["headers"][k] = v.clone();
    }
    e
}

#[tokio::test(flavor = "multi_thread")]
async fn the_jwt_claim_scopes_the_call_and_outranks_the_header() {
    let d = Sshd::start();
    let f = function(&d).await;
    let run_box = json!({"server_name": "box", "command": "echo in scope"});
    // API Gateway renders a list claim as "[a b]".
    let claim = json!({"toolgate_servers": "[box]"});

    let (status, _, body) = http_parts(
        &invoke(&f, event("ssh_run", &run_box, claim.clone(), json!({})))
            .await
            .unwrap(),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["stdout"], "in scope\n");

    let (status, _, body) = http_parts(
        &invoke(
            &f,
            event(
                "ssh_run",
                &json!({"server_name": "db", "command": "id"}),
                claim.clone(),
                json!({}),
            ),
        )
        .await
        .unwrap(),
    );
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "forbidden");

    // The header cannot widen what the claim allows...
    let (status, _, _) = http_parts(
        &invoke(
            &f,
            event(
                "ssh_run",
                &json!({"server_name": "db", "command": "id"}),
                claim.clone(),
                json!({"x-toolgate-servers": "db"}),
            ),
        )
        .await
        .unwrap(),
    );
    assert_eq!(status, 403);
    // ...and without a claim, the header narrows.
    let (_, _, body) = http_parts(
        &invoke(
            &f,
            event(
                "list_servers",
                &json!({}),
                json!({}),
                json!({"x-toolgate-servers": "db"}),
            ),
        )
        .await
        .unwrap(),
    );
    assert_eq!(body["servers"].as_array().unwrap().len(), 1, "{body}");
    assert_eq!(body["servers"][0]["name"], "db");
    // Neither: every configured server.
    let (_, _, body) = http_parts(
        &invoke(&f, event("list_servers", &json!({}), json!({}), json!({})))
            .await
            .unwrap(),
    );
    assert_eq!(body["servers"].as_array().unwrap().len(), 2, "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_direct_invocation_carries_its_scope() {
    let d = Sshd::start();
    let f = function(&d).await;
    let v = invoke(&f, fixture("direct_ssh_run.json"))
        .await
        .expect("in scope");
    assert_eq!(v["stdout"], "from a state machine\n");
    let (kind, msg) = invoke(&f, fixture("direct_ssh_out_of_scope.json"))
        .await
        .expect_err("out of scope");
    assert_eq!(kind, "Forbidden", "{msg}");
    for bad in [
        json!({"servers": "box"}),
        json!({"servers": [1]}),
        json!({"hosts": ["box"]}),
        json!(["box"]),
    ] {
        let payload = json!({"tool": "list_servers", "arguments": {}, "scope": bad});
        let (kind, msg) = invoke(&f, payload).await.expect_err("bad scope");
        assert_eq!(kind, "InvalidInput", "{msg}");
        assert!(msg.contains("scope"), "{msg}");
    }
}

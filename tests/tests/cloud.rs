//! Cloud tools against two instances of the MCP reference server
//! (`@modelcontextprotocol/server-everything`, streamable HTTP) on loopback,
//! as two accounts; accounts from the config file, and from moto's SSM.

use std::time::Duration;

use serde_json::{Value, json};
use toolgate_e2e::launch::Launch;
use toolgate_e2e::peer::{
    everything, everything_recording_headers, free_port, moto, recorded_headers,
};
use toolgate_e2e::{Response, Server, TempPath, temp_file};

fn config_file(accounts: &[(&str, u16)]) -> TempPath {
    let mut text = String::new();
    for (id, port) in accounts {
        text.push_str(&format!(
            "[clouds.{id}]\nurl = \"http://127.0.0.1:{port}/mcp\"\n"
        ));
    }
    temp_file("toolgate-cloud", &text)
}

/// A call `account`'s upstream could not answer: 502 `upstream_unavailable`
/// naming the account. Returns the message.
fn unavailable(r: &Response, account: &str) -> String {
    assert_eq!(r.status, 502, "{}", String::from_utf8_lossy(&r.body));
    let e = r.json();
    assert_eq!(e["error"]["code"], "upstream_unavailable");
    let msg = e["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(msg.contains(&format!("{account:?}")), "{e}");
    msg
}

/// A call answered 200 with `text` in its result; `what` names it on failure.
fn answered_with(r: &Response, text: &str, what: &str) {
    assert_eq!(
        r.status,
        200,
        "{what}: {}",
        String::from_utf8_lossy(&r.body)
    );
    assert!(r.json().to_string().contains(text), "{what}: {}", r.json());
}

fn names(s: &Server, format: &str) -> Vec<String> {
    let r = s.get(&format!("/tools?format={format}"));
    assert_eq!(r.status, 200);
    r.json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t.get("function")
                .map(|f| f["name"].clone())
                .unwrap_or_else(|| t["name"].clone())
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no content: {result}"))
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn two_accounts_listed_called_and_isolated() {
    let (_alpha, pa) = everything();
    let (mut beta, pb) = everything();
    let cfg = config_file(&[("alpha", pa), ("beta-2", pb)]);
    let s = Server::start_with_args(&[], &["--config", cfg.0.to_str().unwrap()]);

    // Listing with prefixes, in every format; python.execute is still there.
    for format in ["native", "openai", "anthropic", "mcp"] {
        let n = names(&s, format);
        for want in [
            "alpha__echo",
            "beta-2__echo",
            "alpha__get-sum",
            "beta-2__get-sum",
        ] {
            assert!(
                n.iter().any(|x| x == want),
                "{format}: {want} missing from {n:?}"
            );
        }
        assert!(n.iter().all(|x| x.len() <= 64));
    }
    let native = s.get("/tools").json();
    let echo = native["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "alpha__echo")
        .unwrap()
        .clone();
    assert_eq!(echo["description"], "Echoes back the input string");
    assert_eq!(
        echo["input_schema"]["properties"]["message"]["type"],
        "string"
    );

    // A forwarded call, result checked.
    let r = s.post_json(
        "/tools/alpha__echo",
        &json!({"message": "hello through the proxy"}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let out = r.json();
    assert!(text_of(&out).contains("hello through the proxy"), "{out}");
    assert_ne!(out["isError"], true);
    let r = s.post_json("/tools/beta-2__get-sum", &json!({"a": 2, "b": 40}));
    assert_eq!(r.status, 200);
    assert!(text_of(&r.json()).contains("42"), "{}", r.json());

    // The tool's own error comes back as a result, not a failed call.
    let r = s.post_json("/tools/alpha__get-sum", &json!({"a": "two", "b": 1}));
    let out = r.json();
    assert_eq!(r.status, 200, "{out}");
    assert_eq!(out["isError"], true, "{out}");

    // Unknown prefixed names.
    let r = s.post_json("/tools/alpha__no-such-tool", &json!({}));
    assert_eq!(r.status, 404);
    let msg = r.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(
        msg.contains("alpha") && msg.contains("alpha__echo"),
        "{msg}"
    );
    let r = s.post_json("/tools/gamma__echo", &json!({"message": "x"}));
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["code"], "unknown_tool");
    let r = s.post_json("/tools/alpha__echo", &json!(["not", "an", "object"]));
    assert_eq!(r.status, 400);

    // One account dies: the other keeps working, the dead one says so.
    beta.kill();
    let r = s.post_json("/tools/beta-2__echo", &json!({"message": "anyone?"}));
    let msg = unavailable(&r, "beta-2");
    // In words, naming the account's url: no client type names.
    assert!(
        msg.contains("http://127.0.0.1:")
            && !msg.contains("/mcp")
            && !msg.contains("rmcp")
            && !msg.contains("Transport ["),
        "{msg}"
    );
    // /healthz says so at once, not at the next listing.
    let health = s.get("/healthz").json();
    assert_eq!(
        health["cloud"]["accounts"]["beta-2"]["ok"], false,
        "{health}"
    );
    assert_eq!(
        health["cloud"]["accounts"]["beta-2"]["error"],
        msg.as_str(),
        "{health}"
    );
    let r = s.post_json("/tools/alpha__echo", &json!({"message": "still here"}));
    assert_eq!(r.status, 200);
    assert!(text_of(&r.json()).contains("still here"));

    // The listing is cached: many calls and listings, one tools/list per account.
    for _ in 0..5 {
        s.get("/tools");
        s.post_json("/tools/alpha__echo", &json!({"message": "again"}));
    }
    let listed = s
        .logs()
        .lines()
        .filter(|l| l.contains("cloud account listed") && l.contains("\"alpha\""))
        .count();
    assert_eq!(listed, 1, "{}", s.logs());
    let health = s.get("/healthz").json();
    assert_eq!(health["cloud"]["accounts"]["alpha"]["ok"], true, "{health}");
}

#[test]
fn listing_is_refreshed_after_its_ttl() {
    let (_alpha, pa) = everything();
    let cfg = config_file(&[("alpha", pa)]);
    let s = Server::start_with_args(
        &[("TOOLGATE_CLOUD_TTL_SECS", "1")],
        &["--config", cfg.0.to_str().unwrap()],
    );
    let count = |s: &Server| s.logs().matches("cloud account listed").count();
    assert_eq!(count(&s), 1);
    // Once the 1 s TTL has passed, a listing is served from the cache and
    // refreshed in the background: ask until the refresh is logged.
    toolgate_e2e::timing::poll_until(Duration::from_secs(10), "a refreshed listing", || {
        s.get("/tools");
        (count(&s) >= 2).then_some(())
    });
}

#[test]
fn an_account_down_at_start_does_not_stop_the_others() {
    let (_alpha, pa) = everything();
    let dead = free_port();
    let cfg = config_file(&[("alpha", pa), ("gone", dead)]);
    let s = Server::start_with_args(&[], &["--config", cfg.0.to_str().unwrap()]);
    let n = names(&s, "native");
    assert!(n.iter().any(|x| x == "alpha__echo"));
    assert!(!n.iter().any(|x| x.starts_with("gone__")));
    let r = s.post_json("/tools/gone__echo", &json!({"message": "x"}));
    assert_eq!(
        unavailable(&r, "gone"),
        format!(
            "Cloud account \"gone\" is unavailable: nothing accepts connections at \
             http://127.0.0.1:{dead} (connection refused): check that the account's MCP \
             server runs there"
        )
    );
    assert_eq!(
        s.get("/healthz").json()["cloud"]["accounts"]["gone"]["ok"],
        false
    );
}

#[test]
fn bad_account_ids_are_refused_at_start() {
    let cfg = temp_file(
        "toolgate-cloud-bad",
        "[clouds.a__b]\nurl = \"http://127.0.0.1:9/mcp\"\n",
    );
    let out = Launch::toolgate(&["tools", "--config", cfg.0.to_str().unwrap()]).output();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a__b") && err.contains("must match"), "{err}");
}

const AWS_ENV: [(&str, &str); 3] = [
    ("AWS_ACCESS_KEY_ID", "testing"),
    ("AWS_SECRET_ACCESS_KEY", "testing"),
    ("AWS_REGION", "us-east-1"),
];

#[tokio::test(flavor = "multi_thread")]
async fn accounts_come_from_ssm_through_the_sdk() {
    let (_moto, endpoint) = moto();
    let (alpha, pa) = everything_recording_headers();
    let (beta, pb) = everything_recording_headers();
    let ssm = toolgate_e2e::peer::moto_ssm(&endpoint).await;
    let put = |name: &str, value: String, secure: bool| {
        let ssm = ssm.clone();
        let name = name.to_owned();
        async move {
            ssm.put_parameter()
                .name(name)
                .value(value)
                .r#type(if secure {
                    aws_sdk_ssm::types::ParameterType::SecureString
                } else {
                    aws_sdk_ssm::types::ParameterType::String
                })
                .send()
                .await
                .expect("put_parameter");
        }
    };
    put("/toolgate/clouds/alpha/token", "s3cret-token".into(), true).await;
    put(
        "/toolgate/clouds/alpha",
        json!({"url": format!("http://127.0.0.1:{pa}/mcp"), "token_parameter": "/toolgate/clouds/alpha/token", "headers": {"X-Tenant": "t1"}}).to_string(),
        false,
    )
    .await;
    put("/toolgate/clouds/beta/token", "other-token".into(), true).await;
    put(
        "/toolgate/clouds/beta",
        json!({"url": format!("http://127.0.0.1:{pb}/mcp"), "token_parameter": "/toolgate/clouds/beta/token", "headers": {"X-Tenant": "t2", "X-Only-Beta": "b"}}).to_string(),
        false,
    )
    .await;
    put(
        "/toolgate/clouds/off",
        json!({"url": format!("http://127.0.0.1:{pa}/mcp"), "enabled": false}).to_string(),
        false,
    )
    .await;
    put(
        "/toolgate/clouds/bad_id",
        json!({"url": "http://127.0.0.1:9/mcp"}).to_string(),
        false,
    )
    .await;
    put(
        "/toolgate/clouds/no-token",
        json!({"url": "http://127.0.0.1:9/mcp", "token_parameter": "/toolgate/secrets/missing"})
            .to_string(),
        false,
    )
    .await;

    let mut env: Vec<(&str, &str)> = AWS_ENV.to_vec();
    env.push(("AWS_ENDPOINT_URL", &endpoint));
    env.push(("TOOLGATE_CLOUD_SSM_PREFIX", "/toolgate/clouds"));
    let s = Server::start(&env);
    let n = names(&s, "openai");
    assert!(n.iter().any(|x| x == "alpha__echo"), "{n:?}\n{}", s.logs());
    assert!(
        !n.iter()
            .any(|x| x.starts_with("off__") || x.starts_with("bad"))
    );
    let r = s.post_json("/tools/alpha__echo", &json!({"message": "via ssm"}));
    assert_eq!(r.status, 200);
    assert!(text_of(&r.json()).contains("via ssm"));
    let logs = s.logs();
    assert!(
        logs.contains("bad_id") && logs.contains("must match"),
        "{logs}"
    );
    assert!(logs.contains("/toolgate/secrets/missing"), "{logs}");
    assert!(
        !logs.contains("s3cret-token") && !logs.contains("other-token"),
        "a secret reached the log"
    );

    // Each account's credentials reach its own upstream on every request
    // (initialize, listing, the call), and never the other's.
    let r = s.post_json("/tools/beta__echo", &json!({"message": "to beta"}));
    assert_eq!(r.status, 200);
    for (peer, token, tenant, other_token) in [
        (&alpha, "Bearer s3cret-token", "t1", "other-token"),
        (&beta, "Bearer other-token", "t2", "s3cret-token"),
    ] {
        let seen = recorded_headers(peer);
        assert!(seen.len() >= 3, "initialize, list and call: {seen:?}");
        for h in &seen {
            assert_eq!(h["authorization"], token, "{h}");
            assert_eq!(h["x-tenant"], tenant, "{h}");
            assert!(!h.to_string().contains(other_token), "{h}");
        }
    }
    assert!(
        recorded_headers(&beta)
            .iter()
            .all(|h| h["x-only-beta"] == "b")
    );
    assert!(
        recorded_headers(&alpha)
            .iter()
            .all(|h| h.get("x-only-beta").is_none())
    );
}

#[test]
fn sessions_are_closed_with_a_delete_on_shutdown() {
    let (alpha, pa) = everything();
    let cfg = config_file(&[("alpha", pa)]);
    let s = Server::start_with_args(&[], &["--config", cfg.0.to_str().unwrap()]);
    let r = s.post_json("/tools/alpha__echo", &json!({"message": "one call"}));
    assert_eq!(r.status, 200);
    let sessions = alpha.logs().matches("Session initialized").count();
    assert_eq!(
        sessions,
        1,
        "one session for listing and calls:\n{}",
        alpha.logs()
    );
    assert!(!alpha.logs().contains("Received session termination"));
    assert!(s.terminate().success());
    assert!(
        alpha
            .logs()
            .contains("Received session termination request"),
        "no DELETE:\n{}",
        alpha.logs()
    );
}

/// An upstream that does not answer in time: the call is a 502 naming the
/// account once its timeout passes, while calls to the other account (and
/// the slow account's quick tools, on the same session) keep working, also
/// eight at once.
#[test]
fn a_hung_upstream_call_times_out_and_nothing_else_waits() {
    const TIMEOUT_S: u64 = 2;
    let (_alpha, pa) = everything();
    let (_beta, pb) = everything();
    let cfg = config_file(&[("alpha", pa), ("beta", pb)]);
    let s = std::sync::Arc::new(Server::start_with_args(
        &[("TOOLGATE_CLOUD_TIMEOUT_SECS", &TIMEOUT_S.to_string())],
        &["--config", cfg.0.to_str().unwrap()],
    ));
    let hung = {
        let s = s.clone();
        std::thread::spawn(move || {
            let started = std::time::Instant::now();
            let r = s.post_json(
                "/tools/alpha__trigger-long-running-operation",
                &json!({"duration": 60, "steps": 2}),
            );
            (r, started.elapsed())
        })
    };
    let quick: Vec<_> = (0..8)
        .map(|i| {
            let s = s.clone();
            let tool = if i % 2 == 0 {
                "beta__echo"
            } else {
                "alpha__echo"
            };
            std::thread::spawn(move || {
                let started = std::time::Instant::now();
                let r = s.post_json(
                    &format!("/tools/{tool}"),
                    &json!({"message": format!("m{i}")}),
                );
                (tool, i, r, started.elapsed())
            })
        })
        .collect();
    for h in quick {
        let (tool, i, r, took) = h.join().unwrap();
        answered_with(&r, &format!("m{i}"), tool);
        assert!(
            took < Duration::from_secs(TIMEOUT_S),
            "{tool} waited {took:?} behind a hung call"
        );
    }
    let (r, took) = hung.join().unwrap();
    let msg = unavailable(&r, "alpha");
    assert!(
        msg.contains("did not answer within 2s: check that it is reachable from here"),
        "{msg}"
    );
    assert!(
        took >= Duration::from_secs(TIMEOUT_S)
            && took < toolgate_e2e::timing::stop_bound(TIMEOUT_S),
        "answered after {took:?}"
    );
    // The account still answers afterwards.
    let r = s.post_json("/tools/alpha__echo", &json!({"message": "after"}));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
}

/// Upstream names that collide once sanitized (`echo.v2`, `echo_v2`) or run
/// past 64 characters export as distinct names within the limit, the same
/// in every process (a stable hash), and each calls its own upstream tool.
#[test]
fn colliding_and_long_upstream_names_stay_apart_end_to_end() {
    let (_alpha, pa) = toolgate_e2e::peer::everything_with_colliding_names();
    let cfg = config_file(&[("alpha", pa)]);
    let s = Server::start_with_args(&[], &["--config", cfg.0.to_str().unwrap()]);
    // FNV-1a as shared/src/cloud/names.rs computes it, written out here so
    // that a change of hash (which renames deployed tools) fails the test.
    let fnv = |s: &str| {
        s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        }) as u32
    };
    let long = format!("describe_{}", "x".repeat(71));
    let long_raw = format!("alpha__{long}");
    let expected = [
        ("echo.v2", "alpha__echo_v2".to_owned()),
        ("echo_v2", format!("alpha__echo_v2_{:08x}", fnv("echo_v2"))),
        (
            long.as_str(),
            format!("{}_{:08x}", &long_raw[..55], fnv(&long_raw)),
        ),
    ];
    for format in ["native", "openai", "anthropic", "mcp"] {
        let n = names(&s, format);
        for (_, name) in &expected {
            assert!(n.contains(name), "{format}: {name} missing from {n:?}");
        }
        assert!(n.iter().all(|x| x.len() <= 64), "{format}: {n:?}");
    }
    for (remote, name) in &expected {
        let r = s.post_json(&format!("/tools/{name}"), &json!({"message": "hi"}));
        answered_with(&r, &format!("{remote}: hi"), name);
    }
}

/// An upstream that goes away answers 502 naming the account, without
/// delaying the other account; once it is back on its address, calls work
/// again on a new session, with no restart of Toolgate.
#[test]
fn calls_work_again_after_the_upstream_restarts() {
    let (mut alpha, pa) = everything();
    let (_beta, pb) = everything();
    let cfg = config_file(&[("alpha", pa), ("beta", pb)]);
    let s = Server::start_with_args(&[], &["--config", cfg.0.to_str().unwrap()]);
    let echo = |tool: &str| s.post_json(&format!("/tools/{tool}"), &json!({"message": "x"}));
    assert_eq!(echo("alpha__echo").status, 200);
    alpha.kill();
    unavailable(&echo("alpha__echo"), "alpha");
    assert_eq!(echo("beta__echo").status, 200);
    let _alpha = toolgate_e2e::peer::everything_on(pa, &[]);
    toolgate_e2e::timing::poll_until(Duration::from_secs(15), "alpha answering again", || {
        (echo("alpha__echo").status == 200).then_some(())
    });
}

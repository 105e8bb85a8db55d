//! Callers and approvers are identities (issue #50): each caller token is a
//! caller of its own (sessions and log lines follow it), an approver's
//! token opens only approver routes and a caller's only tool routes; the
//! local server refuses a public address without a token, keeps its data
//! folder and stores private, and takes clarify's `task_token` only from a
//! direct Lambda invocation.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use toolgate_e2e::launch::Launch;
use toolgate_e2e::{Response, Server, error_of, temp_file};

const ALICE: &str = "alice-caller-token-0001";
const BOB: &str = "bob-caller-token-000002";
const APPROVER: &str = "approver-token-0000003";
/// Single tokens, and their caller names: `token-` and the first 12 hex
/// digits of SHA-256 (`printf %s TOKEN | sha256sum`).
const ONE: (&str, &str) = ("caller-one-secret-x", "token-1f8c8b0d841a");
const TWO: (&str, &str) = ("caller-two-secret-y", "token-3e42bf0b1074");

/// A folder of this test's own, removed on drop (a failed test included).
struct TempDir(PathBuf);

impl TempDir {
    fn new(stem: &str) -> Self {
        let p =
            std::env::temp_dir().join(format!("toolgate-identity-{stem}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        Self(p)
    }
    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn post(s: &Server, path: &str, token: Option<&str>, body: &Value) -> Response {
    let auth = token.map(bearer);
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(a) = &auth {
        headers.push(("Authorization", a));
    }
    s.request("POST", path, &headers, body.to_string().as_bytes())
}

fn get(s: &Server, path: &str, token: Option<&str>) -> Response {
    let auth = token.map(bearer);
    let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", a.as_str())).collect();
    s.request("GET", path, &headers, b"")
}

fn exec(s: &Server, token: Option<&str>, args: Value) -> Response {
    post(s, "/tools/python.execute", token, &args)
}

/// A new session holding `x = 41`; its id.
fn new_session(s: &Server, token: Option<&str>) -> String {
    let r = exec(s, token, json!({"session": "new", "code": "x = 41"}));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()["session"]
        .as_str()
        .expect("a session id")
        .to_owned()
}

/// `x + 1` in session `id`: the status and the body.
fn use_session(s: &Server, token: Option<&str>, id: &str) -> (u16, Value) {
    let r = exec(s, token, json!({"session": id, "code": "print(x + 1)"}));
    (r.status, r.json())
}

/// The callers of the server's `tool call` log lines for python.execute,
/// once `n` are there.
fn logged_callers(s: &Server, n: usize) -> Vec<Value> {
    let calls = |ls: &[Value]| -> Vec<Value> {
        ls.iter()
            .filter(|l| l["message"] == "tool call" && l["tool"] == "python.execute")
            .map(|l| l["caller"].clone())
            .collect()
    };
    calls(&s.json_logs_when(Duration::from_secs(5), |ls| calls(ls).len() >= n))
}

#[test]
fn two_caller_tokens_are_two_callers() {
    let cfg = temp_file(
        "toolgate-identity",
        &format!(
            "[[server.tokens]]\nname = \"alice\"\ntoken = \"{ALICE}\"\n\
             [[server.tokens]]\nname = \"bob\"\ntoken_env = \"BOB_TOKEN\"\n"
        ),
    );
    let s = Server::start_with_args(
        &[("BOB_TOKEN", BOB)],
        &["--config", cfg.0.to_str().unwrap()],
    );
    let id = new_session(&s, Some(ALICE));
    let (status, out) = use_session(&s, Some(BOB), &id);
    assert_eq!(status, 404, "bob must not reach alice's session: {out}");
    assert_eq!(out["error"]["code"], "not_found", "{out}");
    let (status, out) = use_session(&s, Some(ALICE), &id);
    assert_eq!((status, &out["stdout"]), (200, &json!("42\n")), "{out}");
    assert_eq!(
        logged_callers(&s, 3),
        [json!("alice"), json!("bob"), json!("alice")]
    );
    // Neither token is logged.
    let logs = s.logs();
    assert!(!logs.contains(ALICE) && !logs.contains(BOB), "{logs}");
}

#[test]
fn two_servers_with_different_tokens_on_one_data_folder_are_two_callers() {
    let dir = TempDir::new("two");
    let data = dir.path();
    let id = {
        let s = Server::start(&[("TOOLGATE_DATA_DIR", data), ("TOOLGATE_TOKEN", ONE.0)]);
        let id = new_session(&s, Some(ONE.0));
        assert_eq!(logged_callers(&s, 1), [json!(ONE.1)]);
        id
    };
    {
        let s = Server::start_with_args(&[("TOOLGATE_DATA_DIR", data)], &["--token", TWO.0]);
        let (status, out) = use_session(&s, Some(TWO.0), &id);
        assert_eq!(status, 404, "another token's session: {out}");
        assert_eq!(logged_callers(&s, 1), [json!(TWO.1)]);
    }
    // The session is still there for its own caller.
    let s = Server::start(&[("TOOLGATE_DATA_DIR", data), ("TOOLGATE_TOKEN", ONE.0)]);
    let (status, out) = use_session(&s, Some(ONE.0), &id);
    assert_eq!((status, &out["stdout"]), (200, &json!("42\n")), "{out}");
    drop(s);
}

/// Asserts the auth layer's refusal: status, code and message.
fn refused(r: &Response, status: u16, code: &str, message: &str) {
    let (st, c, m) = error_of(r);
    assert_eq!((st, c.as_str(), m.as_str()), (status, code, message));
}

const APPROVER_ON_TOOLS: &str =
    "This token is an approver's: approvers decide approvals at /inbox, they do not call tools";
const CALLER_ON_APPROVALS: &str =
    "This route is for approvers: a caller's token cannot decide approvals";
const SIGN_IN: &str = "Sign in as an approver: send Authorization: Bearer <approver token>";

#[test]
fn approver_and_caller_tokens_each_open_their_own_routes() {
    let s = Server::start_with_args(
        &[("TOOLGATE_APPROVER_TOKEN", APPROVER)],
        &["--token", ALICE],
    );
    let code = json!({"code": "print(1)"});
    // An approver does not call tools, by HTTP or MCP.
    refused(
        &post(&s, "/tools/python.execute", Some(APPROVER), &code),
        403,
        "forbidden",
        APPROVER_ON_TOOLS,
    );
    refused(
        &get(&s, "/tools", Some(APPROVER)),
        403,
        "forbidden",
        APPROVER_ON_TOOLS,
    );
    refused(
        &post(
            &s,
            "/mcp",
            Some(APPROVER),
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        ),
        403,
        "forbidden",
        APPROVER_ON_TOOLS,
    );
    // A caller does not decide approvals, nor list questions.
    for path in [
        "/approvals",
        "/approvals?status=all",
        "/approvals/abc",
        "/clarifications",
    ] {
        refused(
            &get(&s, path, Some(ALICE)),
            403,
            "forbidden",
            CALLER_ON_APPROVALS,
        );
        refused(&get(&s, path, None), 401, "unauthorized", SIGN_IN);
        refused(
            &get(&s, path, Some("not-a-token-at-all")),
            401,
            "unauthorized",
            SIGN_IN,
        );
    }
    refused(
        &post(
            &s,
            "/approvals/abc/decision",
            Some(ALICE),
            &json!({"decision": "approve"}),
        ),
        403,
        "forbidden",
        CALLER_ON_APPROVALS,
    );
    // Past the auth layer (the route itself may not exist yet).
    let r = get(&s, "/approvals", Some(APPROVER));
    assert!(![401, 403].contains(&r.status), "{r:?}");
    // The caller still calls; one clarification by its id stays open.
    assert_eq!(
        post(&s, "/tools/python.execute", Some(ALICE), &code).status,
        200
    );
    let r = get(&s, "/clarifications/cl_nope", None);
    assert!(![401, 403].contains(&r.status), "{r:?}");
    assert!(
        !s.logs().contains(APPROVER),
        "the approver's token is never logged"
    );

    // An open local server (no caller token) still keeps approver routes
    // to approvers, and approvers off the tools.
    let s = Server::start(&[("TOOLGATE_APPROVER_TOKEN", APPROVER)]);
    refused(&get(&s, "/approvals", None), 401, "unauthorized", SIGN_IN);
    refused(
        &post(&s, "/tools/python.execute", Some(APPROVER), &code),
        403,
        "forbidden",
        APPROVER_ON_TOOLS,
    );
    assert_eq!(post(&s, "/tools/python.execute", None, &code).status, 200);
    // And with no approver at all, nobody.
    let s = Server::start(&[]);
    refused(&get(&s, "/approvals", None), 401, "unauthorized", SIGN_IN);
}

#[test]
fn a_token_that_is_both_a_callers_and_an_approvers_stops_start_up() {
    let out = Launch::toolgate(&["serve", "--addr", "127.0.0.1:0", "--token", APPROVER])
        .env("TOOLGATE_APPROVER_TOKEN", APPROVER)
        .within(Duration::from_secs(30))
        .output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("an approver needs a token no caller holds"),
        "{stderr}"
    );
    assert!(!stderr.contains(APPROVER), "{stderr}");
}

/// `toolgate serve` on `addr` with `env`, as the harness starts it but
/// with the address given.
fn serve(addr: &str, env: &[(&str, &str)], data: &Path) -> Launch {
    Launch::toolgate(&["serve", "--addr", addr])
        .env("TOOLGATE_DATA_DIR", data)
        .env("TOOLGATE_LOG", "json")
        .envs(env)
        .within(Duration::from_secs(30))
}

/// Starts `server`, waits for it to listen, stops it; its log until then.
fn starts(server: Launch) -> String {
    let mut running = server.spawn();
    running.wait_for_stderr("listening on http://", Duration::from_secs(60));
    running.stderr()
}

#[test]
fn a_public_address_needs_a_caller_token() {
    let dir = TempDir::new("public");
    let data = dir.0.as_path();
    let out = serve("0.0.0.0:0", &[], data).output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for fix in [
        "--token",
        "TOOLGATE_TOKEN",
        "[[server.tokens]]",
        "127.0.0.1",
        "TOOLGATE_ALLOW_ANONYMOUS",
    ] {
        assert!(stderr.contains(fix), "the refusal names {fix}: {stderr}");
    }
    // An approver's token does not open the tools: still refused.
    let out = serve("0.0.0.0:0", &[("TOOLGATE_APPROVER_TOKEN", APPROVER)], data).output();
    assert_eq!(out.status.code(), Some(2));
    // With a caller token it serves; so does loopback without one.
    starts(serve("0.0.0.0:0", &[("TOOLGATE_TOKEN", ALICE)], data));
    starts(serve("0.0.0.0:0", &[], data).args(["--token", ALICE]));
    starts(serve("127.0.0.1:0", &[], data));
    // Anonymous on purpose: served, with a warning.
    let log = starts(serve(
        "0.0.0.0:0",
        &[("TOOLGATE_ALLOW_ANONYMOUS", "true")],
        data,
    ));
    assert!(log.contains("without a caller token"), "{log}");
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

/// Every file in `dir`, with its mode.
fn files(dir: &Path) -> Vec<(PathBuf, u32)> {
    let mut out: Vec<(PathBuf, u32)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .map(|p| {
            let m = mode(&p);
            (p, m)
        })
        .collect();
    out.sort();
    out
}

/// A session and a clarification, so that both stores are written.
fn use_both_stores(s: &Server) {
    new_session(s, None);
    let r = post(
        s,
        "/tools/clarify",
        None,
        &json!({"question": "Which region?"}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
}

fn assert_private(dir: &Path) {
    assert_eq!(mode(dir), 0o700, "the data folder");
    let found = files(dir);
    let names: Vec<String> = found
        .iter()
        .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for store in ["sessions.sqlite3", "clarify.sqlite3"] {
        assert!(names.iter().any(|n| n == store), "{store} in {names:?}");
    }
    for (p, m) in &found {
        assert_eq!(*m, 0o600, "{}", p.display());
    }
}

#[test]
fn the_data_folder_and_its_stores_are_the_owners_only() {
    let tmp = TempDir::new("private");
    let (dir, data) = (tmp.0.clone(), tmp.path());
    {
        // Made by the server.
        let s = Server::start(&[("TOOLGATE_DATA_DIR", data)]);
        use_both_stores(&s);
        assert_private(&dir);
        // Killed, as the harness drops it: the -wal and -shm files stay.
    }
    // Found open to others: a 0755 folder of 0644 files (the store's
    // -wal and -shm among them), as an older Toolgate or a umask left them.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let loose = files(&dir);
    assert!(
        loose.len() >= 4,
        "the stores and their -wal/-shm: {loose:?}"
    );
    for (p, _) in &loose {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let s = Server::start(&[("TOOLGATE_DATA_DIR", data)]);
    use_both_stores(&s);
    assert_private(&dir);
    let logs = s.logs();
    assert!(logs.contains("now the owner's only (0700)"), "{logs}");
    assert!(logs.contains("now the owner's only (0600)"), "{logs}");
    drop(s);
    // Once tightened, no warning again.
    let s = Server::start(&[("TOOLGATE_DATA_DIR", data)]);
    use_both_stores(&s);
    assert!(!s.logs().contains("now the owner's only"), "{}", s.logs());
    drop(s);
}

const TASK_TOKEN_DIRECT_ONLY: &str = "\"task_token\" is accepted only when a Step Functions workflow invokes the clarify function directly";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_token_is_refused_over_http_and_mcp() {
    let s = Server::start(&[]);
    let ask = json!({"question": "Restart web-1?", "task_token": "AAAAKgAAAAIAAAAA-stolen"});
    let r = post(&s, "/tools/clarify", None, &ask);
    refused(&r, 400, "invalid_input", TASK_TOKEN_DIRECT_ONLY);
    // Without it, the same question is asked.
    let r = post(
        &s,
        "/tools/clarify",
        None,
        &json!({"question": "Restart web-1?"}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));

    let client = toolgate_e2e::mcp::rmcp_client(format!("http://{}/mcp", s.addr), None)
        .await
        .unwrap();
    let mut call = CallToolRequestParams::new("clarify");
    call.arguments = ask.as_object().cloned();
    let r = client.call_tool(call).await.unwrap();
    assert_eq!(r.is_error, Some(true));
    let text = r.content[0].as_text().expect("text content").text.clone();
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["error"]["code"], "invalid_input", "{body}");
    assert_eq!(body["error"]["message"], TASK_TOKEN_DIRECT_ONLY, "{body}");
    // The input schema an agent sees does not offer it.
    let tools = client.list_all_tools().await.unwrap();
    let clarify = tools.iter().find(|t| t.name == "clarify").unwrap();
    assert!(
        clarify.input_schema["properties"]
            .get("task_token")
            .is_none()
    );
    client.cancel().await.unwrap();
}

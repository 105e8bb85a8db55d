//! clarify in the agent's own MCP client (issue #57, MCP 2026-07-28's
//! multi round-trip requests): a client that declares elicitation gets the
//! question as `input_required` (a form, or for a link-only client the
//! answer page), and its retry, taken by another `toolgate serve` on the
//! same store, answers the one clarification every channel sees. The
//! sealed `requestState` is refused changed, from another caller, for other
//! arguments, or expired; older clients, and clients without elicitation,
//! get today's pending clarification. A real client library (rmcp's)
//! answers through its own elicitation handler.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate_e2e::launch::TempDir;
use toolgate_e2e::{Server, TempPath, temp_file};

const AGENT: &str = "agent-token-0123456789abcdef";
const OTHER: &str = "other-agent-token-0123456789";
const OPS: &str = "ops-approver-token-0123456789";

/// Two callers and an approver (who may list the questions).
fn config() -> TempPath {
    temp_file(
        "toolgate-elicit",
        &format!(
            "[[server.tokens]]\nname = \"agent\"\ntoken = \"{AGENT}\"\n\n\
             [[server.tokens]]\nname = \"other\"\ntoken = \"{OTHER}\"\n\n\
             [[approvals.approvers]]\nname = \"ops\"\ntoken = \"{OPS}\"\n"
        ),
    )
}

/// A server on the data folder `data` (so its store, and its state key,
/// are the others' on it).
fn serve(cfg: &TempPath, data: &TempDir, env: &[(&str, &str)]) -> Server {
    let mut all = vec![("TOOLGATE_DATA_DIR", data.path().to_str().unwrap())];
    all.extend_from_slice(env);
    Server::start_with_args(&all, &["--config", cfg.0.to_str().unwrap()])
}

/// A 2026-07-28 `tools/call` of clarify with `caps` as the client's
/// capabilities, and a retry's `extra` params (`inputResponses`,
/// `requestState`); the JSON-RPC answer.
fn call(s: &Server, token: &str, args: &Value, caps: &Value, extra: &Value) -> Value {
    let body = toolgate_e2e::mcp::call_2026("clarify", args, caps, extra);
    post(s, token, "2026-07-28", &body)
}

fn post(s: &Server, token: &str, version: &str, body: &Value) -> Value {
    let auth = format!("Bearer {token}");
    let mut headers = toolgate_e2e::mcp::call_headers(version, "clarify");
    headers.push(("Authorization", auth));
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = s.request("POST", "/mcp", &headers, body.to_string().as_bytes());
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

fn form() -> Value {
    json!({"elicitation": {"form": {}}})
}

/// The input request a first call got, and its state.
fn asked(reply: &Value) -> (Value, String) {
    toolgate_e2e::mcp::input_asked(reply, "answer")
}

/// The tool's result a retry got (its structured content).
fn result(reply: &Value) -> Value {
    let r = &reply["result"];
    assert_ne!(r["isError"], true, "{reply}");
    assert!(
        r.get("resultType").is_none_or(|t| t == "complete"),
        "{reply}"
    );
    r["structuredContent"].clone()
}

/// The tool error a retry got: its code and message.
fn refused(reply: &Value) -> (String, String) {
    let r = &reply["result"];
    assert_eq!(r["isError"], true, "{reply}");
    let body: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
    (
        body["error"]["code"].as_str().unwrap().to_owned(),
        body["error"]["message"].as_str().unwrap().to_owned(),
    )
}

fn retry(state: &str, response: Value) -> Value {
    json!({"requestState": state, "inputResponses": {"answer": response}})
}

/// The question asked as `text`, as an approver's list shows it: (id,
/// status, answer).
fn question(s: &Server, text: &str) -> (String, String, Value) {
    let auth = format!("Bearer {OPS}");
    let r = s.request(
        "GET",
        "/clarifications?status=all",
        &[("Authorization", &auth)],
        b"",
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let list = r.json();
    let c = list["clarifications"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["question"] == text)
        .unwrap_or_else(|| panic!("no question {text:?} in {list}"));
    (
        c["id"].as_str().unwrap().to_owned(),
        c["status"].as_str().unwrap().to_owned(),
        c["answer"].clone(),
    )
}

#[test]
fn a_form_answers_the_one_clarification_on_any_instance() {
    let cfg = config();
    let data = TempDir::new("toolgate-elicit-data");
    let (a, b) = (serve(&cfg, &data, &[]), serve(&cfg, &data, &[]));
    let args = json!({"question": "Deploy build 1842 to production?", "options": ["yes", "no"]});

    let started = Instant::now();
    let (request, state) = asked(&call(&a, AGENT, &args, &form(), &json!({})));
    let asked_in = started.elapsed();
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(
        request["params"],
        json!({
            "mode": "form",
            "message": "Deploy build 1842 to production?",
            "requestedSchema": {"type": "object", "properties": {
                "choice": {"type": "string", "title": "Choose one", "enum": ["yes", "no"]},
                "answer": {"type": "string", "title": "Or answer in your own words", "maxLength": 10000},
            }, "required": []},
        })
    );
    // The question is the one every channel sees, pending.
    let (id, status, _) = question(&a, "Deploy build 1842 to production?");
    assert_eq!(status, "pending");

    // Refused: a changed state, another caller's, other arguments.
    let mut changed = state.clone().into_bytes();
    let at = changed.len() / 2;
    changed[at] = if changed[at] == b'A' { b'B' } else { b'A' };
    let changed = String::from_utf8(changed).unwrap();
    let yes = json!({"action": "accept", "content": {"choice": "yes"}});
    assert_eq!(
        refused(&call(&b, AGENT, &args, &form(), &retry(&changed, yes.clone()))),
        (
            "invalid_input".to_owned(),
            "\"requestState\" is not one this server issued, or it was changed: call again without it"
                .to_owned()
        )
    );
    assert_eq!(
        refused(&call(
            &b,
            OTHER,
            &args,
            &form(),
            &retry(&state, yes.clone())
        )),
        (
            "forbidden".to_owned(),
            "\"requestState\" was issued to another caller".to_owned()
        )
    );
    let other_args = json!({"question": "Delete the database?", "options": ["yes", "no"]});
    assert_eq!(
        refused(&call(&b, AGENT, &other_args, &form(), &retry(&state, yes.clone()))),
        (
            "invalid_input".to_owned(),
            "\"requestState\" was issued for another call: send the arguments of the call that got it"
                .to_owned()
        )
    );
    assert_eq!(
        question(&a, "Deploy build 1842 to production?").1,
        "pending"
    );

    // The retry on the other instance answers it.
    let started = Instant::now();
    let answered = result(&call(&b, AGENT, &args, &form(), &retry(&state, yes)));
    let retried_in = started.elapsed();
    assert_eq!(
        (
            &answered["status"],
            &answered["answer"],
            &answered["choice"],
            &answered["id"]
        ),
        (&json!("answered"), &json!("yes"), &json!(0), &json!(id)),
        "{answered}"
    );
    assert_eq!(
        question(&a, "Deploy build 1842 to production?"),
        (id.clone(), "answered".to_owned(), json!("yes"))
    );
    // A replayed state is refused as a second answer is on the page: 409,
    // with the answer that stands.
    let no = json!({"action": "accept", "content": {"choice": "no"}});
    let replayed = call(&a, AGENT, &args, &form(), &retry(&state, no));
    assert_eq!(
        refused(&replayed),
        (
            "conflict".to_owned(),
            "This clarification is already answered".to_owned()
        )
    );
    let body: Value =
        serde_json::from_str(replayed["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(body["error"]["clarification"]["answer"], "yes", "{body}");
    // Without an answer in it, a retry reads the state as it stands.
    let read = result(&call(
        &a,
        AGENT,
        &args,
        &form(),
        &json!({"requestState": state}),
    ));
    assert_eq!(
        (&read["answer"], &read["choice"]),
        (&json!("yes"), &json!(0))
    );
    // The log line says the first call asked and the retry answered.
    let outcomes: Vec<String> = a
        .json_logs()
        .iter()
        .filter(|l| l["message"] == "tool call" && l["tool"] == "clarify")
        .map(|l| l["outcome"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        outcomes.first().map(String::as_str),
        Some("input_required"),
        "{outcomes:?}"
    );
    println!("first call {asked_in:?}, retry on another instance {retried_in:?}");
}

#[test]
fn own_words_a_decline_a_dismissal_and_an_expired_state() {
    let cfg = config();
    let data = TempDir::new("toolgate-elicit-words");
    let s = serve(&cfg, &data, &[]);
    // No options: the person's words, required.
    let args = json!({"question": "Which region?"});
    let (request, state) = asked(&call(
        &s,
        AGENT,
        &args,
        &json!({"elicitation": {}}),
        &json!({}),
    ));
    assert_eq!(
        request["params"]["requestedSchema"],
        json!({"type": "object", "properties": {
            "answer": {"type": "string", "title": "Your answer", "maxLength": 10000}},
            "required": ["answer"]})
    );
    // An empty form asks again.
    let empty = json!({"action": "accept", "content": {}});
    let (_, _) = asked(&call(&s, AGENT, &args, &form(), &retry(&state, empty)));
    let words = json!({"action": "accept", "content": {"answer": "  eu-west-1 "}});
    let answered = result(&call(&s, AGENT, &args, &form(), &retry(&state, words)));
    assert_eq!(
        (
            &answered["status"],
            &answered["answer"],
            &answered["choice"]
        ),
        (&json!("answered"), &json!("eu-west-1"), &json!(null))
    );

    // Dismissed: the question stays open for the other channels.
    let args = json!({"question": "Rotate the keys now?", "options": ["yes", "later"]});
    let (_, state) = asked(&call(&s, AGENT, &args, &form(), &json!({})));
    let pending = result(&call(
        &s,
        AGENT,
        &args,
        &form(),
        &retry(&state, json!({"action": "cancel"})),
    ));
    assert_eq!(pending["status"], "pending", "{pending}");
    // Declined: withdrawn.
    let declined = result(&call(
        &s,
        AGENT,
        &args,
        &form(),
        &retry(&state, json!({"action": "decline"})),
    ));
    assert_eq!(declined["status"], "cancelled", "{declined}");

    // A choice that is not an option is refused.
    let args = json!({"question": "Scale to?", "options": ["2", "4"]});
    let (_, state) = asked(&call(&s, AGENT, &args, &form(), &json!({})));
    let eight = json!({"action": "accept", "content": {"choice": "8"}});
    assert_eq!(
        refused(&call(&s, AGENT, &args, &form(), &retry(&state, eight))),
        (
            "invalid_input".to_owned(),
            "\"choice\" must be one of the question's options, not \"8\"".to_owned()
        )
    );

    // A state outlives nothing: past the question's expiry it is refused.
    drop(s);
    let s = serve(&cfg, &data, &[("TOOLGATE_CLARIFY_EXPIRY_SECS", "1")]);
    let args = json!({"question": "Quick one?"});
    let (_, state) = asked(&call(&s, AGENT, &args, &form(), &json!({})));
    std::thread::sleep(Duration::from_millis(1_100));
    let words = json!({"action": "accept", "content": {"answer": "late"}});
    assert_eq!(
        refused(&call(&s, AGENT, &args, &form(), &retry(&state, words))),
        (
            "expired".to_owned(),
            "\"requestState\" has expired: call again without it".to_owned()
        )
    );
}

#[test]
fn a_link_only_client_gets_the_answer_page() {
    let cfg = config();
    let data = TempDir::new("toolgate-elicit-url");
    let s = serve(&cfg, &data, &[]);
    let url_only = json!({"elicitation": {"url": {}}});
    let args = json!({"question": "Approve the refund?", "options": ["approve", "refuse"]});
    let (request, state) = asked(&call(&s, AGENT, &args, &url_only, &json!({})));
    let (id, _, _) = question(&s, "Approve the refund?");
    // rmcp writes 2025-11-25's `elicitationId`, empty, which 2026-07-28
    // dropped.
    assert_eq!(
        request["params"],
        json!({"mode": "url", "message": "Approve the refund?", "elicitationId": "",
               "url": format!("http://{}/clarifications/{id}/answer", s.addr)})
    );
    // The person opens the link; the retry waits for their answer on the
    // page (no token: the id is the capability), and a form's content,
    // which a link-only request does not take, changes nothing.
    let page = s.addr.clone();
    let answering = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        toolgate_e2e::raw_request(
            &page,
            "POST",
            &format!("/clarifications/{id}/answer"),
            &[("Content-Type", "application/json")],
            br#"{"choice": 1}"#,
        )
    });
    let opened = json!({"action": "accept", "content": {"answer": "approve"}});
    let started = Instant::now();
    let answered = result(&call(&s, AGENT, &args, &url_only, &retry(&state, opened)));
    let r = answering.join().unwrap();
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        (
            &answered["status"],
            &answered["answer"],
            &answered["choice"]
        ),
        (&json!("answered"), &json!("refuse"), &json!(1))
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn older_clients_and_clients_without_elicitation_get_a_pending_question() {
    let cfg = config();
    let data = TempDir::new("toolgate-elicit-old");
    let s = serve(&cfg, &data, &[]);
    let args = json!({"question": "Old client?", "options": ["a", "b"]});
    // 2026-07-28 without elicitation.
    let pending = result(&call(&s, AGENT, &args, &json!({}), &json!({})));
    assert_eq!(pending["status"], "pending", "{pending}");
    assert!(
        pending["answer_url"]
            .as_str()
            .unwrap()
            .contains("/clarifications/")
    );
    // 2025-11-25 (no per-request _meta): today's answer.
    let old = post(
        &s,
        AGENT,
        "2025-11-25",
        &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "clarify", "arguments": args}}),
    );
    assert_eq!(result(&old)["status"], "pending", "{old}");
}

/// rmcp's client, as an agent's MCP client: its elicitation handler is the
/// person, and its `call_tool` drives the rounds itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_clients_elicitation_handler_answers() {
    use rmcp::model::{
        CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
        ElicitationAction, ElicitationCapability, FormElicitationCapability, ProtocolVersion,
    };
    use rmcp::service::{RequestContext, RoleClient};
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::{ClientLifecycleMode, ClientServiceExt};

    /// Picks the last option, as a person would, and notes what it saw.
    struct Person(std::sync::Arc<std::sync::Mutex<Vec<String>>>);
    impl rmcp::ClientHandler for Person {
        fn get_info(&self) -> ClientConfig {
            let mut caps = ClientCapabilities::default();
            let mut e = ElicitationCapability::default();
            e.form = Some(FormElicitationCapability::default());
            caps.elicitation = Some(e);
            let mut info = ClientConfig::default();
            info.capabilities = caps;
            info
        }
        async fn create_elicitation(
            &self,
            request: ElicitRequestParams,
            _: RequestContext<RoleClient>,
        ) -> Result<ElicitResult, rmcp::ErrorData> {
            let seen = serde_json::to_value(&request).unwrap();
            self.0
                .lock()
                .unwrap()
                .push(seen["message"].as_str().unwrap_or("").to_owned());
            let last = seen["requestedSchema"]["properties"]["choice"]["enum"]
                .as_array()
                .and_then(|o| o.last().cloned())
                .unwrap_or(json!("?"));
            let mut r = ElicitResult::new(ElicitationAction::Accept);
            r.content = Some(json!({"choice": last}));
            Ok(r)
        }
    }

    let cfg = config();
    let data = TempDir::new("toolgate-elicit-rmcp");
    let s = serve(&cfg, &data, &[]);
    toolgate_e2e::issued::record("bearer token", AGENT);
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", s.addr))
            .auth_header(AGENT.to_owned()),
    );
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    // 2026-07-28's lifecycle (no `initialize`): requests carry their own
    // capabilities, elicitation among them.
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = Person(seen.clone())
        .serve_with_lifecycle(transport, lifecycle)
        .await
        .expect("connect");
    let mut params = CallToolRequestParams::new("clarify");
    params.arguments = json!({"question": "Which plan?", "options": ["small", "large"]})
        .as_object()
        .cloned();
    let r = client.call_tool(params).await.expect("call");
    let out = r.structured_content.expect("structured content");
    assert_eq!(
        (&out["status"], &out["answer"], &out["choice"]),
        (&json!("answered"), &json!("large"), &json!(1)),
        "{out}"
    );
    assert_eq!(*seen.lock().unwrap(), ["Which plan?"]);
    client.cancel().await.ok();
}

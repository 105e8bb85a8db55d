//! The contract's exact strings (issue #53): every message docs/contracts.md
//! calls exact, in one table, each asserted whole (`assert_eq!` on the
//! message) on every transport its row lists: `http` (serve's routes),
//! `mcp` (serve's `/mcp`: a tool error's body, a protocol error's message,
//! or the route's own HTTP error), `cli` (`toolgate call`, the error on its
//! last stderr line), `lambda` (the python.execute function in-process, as
//! deployed: a direct invocation and an API Gateway event). The first test
//! holds the table to the doc, so that neither drifts from the other.
//!
//! Where a row leaves a transport out, the transport cannot say it: routes
//! (answer, approvers', guards, bodies) are HTTP's; MCP's `arguments` are
//! an object by protocol (a list never reaches a tool); `toolgate call` has
//! no scope, no token and no concurrent caller of its own; the Lambda
//! function here serves python.execute alone. A forbidden system call and a
//! crash are the sandbox child's signals, sent from outside: no script can
//! make either (that is the sandbox's point).

use std::sync::LazyLock;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_e2e::lambda_events::{fixture, http_parts, invoke, python_function};
use toolgate_e2e::launch::{Launch, TempDir};
use toolgate_e2e::peer::{free_port, moto};
use toolgate_e2e::timing::{machine_lock, poll_until};
use toolgate_e2e::{Server, children_of, proc_state, temp_file, workspace};
use toolgate_lambda::Function;
use toolgate_lambda::envelope::code_of;

/// Each row: `## key status code · transports`; the template, as the doc
/// states it (`{placeholder}` and `…` stand for what varies); when it
/// varies, the message the scenario gets, whole; and how the scenario is
/// made, `> @setup [Header: value]… ` then a tool and its arguments, or a
/// method, a path and a body (rows without one are made by their own test,
/// which names them). `<NAME>`s are filled in at run time (ids, tokens, a
/// port). Code `stderr` is the last line of a result's stderr; `message`,
/// the result's `message`.
const TABLE: &str = r#"
## input.not_object 400 invalid_input · http cli lambda
Tool input must be a JSON object (dict)
> @py python.execute [1]
## python.code_required 400 invalid_input · http mcp cli lambda
"code" is required and must be a non-empty string
> @py python.execute {}
## input.unknown_key 400 invalid_input · http mcp cli lambda
Unknown input key "sesion" (did you mean "session"?). This tool takes: code, files, session, resume
> @py python.execute {"code": "1", "sesion": "new"}
## input.no_input 400 invalid_input · http mcp cli
Unknown input key "x". This tool takes no input
> @ssh list_servers {"x": 1}
## tool.unknown 404 unknown_tool · http mcp cli lambda
Unknown tool: {name:?}
Unknown tool: "python.evaluate"
> @py python.evaluate {"code": "1"}
## files.bad_name 400 invalid_input · http mcp cli lambda
file name "../x" has an empty, '.' or '..' part …
file name "../x" has an empty, '.' or '..' part (names are relative paths, like data/in.csv)
> @py python.execute {"code": "1", "files": {"../x": "y"}}
## session.bad 400 invalid_input · http mcp cli lambda
"session" must be "new" or the id of a session
> @py python.execute {"code": "1", "session": 5}
## session.none 404 not_found · http mcp cli
No session "…"
No session "0000000000000000000000000000000000000000"
> @py python.execute {"code": "1", "session": "0000000000000000000000000000000000000000"}
## session.not_configured 503 not_configured · lambda
sessions are not set up on this deployment (its operator names a table in TOOLGATE_SESSIONS_TABLE to keep them): run without "session"
> @py python.execute {"code": "1", "session": "new"}
## session.expired 410 expired · http mcp cli
Session "…" expired after {idle}s without a call
Session "<ID>" expired after 1s without a call
> @expiry python.execute {"code": "1", "session": "<ID>"}
## session.busy 409 conflict · http mcp cli
Session "…" is still busy with another call; try again
Session "<ID>" is still busy with another call; try again
## sandbox.import 200 stderr · http mcp cli lambda
ImportError: Import of '{name}' is not allowed. Allowed modules: {all allowed, sorted, ", "-joined}
ImportError: Import of 'os' is not allowed. Allowed modules: array, base64, bisect, calendar, cmath, collections, copy, csv, dataclasses, datetime, decimal, difflib, enum, fractions, functools, hashlib, heapq, hmac, itertools, json, math, numbers, operator, pprint, random, re, statistics, string, struct, textwrap, time, typing, unicodedata
> @py python.execute {"code": "import os"}
## sandbox.memory 200 stderr · http mcp cli lambda
MemoryError: the script exceeded the sandbox memory limit of {memory_mb} MB
MemoryError: the script exceeded the sandbox memory limit of 128 MB
> @py python.execute {"code": "y = 'a' * (10 ** 11)"}
## sandbox.recursion 200 stderr · http mcp cli lambda
RecursionError: maximum recursion depth exceeded (the interpreter's stack ran out)
> @py python.execute {"code": "it = iter([1])\nfor _ in range(10**5):\n    it = map(abs, it)\nnext(it)"}
## sandbox.timeout 200 stderr · http mcp cli lambda
[Execution timed out after {N}s]
[Execution timed out after 1s]
> @py python.execute {"code": "while True:\n    pass"}
## sandbox.sigsys 200 stderr · http mcp
[the sandbox blocked a forbidden system call and stopped the script]
## sandbox.crash 200 stderr · http mcp
[the interpreter crashed (signal {n}, {SIGNAME}); what the script printed is kept]
[the interpreter crashed (signal 6, SIGABRT); what the script printed is kept]
## clarify.question_required 400 invalid_input · http mcp cli
"question" is required and must be a non-empty string
> @py clarify {}
## clarify.task_token 400 invalid_input · http mcp cli
"task_token" is accepted only when a Step Functions workflow invokes the clarify function directly
> @py clarify {"question": "q", "task_token": "t"}
## clar.none 404 not_found · http
No such clarification
> @routes GET /clarifications/nope
## clar.already 409 conflict · http
This clarification is already {status}
This clarification is already answered
> @routes POST /clarifications/<ANSWERED>/answer [Content-Type: application/json] {"choice": 1}
## clar.cancelled 409 conflict · http
This clarification is already {status}
This clarification is already cancelled
> @routes POST /clarifications/<CANCELLED>/answer [Content-Type: application/json] {"choice": 1}
## clar.expired 410 expired · http
This clarification has expired
> @expiry POST /clarifications/<Q>/answer [Content-Type: application/json] {"answer": "late"}
## clar.send 400 invalid_input · http
Send {"answer": text} or {"choice": index}
> @routes POST /clarifications/<Q>/answer [Content-Type: application/json] {}
## clar.choice 400 invalid_input · http
"choice" must be an option's index, 0 to {n}
"choice" must be an option's index, 0 to 1
> @routes POST /clarifications/<Q>/answer [Content-Type: application/json] {"choice": 7}
## clar.empty 400 invalid_input · http
"answer" must not be empty
> @routes POST /clarifications/<Q>/answer [Content-Type: application/json] {"answer": ""}
## clar.disagree 400 invalid_input · http
"answer" and "choice" disagree: option {i} is {text:?}; send the choice alone, or your own words alone
"answer" and "choice" disagree: option 0 is "a"; send the choice alone, or your own words alone
> @routes POST /clarifications/<Q>/answer [Content-Type: application/json] {"answer": "b", "choice": 0}
## clar.wait 400 invalid_input · http
wait must be a whole number of seconds (at most 25)
> @routes GET /clarifications/<Q>?wait=x
## clar.approval 403 forbidden · http
Clarification {id} is an approval: only an approver can decide it (/inbox/{id})
Clarification <ID> is an approval: only an approver can decide it (/inbox/<ID>)
> @approval POST /clarifications/<ID>/answer [Content-Type: application/json] {"choice": 0}
## route.no_endpoint 404 unknown_tool · http
No endpoint {METHOD} {path}. Endpoints: …
No endpoint GET /nope. Endpoints: GET /tools, POST /tools/{name}, GET /openapi.json, POST /mcp, GET /healthz
> @routes GET /nope
## route.method 400 invalid_input · http
Method {M} is not allowed on {path}
Method DELETE is not allowed on /tools/python.execute
> @routes DELETE /tools/python.execute
## body.not_json 400 invalid_input · http
Request body is not valid JSON: …
Request body is not valid JSON: key must be a string at line 1 column 2
> @routes POST /tools/python.execute [Content-Type: application/json] {bad
## body.content_type 400 invalid_input · http
Content-Type: application/json is required for a JSON body
> @routes POST /tools/python.execute {}
## body.too_large 413 too_large · http
Request body is larger than {limit} bytes
Request body is larger than 1048576 bytes
> @routes POST /tools/clarify [Content-Type: application/json] {"question": "<MiB>"}
## mcp.too_large 413 too_large · mcp
The arguments are larger than {limit} bytes, this tool's limit
The arguments are larger than 1048576 bytes, this tool's limit
> @routes clarify {"question": "<MiB>"}
## route.format 400 invalid_input · http
Unknown format {f:?}; expected one of: native, openai, anthropic, mcp
Unknown format "x"; expected one of: native, openai, anthropic, mcp
> @routes GET /tools?format=x
## guard.host 403 forbidden · http
This server is bound to loopback and only answers Host: localhost, 127.0.0.1 or [::1]
> @routes [Host: evil.example] GET /tools
## guard.fetch_site 403 forbidden · http
Cross-site request refused (Sec-Fetch-Site: {value}): a web page cannot call this server; allow its origin with TOOLGATE_ALLOWED_ORIGINS
Cross-site request refused (Sec-Fetch-Site: cross-site): a web page cannot call this server; allow its origin with TOOLGATE_ALLOWED_ORIGINS
> @routes [Sec-Fetch-Site: cross-site] POST /tools/python.execute [Content-Type: application/json] {}
## guard.origin 403 forbidden · http
Cross-site request refused: Origin "{origin}" is not this server's; allow it with TOOLGATE_ALLOWED_ORIGINS
Cross-site request refused: Origin "https://evil.example" is not this server's; allow it with TOOLGATE_ALLOWED_ORIGINS
> @routes [Origin: https://evil.example] POST /tools/python.execute [Content-Type: application/json] {}
## auth.static_tokens 404 not_found · http
This deployment signs callers in with static bearer tokens: no authorization server to name
> @routes GET /.well-known/oauth-protected-resource
## auth.missing 401 unauthorized · http mcp
Missing bearer token: send Authorization: Bearer <token>
> @auth list_servers {}
## auth.invalid 401 unauthorized · http mcp
Invalid bearer token
> @auth [Authorization: Bearer not-a-token-of-this-server] list_servers {}
## auth.approver_on_tool 403 forbidden · http mcp
This token is an approver's: approvers decide approvals at /inbox, they do not call tools
> @auth [Authorization: Bearer <OPS>] list_servers {}
## auth.caller_on_approver 403 forbidden · http
This route is for approvers: a caller's token cannot decide approvals
> @auth [Authorization: Bearer <AGENT>] GET /approvals
## auth.sign_in 401 unauthorized · http
Sign in as an approver: send Authorization: Bearer <approver token>
> @auth GET /approvals
## ssh.scope 403 forbidden · http mcp
Server {name:?} is not in this caller's scope
Server "box" is not in this caller's scope
> @ssh [X-Toolgate-Servers: ro] ssh_run {"server_name": "box", "command": "id"}
## ssh.unknown 400 invalid_input · http mcp cli
Unknown server {name:?}; available: …
Unknown server "nope"; available: box, gated, ro
> @ssh ssh_run {"server_name": "nope", "command": "id"}
## ssh.policy 403 forbidden · http mcp cli
Command refused by the policy of server {name:?}: {why}
Command refused by the policy of server "ro": the readonly preset cannot tell it is read-only: `env` is not on the read-only list
> @ssh ssh_run {"server_name": "ro", "command": "env touch /tmp/x"}
## ssh.required 400 invalid_input · http mcp cli
"{key}" is required and must be a non-empty string
"command" is required and must be a non-empty string
> @ssh ssh_run {"server_name": "box"}
## ssh.timeout 400 invalid_input · http mcp cli
"timeout" must be a whole number of seconds, at least 1
> @ssh ssh_run {"server_name": "box", "command": "id", "timeout": 0}
## list.none_in_scope 200 message · http mcp
No servers are available: none of the configured servers is in this caller's scope.
> @ssh [X-Toolgate-Servers: elsewhere] list_servers {}
## list.none_configured 200 message · http mcp cli
No servers are available: none is configured (add [servers.NAME] to toolgate.toml, or parameters under the SSM prefix).
> @ssm list_servers {}
## cloud.unavailable 502 upstream_unavailable · http mcp cli
Cloud account {id:?} is unavailable: …
Cloud account "gone" is unavailable: nothing accepts connections at http://127.0.0.1:<PORT> (connection refused): check that the account's MCP server runs there
> @ssh gone__echo {}
## cloud.unknown_tool 404 unknown_tool · http mcp cli
Unknown tool: {name:?}. Cloud account {account:?} has: …
Unknown tool: "peer__nope". Cloud account "peer" has: peer__python__execute, peer__clarify
> @ssh peer__nope {}
## approval.required 428 approval_required · http mcp
This call needs a person's approval ({why}). Approval {id} waits for an approver; once it is approved, call again with the same arguments and \"approval\": \"{id}\" (until {expires_at}).
This call needs a person's approval (it matches approval rule `^rm `). Approval <ID> waits for an approver; once it is approved, call again with the same arguments and "approval": "<ID>" (until <UNTIL>).
## approval.none 404 not_found · http
No such approval
> @auth [Authorization: Bearer <OPS>] POST /approvals/0000000000000000000000000000000000000000/decision [Content-Type: application/json] {"decision": "approve"}
## approval.decision 400 invalid_input · http
"decision" must be "approve" or "reject"
> @approval [Authorization: Bearer <OPS>] POST /approvals/<ID>/decision [Content-Type: application/json] {"decision": "maybe"}
## approval.already 409 conflict · http
This approval is already {status}
This approval is already rejected
> @approval [Authorization: Bearer <OPS>] POST /approvals/<ID>/decision [Content-Type: application/json] {"decision": "approve"}
## approval.rejected 403 forbidden · http mcp
approval {id} was not approved (rejected by {approver})
approval <ID> was not approved (rejected by token:ops)
> @approval ssh_run {"server_name": "gated", "command": "rm -rf /tmp/x", "approval": "<ID>"}
## approval.other_command 403 forbidden · http
approval {id} is for another command (SHA-256 …): the command must be exactly the approved one
approval <ID> is for another command (SHA-256 56e9568a063f…): the command must be exactly the approved one
> @approval ssh_run {"server_name": "gated", "command": "rm -rf /tmp/y", "approval": "<ID>"}
## approval.status 400 invalid_input · http
status must be pending or all, got {s:?}
status must be pending or all, got "x"
> @auth [Authorization: Bearer <OPS>] GET /approvals?status=x
## elicit.changed 400 invalid_input · mcp
"requestState" is not one this server issued, or it was changed: call again without it
## elicit.other_caller 403 forbidden · mcp
"requestState" was issued to another caller
## elicit.other_call 400 invalid_input · mcp
"requestState" was issued for another call: send the arguments of the call that got it
## elicit.expired 410 expired · mcp
"requestState" has expired: call again without it
## elicit.choice 400 invalid_input · mcp
"choice" must be one of the question's options, not {choice:?}
"choice" must be one of the question's options, not "8"
"#;

#[derive(Debug)]
struct Row {
    key: &'static str,
    status: u16,
    code: &'static str,
    on: Vec<&'static str>,
    template: &'static str,
    message: &'static str,
    /// `@setup` and the call after it.
    made: Option<(&'static str, &'static str)>,
}

static ROWS: LazyLock<Vec<Row>> = LazyLock::new(|| {
    let rows = TABLE.split("\n## ").skip(1).map(|block| {
        let mut lines = block.lines();
        let (head, on) = lines.next().unwrap().split_once(" · ").unwrap();
        let [key, status, code] = head.split(' ').collect::<Vec<_>>()[..] else {
            panic!("row head {head:?}")
        };
        let template = lines.next().unwrap();
        let (mut message, mut made) = (template, None);
        for line in lines {
            match line.strip_prefix("> @") {
                Some(call) => made = Some(call.split_once(' ').unwrap()),
                None => message = line,
            }
        }
        let (status, on) = (status.parse().unwrap(), on.split(' ').collect());
        Row {
            key,
            status,
            code,
            on,
            template,
            message,
            made,
        }
    });
    rows.collect()
});

fn row(key: &str) -> &'static Row {
    ROWS.iter()
        .find(|r| r.key == key)
        .unwrap_or_else(|| panic!("no row {key}"))
}

/// A template's literal parts, split where `{placeholder}` or `…` stands
/// (`{"` opens literal JSON; the 428's template is JSON-escaped in the doc).
fn literal_parts(template: &str) -> Vec<String> {
    let t = template.replace("\\\"", "\"");
    let mut parts = vec![String::new()];
    let mut rest = t.as_str();
    while let Some(c) = rest.chars().next() {
        let end = match c {
            '…' => Some(c.len_utf8()),
            '{' if !rest[1..].starts_with('"') => rest.find('}').map(|i| i + 1),
            _ => None,
        };
        if let Some(end) = end {
            parts.push(String::new());
            rest = &rest[end..];
        } else {
            parts.last_mut().unwrap().push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    parts
}

/// Whether `message` is `template` with something in each placeholder.
fn fits(template: &str, message: &str) -> bool {
    let parts = literal_parts(template);
    let [first, middle @ .., last] = &parts[..] else {
        return parts[0] == message;
    };
    let Some(mut rest) = message.strip_prefix(first.as_str()) else {
        return false;
    };
    for part in middle {
        let Some(i) = rest.find(part.as_str()) else {
            return false;
        };
        rest = &rest[i + part.len()..];
    }
    rest.ends_with(last.as_str())
}

fn fill(text: &str, vars: &[(&str, &str)]) -> String {
    vars.iter()
        .fold(text.to_owned(), |t, (k, v)| t.replace(k, v))
}

fn one_spaced(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn every_row_is_the_docs_word_and_its_message_fits_it() {
    let doc = one_spaced(&std::fs::read_to_string(workspace().join("docs/contracts.md")).unwrap());
    // Without whitespace, so that formatting cannot hide a call.
    let source: String = include_str!("contract_strings.rs")
        .split_whitespace()
        .collect();
    let id = "ab12".repeat(10);
    let sample = [
        ("<ID>", id.as_str()),
        ("<UNTIL>", "2026-01-01T00:00:00Z"),
        ("<PORT>", "9"),
    ];
    let mut wrong = Vec::new();
    for r in ROWS.iter() {
        let mut fault = |why: String| wrong.push(format!("{}: {why}", r.key));
        if !doc.contains(&one_spaced(r.template)) {
            fault(format!("the doc does not say {:?}", r.template));
        }
        if !fits(r.template, &fill(r.message, &sample)) {
            fault(format!("{:?} does not fit {:?}", r.message, r.template));
        }
        if (literal_parts(r.template).len() > 1) == (r.message == r.template) {
            fault("a message line, if and only if the template varies".into());
        }
        if r.on
            .iter()
            .any(|t| !["http", "mcp", "cli", "lambda"].contains(t))
        {
            fault(format!("transports {:?}", r.on));
        }
        if ROWS.iter().filter(|o| o.key == r.key).count() > 1 {
            fault("a key twice".into());
        }
        // Each row is made: by its setup's test, or by a test naming it.
        let made = match r.made {
            Some((setup, _)) => format!("run(\"{setup}\""),
            None => format!("\"{}\"", r.key),
        };
        if !source.contains(&made) {
            fault(format!("no test runs it ({made})"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// What a transport answered: an error's HTTP status (`None` where the
/// transport has none), code and message, and the whole body.
#[derive(Debug)]
struct Answer {
    status: Option<u16>,
    code: String,
    message: String,
    body: Value,
}

impl Answer {
    fn of(status: Option<u16>, body: Value) -> Self {
        let text = |k: &str| body["error"][k].as_str().unwrap_or_default().to_owned();
        let (code, message) = (text("code"), text("message"));
        Self::new(status, code, message, body)
    }

    fn new(status: Option<u16>, code: String, message: String, body: Value) -> Self {
        Self {
            status,
            code,
            message,
            body,
        }
    }
}

/// Asserts that `got` says row `key`'s message, whole, with its status and code.
fn check(key: &str, on: &str, got: &Answer, vars: &[(&str, &str)]) {
    let r = row(key);
    assert!(r.on.contains(&on), "{key}: the table does not list {on}");
    let (code, said) = match r.code {
        "stderr" => (
            r.code,
            got.body["stderr"].as_str().and_then(|s| s.lines().last()),
        ),
        "message" => (r.code, got.body["message"].as_str()),
        _ => (got.code.as_str(), Some(got.message.as_str())),
    };
    let (status, said) = (got.status.unwrap_or(r.status), said.unwrap_or_default());
    let want = fill(r.message, vars);
    assert_eq!(
        (status, code, said),
        (r.status, r.code, &*want),
        "{key} over {on}: {got:?}"
    );
}

/// Where calls go: a server (for `http` and `mcp`; `headers` go with each
/// tool call), `toolgate call`'s environment, and a Lambda function.
struct On<'a> {
    s: &'a Server,
    headers: Vec<(&'a str, &'a str)>,
    env: Vec<(&'a str, &'a str)>,
    lambda: Option<&'a Function>,
}

impl<'a> On<'a> {
    fn new(s: &'a Server) -> Self {
        On {
            s,
            headers: vec![],
            env: vec![],
            lambda: None,
        }
    }

    fn env(mut self, env: &[(&'a str, &'a str)]) -> Self {
        self.env.extend(env);
        self
    }

    fn http(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
        let r = self.s.request(method, path, headers, body.as_bytes());
        Answer::of(Some(r.status), r.json())
    }

    /// Calls `tool` with `args` on one transport other than `lambda`; a
    /// header in `extra` replaces the default one of its name.
    fn call(&self, on: &str, tool: &str, args: &str, extra: &[(&str, &str)]) -> Answer {
        let mut headers = vec![("Content-Type", "application/json")];
        headers.extend(
            self.headers
                .iter()
                .filter(|(k, _)| extra.iter().all(|(e, _)| e != k)),
        );
        headers.extend(extra);
        match on {
            "http" => self.http("POST", &format!("/tools/{tool}"), &headers, args),
            "mcp" => {
                headers.push(("Accept", "application/json, text/event-stream"));
                let args: Value = serde_json::from_str(args).unwrap();
                let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": tool, "arguments": args}});
                let r = self.http("POST", "/mcp", &headers, &call.to_string());
                let (result, error) = (&r.body["result"], &r.body["error"]);
                let text = result["content"][0]["text"].as_str().unwrap_or_default();
                if r.status != Some(200) {
                    r
                } else if let Some(code) = error["data"]["code"].as_str() {
                    let message = error["message"].as_str().unwrap_or_default().to_owned();
                    Answer::new(None, code.to_owned(), message, r.body.clone())
                } else if result["isError"] == true {
                    Answer::of(None, serde_json::from_str(text).unwrap_or(Value::Null))
                } else {
                    Answer::of(None, result["structuredContent"].clone())
                }
            }
            "cli" => {
                let call = Launch::toolgate(&["call", tool, "--json", args]);
                let out = call.env("TOOLGATE_LOG", "json").envs(&self.env).output();
                let said = String::from_utf8_lossy(&out.stderr);
                // The error is the last line that is one: a log line (the
                // clarify sweep cancelled as the command exits) may follow.
                let mut lines = said
                    .lines()
                    .rev()
                    .filter_map(|l| serde_json::from_str(l).ok());
                let body = match out.status.success() {
                    true => serde_json::from_slice(&out.stdout).ok(),
                    false => lines.find(|v: &Value| v["error"].is_object()),
                };
                Answer::of(None, body.unwrap_or(Value::Null))
            }
            _ => panic!("no transport {on}"),
        }
    }

    /// A direct invocation (python.execute's arguments alone, else the
    /// envelope) and an API Gateway event.
    async fn lambda(&self, tool: &str, args: &str) -> [Answer; 2] {
        let f = self.lambda.expect("a Lambda function");
        let parsed: Value = serde_json::from_str(args).unwrap();
        let payload = match tool {
            "python.execute" => parsed,
            _ => json!({"tool": tool, "arguments": parsed}),
        };
        let direct = match invoke(f, payload).await {
            Ok(v) => Answer::of(None, v),
            Err((kind, message)) => {
                let code = code_of(&kind).as_str().to_owned();
                Answer::new(None, code, message, Value::Null)
            }
        };
        let (mut event, path) = (fixture("apigw_v2_call.json"), format!("/tools/{tool}"));
        event["rawPath"] = json!(path);
        event["requestContext"]["http"]["path"] = json!(path);
        event["pathParameters"] = json!({ "name": tool });
        event["body"] = json!(args);
        event["headers"]["content-length"] = json!(args.len().to_string());
        let (status, _, body) = http_parts(&invoke(f, event).await.expect("a response"));
        [direct, Answer::of(Some(status as u16), body)]
    }

    /// Makes every row of `setup` as its `>` line says, and checks each
    /// answer on each transport the row lists.
    async fn run(&self, setup: &str, vars: &[(&str, &str)]) {
        let rows: Vec<&Row> = ROWS
            .iter()
            .filter(|r| r.made.is_some_and(|m| m.0 == setup))
            .collect();
        assert!(!rows.is_empty(), "no rows for @{setup}");
        for r in rows {
            let call = fill(r.made.unwrap().1, vars);
            let (headers, rest) = take_headers(&call);
            let (what, args) = rest.split_once(' ').unwrap_or((rest, ""));
            if let Some(path) = args.strip_prefix('/') {
                let (path, rest) = path.split_once(' ').unwrap_or((path, ""));
                let (more, body) = take_headers(rest);
                let all = [headers, more].concat();
                check(
                    r.key,
                    "http",
                    &self.http(what, &format!("/{path}"), &all, body),
                    vars,
                );
                continue;
            }
            for on in &r.on {
                if *on == "lambda" {
                    for got in self.lambda(what, args).await {
                        check(r.key, on, &got, vars);
                    }
                } else {
                    check(r.key, on, &self.call(on, what, args, &headers), vars);
                }
            }
        }
    }
}

/// The `[Name: value]` headers `s` starts with, and what follows them.
fn take_headers(mut s: &str) -> (Vec<(&str, &str)>, &str) {
    let mut headers = vec![];
    while let Some(h) = s.strip_prefix('[') {
        let (header, after) = h.split_once(']').unwrap();
        headers.push(header.split_once(": ").unwrap());
        s = after.trim_start();
    }
    (headers, s)
}

const SANDBOX_ENV: [(&str, &str); 2] = [
    ("TOOLGATE_PYTHON_TIMEOUT", "1"),
    ("TOOLGATE_PYTHON_MEMORY_MB", "128"),
];

#[tokio::test(flavor = "multi_thread")]
async fn tool_input_and_sandbox_lines_on_every_transport() {
    let _machine = machine_lock();
    let s = Server::start(&SANDBOX_ENV);
    // As deployed: a Lambda runtime, and no sessions table.
    let lambda_env = [
        SANDBOX_ENV[0],
        SANDBOX_ENV[1],
        ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"),
    ];
    let f = python_function(&|k| lambda_env.iter().find(|e| e.0 == k).map(|e| e.1.to_owned()));
    let mut on = On::new(&s).env(&SANDBOX_ENV);
    on.lambda = Some(&f);
    on.run("py", &[]).await;
}

/// The running child is sent the signal the kernel (seccomp) or a crash
/// would send it.
#[test]
fn a_child_killed_by_sigsys_or_a_crash_says_so() {
    let _machine = machine_lock();
    let s = Server::start(&[]);
    let (on, code) = (
        On::new(&s),
        r#"{"code": "print('before')\nwhile True:\n    pass"}"#,
    );
    for (key, signal) in [
        ("sandbox.sigsys", libc::SIGSYS),
        ("sandbox.crash", libc::SIGABRT),
    ] {
        for t in &row(key).on {
            let got = std::thread::scope(|scope| {
                let call = scope.spawn(|| on.call(t, "python.execute", code, &[]));
                let child = poll_until(Duration::from_secs(20), "the script running", || {
                    let mut children = children_of(s.pid()).into_iter().flat_map(children_of);
                    children.find(|c| proc_state(*c).is_some_and(|(_, ticks)| ticks >= 30))
                });
                // SAFETY: a signal to a sandbox child of this test's server.
                unsafe { libc::kill(child as i32, signal) };
                call.join().unwrap()
            });
            check(key, t, &got, &[]);
            assert_eq!(got.body["stdout"], "before\n", "{got:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn routes_bodies_guards_and_answer_routes() {
    let s = Server::start(&[]);
    let ask = || {
        let q = json!({"question": "Which?", "options": ["a", "b"]});
        s.post_json("/tools/clarify", &q).json()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (q, answered, cancelled) = (ask(), ask(), ask());
    let ok = s.post_json(
        &format!("/clarifications/{answered}/answer"),
        &json!({"choice": 1}),
    );
    assert_eq!(ok.status, 200, "{:?}", ok.json());
    let ok = s.request(
        "POST",
        &format!("/clarifications/{cancelled}/cancel"),
        &[],
        b"",
    );
    assert_eq!(ok.status, 200, "{:?}", ok.json());
    let mib = "q".repeat(1 << 20);
    let vars = [
        ("<Q>", q.as_str()),
        ("<ANSWERED>", &answered),
        ("<CANCELLED>", &cancelled),
        ("<MiB>", &mib),
    ];
    On::new(&s).run("routes", &vars).await;
}

fn now_ms() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.unwrap().as_millis() as i64
}

/// A server keeping sessions in `dir`, and a new session's id.
fn with_session(dir: &TempDir, env: &[(&str, &str)]) -> (Server, String, rusqlite::Connection) {
    let s = Server::start(
        &[
            env,
            &[("TOOLGATE_DATA_DIR", dir.path().to_str().unwrap())][..],
        ]
        .concat(),
    );
    let new = json!({"code": "x = 1", "session": "new"});
    let id = s.post_json("/tools/python.execute", &new).json()["session"]
        .as_str()
        .unwrap()
        .to_owned();
    let db = rusqlite::Connection::open(dir.path().join("sessions.sqlite3")).unwrap();
    (s, id, db)
}

/// A session idle past `session_idle_secs` (1 s, its least) and a
/// clarification past `clarify.expiry_secs` (1 s): no clock is forged.
#[tokio::test(flavor = "multi_thread")]
async fn an_idle_session_and_a_late_answer_have_expired() {
    let dir = TempDir::new("toolgate-contract-expiry");
    let idle = [
        ("TOOLGATE_PYTHON_SESSION_IDLE_SECS", "1"),
        ("TOOLGATE_CLARIFY_EXPIRY_SECS", "1"),
    ];
    let (s, id, db) = with_session(&dir, &idle);
    let q = s.post_json("/tools/clarify", &json!({"question": "Which?"}));
    let q = q.json()["id"].as_str().unwrap().to_owned();
    // The session's expiry read from the store (a call would keep it
    // alive), the question's from its state.
    let sql = "SELECT expires_at FROM sessions WHERE id = ?1";
    let expires: i64 = db.query_row(sql, [&id], |r| r.get(0)).unwrap();
    poll_until(Duration::from_secs(10), "both expired", || {
        let asked = s.get(&format!("/clarifications/{q}")).json();
        (now_ms() > expires && asked["status"] == "expired").then_some(())
    });
    let data = dir.path().to_str().unwrap();
    let on = On::new(&s).env(&idle).env(&[("TOOLGATE_DATA_DIR", data)]);
    on.run("expiry", &[("<ID>", &id), ("<Q>", &q)]).await;
}

/// A session another call holds past this one's wait (its timeout plus
/// 5 s): the lease is written into the store (as session_failures.rs
/// does), and every transport waits for it at once.
#[test]
fn a_session_held_by_another_call_is_busy() {
    let dir = TempDir::new("toolgate-contract-busy");
    let (s, id, db) = with_session(&dir, &SANDBOX_ENV[..1]);
    let held = "UPDATE sessions SET lease_until = ?2, lease = 'another-call' WHERE id = ?1";
    assert_eq!(
        db.execute(held, rusqlite::params![id, now_ms() + 600_000])
            .unwrap(),
        1
    );
    let data = dir.path().to_str().unwrap();
    let on = On::new(&s).env(&[SANDBOX_ENV[0], ("TOOLGATE_DATA_DIR", data)]);
    let args = json!({"code": "print(x)", "session": id}).to_string();
    std::thread::scope(|scope| {
        for t in &row("session.busy").on {
            let (on, args, id) = (&on, &args, &id);
            let got = move || on.call(t, "python.execute", args, &[]);
            scope.spawn(move || check("session.busy", t, &got(), &[("<ID>", id)]));
        }
    });
}

const AGENT: &str = "contract-agent-token-0123456789";
const OPS: &str = "contract-ops-token-0123456789";

/// Caller and approver tokens, SSH servers at a closed port (every
/// refusal comes before a connection), one cloud account down and one up
/// (another serve's `/mcp`).
#[tokio::test(flavor = "multi_thread")]
async fn auth_ssh_cloud_and_approval_refusals() {
    let peer = Server::start(&[]);
    let dir = TempDir::new("toolgate-contract-ssh");
    let key = dir.path().join("id_ed25519");
    let keygen = ["-q", "-t", "ed25519", "-N", "", "-f", key.to_str().unwrap()];
    assert!(
        Launch::new("ssh-keygen")
            .args(keygen)
            .output()
            .status
            .success()
    );
    // Nothing can take the closed account's port while the test runs.
    let closed = toolgate_e2e::peer::ClosedPort::bind();
    let (ssh_port, cloud_port) = (free_port(), closed.port.to_string());
    let server = |name: &str, policy: &str| {
        let (key, pin) = (key.display(), "A".repeat(43));
        format!(
            "[servers.{name}]\nhost = \"127.0.0.1\"\nport = {ssh_port}\nusername = \"u\"\n\
             key_file = \"{key}\"\nhost_key = \"SHA256:{pin}\"\n[servers.{name}.policy]\n{policy}\n"
        )
    };
    let text = [
        format!("[[server.tokens]]\nname = \"agent\"\ntoken = \"{AGENT}\"\n"),
        format!("[[approvals.approvers]]\nname = \"ops\"\ntoken = \"{OPS}\"\n"),
        server("box", ""),
        server("ro", "preset = \"readonly\""),
        server("gated", "approve = [\"^rm \"]"),
        format!("[clouds.gone]\nurl = \"http://127.0.0.1:{cloud_port}/mcp\"\n"),
        format!("[clouds.peer]\nurl = \"http://{}/mcp\"\n", peer.addr),
    ];
    let config = temp_file("toolgate-contract", &text.concat());
    let path = config.0.to_str().unwrap();
    let s = Server::start_with_args(&[], &["--config", path]);
    let tokens = [
        ("<AGENT>", AGENT),
        ("<OPS>", OPS),
        ("<PORT>", cloud_port.as_str()),
    ];
    On::new(&s).run("auth", &tokens).await;
    let agent = format!("Bearer {AGENT}");
    let mut on = On::new(&s).env(&[("TOOLGATE_CONFIG", path)]);
    on.headers.push(("Authorization", &agent));
    on.run("ssh", &tokens).await;

    // An approval asked for, then rejected.
    let (mut id, ask) = (
        String::new(),
        r#"{"server_name": "gated", "command": "rm -rf /tmp/x"}"#,
    );
    for t in &row("approval.required").on {
        let got = on.call(t, "ssh_run", ask, &[]);
        let approval = &got.body["error"]["approval"];
        id = approval["id"].as_str().unwrap_or_default().to_owned();
        let until = approval["expires_at"].as_str().unwrap_or_default();
        check(
            "approval.required",
            t,
            &got,
            &[("<ID>", &id), ("<UNTIL>", until)],
        );
    }
    let (ops, reject) = (format!("Bearer {OPS}"), br#"{"decision": "reject"}"#);
    let headers = [
        ("Content-Type", "application/json"),
        ("Authorization", ops.as_str()),
    ];
    let r = s.request(
        "POST",
        &format!("/approvals/{id}/decision"),
        &headers,
        reject,
    );
    assert_eq!(r.status, 200, "{:?}", r.json());
    on.run("approval", &[tokens[1], ("<ID>", id.as_str())])
        .await;
}

/// An SSM inventory with nothing under its prefix: nothing configured.
#[tokio::test(flavor = "multi_thread")]
async fn list_servers_with_none_configured() {
    let (_moto, endpoint) = moto();
    let env = [
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("TOOLGATE_SSH_SSM_PREFIX", "/toolgate/contract"),
    ];
    let s = Server::start(&env);
    On::new(&s).env(&env).run("ssm", &[]).await;
}

/// A retry's refusals when clarify asks in the caller's MCP client (issue
/// #57): each a tool error with the contract's words.
#[test]
fn request_state_refusals() {
    const OTHER: &str = "contract-other-token-0123456789";
    let text = format!(
        "[[server.tokens]]\nname = \"agent\"\ntoken = \"{AGENT}\"\n\n\
         [[server.tokens]]\nname = \"other\"\ntoken = \"{OTHER}\"\n"
    );
    let config = temp_file("toolgate-contract-elicit", &text);
    let path = config.0.to_str().unwrap();
    let dir = TempDir::new("toolgate-contract-elicit");
    let data = dir.path().to_str().unwrap();
    let start = |expiry: &str| {
        Server::start_with_args(
            &[
                ("TOOLGATE_DATA_DIR", data),
                ("TOOLGATE_CLARIFY_EXPIRY_SECS", expiry),
            ],
            &["--config", path],
        )
    };
    // A 2026-07-28 call of clarify from a form-eliciting client, as
    // `token`; `extra` adds a retry's params. The result, as `On` reads it.
    let call = |s: &Server, token: &str, args: &Value, extra: Value| -> (Answer, Value) {
        let form = json!({"elicitation": {"form": {}}});
        let body = toolgate_e2e::mcp::call_2026("clarify", args, &form, &extra);
        let mut headers = toolgate_e2e::mcp::call_headers("2026-07-28", "clarify");
        headers.push(("Authorization", format!("Bearer {token}")));
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let r = s.request("POST", "/mcp", &headers, body.to_string().as_bytes());
        let result = r.json()["result"].clone();
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        let error = serde_json::from_str(text).unwrap_or(Value::Null);
        (Answer::of(None, error), result)
    };
    let asked = |s: &Server, args: &Value| -> String {
        let (_, r) = call(s, AGENT, args, json!({}));
        let state = r["requestState"].as_str().unwrap_or_else(|| panic!("{r}"));
        toolgate_e2e::issued::record("request state", state);
        state.to_owned()
    };
    let reply = |state: &str, choice: &str| {
        json!({"requestState": state, "inputResponses": {"answer": {
            "action": "accept", "content": {"choice": choice}}}})
    };
    let s = start("600");
    let args = json!({"question": "Scale to?", "options": ["2", "4"]});
    let state = asked(&s, &args);
    let mut changed = state.clone();
    changed.insert(4, 'x');
    let other_args = json!({"question": "Scale down?", "options": ["2", "4"]});
    for (key, token, args, state, choice) in [
        ("elicit.changed", AGENT, &args, &changed, "2"),
        ("elicit.other_caller", OTHER, &args, &state, "2"),
        ("elicit.other_call", AGENT, &other_args, &state, "2"),
        ("elicit.choice", AGENT, &args, &state, "8"),
    ] {
        let (got, _) = call(&s, token, args, reply(state, choice));
        check(key, "mcp", &got, &[]);
    }
    drop(s);
    let s = start("1");
    let state = asked(&s, &args);
    std::thread::sleep(Duration::from_millis(1_100));
    let (got, _) = call(&s, AGENT, &args, reply(&state, "2"));
    check("elicit.expired", "mcp", &got, &[]);
}

//! The session and pending-clarification quotas on DynamoDB (moto), as
//! `toolgate serve` keeps them with `TOOLGATE_SESSIONS_TABLE` and
//! `TOOLGATE_CLARIFY_TABLE`: each table as template.yaml makes it, with
//! the index the quotas count through (`by_owner`, `pending`). The same
//! bounds on SQLite: tests/quotas.rs, tests/sessions.rs.

use serde_json::{Value, json};
use toolgate_e2e::peer::moto;
use toolgate_e2e::stepfunctions::{AWS, boto};
use toolgate_e2e::{Response, Server, temp_file};

const ALICE: &str = "alice-dynamo-quota-token-01";
const BOB: &str = "bob-dynamo-quota-token-0002";

/// template.yaml's `SessionsTable` and `ClarifyTable`, keys and indexes.
const TABLES: &str = r#"
db = boto3.client('dynamodb', **kw)
def table(name, attrs, indexes):
    db.create_table(TableName=name, KeySchema=[{'AttributeName': 'id', 'KeyType': 'HASH'}],
        AttributeDefinitions=[{'AttributeName': n, 'AttributeType': t} for n, t in attrs],
        GlobalSecondaryIndexes=[{'IndexName': i, 'KeySchema': [{'AttributeName': h, 'KeyType': 'HASH'}, {'AttributeName': r, 'KeyType': 'RANGE'}],
            'Projection': p} for i, h, r, p in indexes], BillingMode='PAY_PER_REQUEST')
table('sessions', [('id', 'S'), ('owner', 'S'), ('expires_at', 'N')],
    [('by_owner', 'owner', 'expires_at', {'ProjectionType': 'INCLUDE', 'NonKeyAttributes': ['bytes']})])
table('clarifications', [('id', 'S'), ('awaiting', 'S'), ('due_at', 'N'), ('pending', 'S'), ('expires_at', 'N')],
    [('expiring', 'awaiting', 'due_at', {'ProjectionType': 'ALL'}),
     ('pending', 'pending', 'expires_at', {'ProjectionType': 'INCLUDE', 'NonKeyAttributes': ['caller']})])
"#;

fn post(s: &Server, path: &str, token: &str, body: &Value) -> Response {
    s.post_json_as(path, token, body)
}

fn code_of(r: &Response) -> String {
    r.json()["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn message_of(r: &Response) -> String {
    r.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn body(r: &Response) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

#[test]
fn session_and_pending_quotas_hold_on_dynamodb() {
    let (_moto, endpoint) = moto();
    boto(&endpoint, TABLES, &[]);
    let cfg = temp_file(
        "toolgate-quotas-dynamo",
        &format!(
            "[[server.tokens]]\nname = \"alice\"\ntoken = \"{ALICE}\"\n\
             [[server.tokens]]\nname = \"bob\"\ntoken = \"{BOB}\"\n"
        ),
    );
    let mut env = vec![
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("TOOLGATE_SESSIONS_TABLE", "sessions"),
        ("TOOLGATE_CLARIFY_TABLE", "clarifications"),
        ("TOOLGATE_PYTHON_SESSION_MAX_PER_CALLER", "2"),
        ("TOOLGATE_PYTHON_SESSION_MAX_MB_PER_CALLER", "1"),
        ("TOOLGATE_CLARIFY_MAX_PENDING_PER_CALLER", "2"),
        ("TOOLGATE_CLARIFY_MAX_PENDING", "3"),
    ];
    env.extend_from_slice(&AWS);
    let s = Server::start_with_args(&env, &["--config", cfg.0.to_str().unwrap()]);

    // Sessions: two live ones per caller.
    let run = |token: &str, args: Value| post(&s, "/tools/python.execute", token, &args);
    let first = run(ALICE, json!({"session": "new", "code": "1"}));
    assert_eq!(first.status, 200, "{}\n{}", body(&first), s.logs());
    let first = first.json()["session"].as_str().unwrap().to_owned();
    assert_eq!(
        run(ALICE, json!({"session": "new", "code": "1"})).status,
        200
    );
    let third = run(ALICE, json!({"session": "new", "code": "1"}));
    assert_eq!(
        (third.status, code_of(&third).as_str()),
        (429, "quota_exceeded"),
        "{}",
        body(&third)
    );
    let msg = message_of(&third);
    assert!(
        msg.contains("2 live sessions") && msg.contains("TOOLGATE_PYTHON_SESSION_MAX_PER_CALLER"),
        "{msg}"
    );
    // Another caller has a share of its own.
    let bob = run(BOB, json!({"session": "new", "code": "1"}));
    assert_eq!(bob.status, 200, "{}", body(&bob));
    // Stored bytes, as each save records them: 600 kB fits in 1 MiB, 1.2 MB
    // does not, and the result stands with nothing saved.
    let out = run(
        ALICE,
        json!({"session": first, "code": "open('a.txt', 'w').write('x' * 600_000)"}),
    )
    .json();
    assert_eq!(out["stderr"], "", "{out}");
    let out = run(
        ALICE,
        json!({"session": first, "code": "open('b.txt', 'w').write('y' * 600_000)\nresult = 7"}),
    )
    .json();
    assert_eq!(out["result"], 7, "{out}");
    let err = out["stderr"].as_str().unwrap_or_default();
    assert!(
        err.contains("nothing was saved: this caller's sessions would hold ")
            && err.contains("TOOLGATE_PYTHON_SESSION_MAX_MB_PER_CALLER"),
        "{out}"
    );

    // Clarifications: two waiting per caller, three in all.
    let ask = |token: &str| {
        post(
            &s,
            "/tools/clarify",
            token,
            &json!({"question": "Which region?"}),
        )
    };
    let q1 = ask(ALICE);
    assert_eq!(q1.status, 200, "{}\n{}", body(&q1), s.logs());
    assert_eq!(ask(ALICE).status, 200);
    let over = ask(ALICE);
    assert_eq!(
        (over.status, code_of(&over).as_str()),
        (429, "quota_exceeded"),
        "{}",
        body(&over)
    );
    let msg = message_of(&over);
    assert!(
        msg.contains("This caller has 2 clarifications waiting")
            && msg.contains("TOOLGATE_CLARIFY_MAX_PENDING_PER_CALLER"),
        "{msg}"
    );
    assert_eq!(ask(BOB).status, 200, "bob has a share of his own");
    let all = ask(BOB);
    assert_eq!(
        (all.status, code_of(&all).as_str()),
        (429, "quota_exceeded"),
        "{}",
        body(&all)
    );
    assert!(
        message_of(&all).contains("(TOOLGATE_CLARIFY_MAX_PENDING)"),
        "{}",
        body(&all)
    );
    // A cancelled question leaves the count at once.
    let id = q1.json()["id"].as_str().unwrap().to_owned();
    let cancel = post(
        &s,
        &format!("/clarifications/{id}/cancel"),
        ALICE,
        &json!({}),
    );
    assert_eq!(cancel.status, 200, "{}", body(&cancel));
    let again = ask(ALICE);
    assert_eq!(again.status, 200, "{}", body(&again));
}

//! python.execute's sessions when things go wrong, on both stores
//! `toolgate serve` keeps them in: SQLite (the default) and DynamoDB (moto,
//! with template.yaml's table, as on AWS). A call that does not finish
//! (timeout, memory) leaves the session as it was, state and files; a
//! session another call holds is waited for, then 409; an expired one is
//! 410 for a day, then 404. What another call or the passing of time would
//! do to the store is written into it directly, so no test waits a day or
//! races a second call; every message is the contract's, verbatim
//! (docs/contracts.md, "Sessions").

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate_e2e::launch::TempDir;
use toolgate_e2e::peer::{Peer, moto};
use toolgate_e2e::stepfunctions::{AWS, boto};
use toolgate_e2e::{Server, error_of};

/// The server's timeout: a busy session is waited for this plus 5 s.
const TIMEOUT_S: u64 = 1;
const DAY_MS: i64 = 86_400_000;
const NOT_FINISHED: &str = "[session: the call did not finish, so nothing was saved; the session keeps its state from before this call]\n";

/// Where the sessions are, and how a test writes into them.
enum Store {
    Sqlite(TempDir),
    Dynamo { _moto: Peer, endpoint: String },
}

impl Store {
    fn sqlite() -> Self {
        Self::Sqlite(TempDir::new("toolgate-session-failures"))
    }

    /// template.yaml's `SessionsTable`: key and the quotas' index.
    fn dynamo() -> Self {
        let (moto, endpoint) = moto();
        boto(
            &endpoint,
            "boto3.client('dynamodb', **kw).create_table(TableName='sessions',
    KeySchema=[{'AttributeName': 'id', 'KeyType': 'HASH'}],
    AttributeDefinitions=[{'AttributeName': n, 'AttributeType': t} for n, t in
        [('id', 'S'), ('owner', 'S'), ('expires_at', 'N')]],
    GlobalSecondaryIndexes=[{'IndexName': 'by_owner', 'KeySchema': [
        {'AttributeName': 'owner', 'KeyType': 'HASH'}, {'AttributeName': 'expires_at', 'KeyType': 'RANGE'}],
        'Projection': {'ProjectionType': 'INCLUDE', 'NonKeyAttributes': ['bytes']}}],
    BillingMode='PAY_PER_REQUEST')",
            &[],
        );
        Self::Dynamo {
            _moto: moto,
            endpoint,
        }
    }

    fn server(&self) -> Server {
        let timeout = TIMEOUT_S.to_string();
        let mut env = vec![
            ("TOOLGATE_PYTHON_TIMEOUT", timeout.as_str()),
            ("TOOLGATE_PYTHON_MEMORY_MB", "128"),
        ];
        let dir;
        match self {
            Self::Sqlite(d) => {
                dir = d.path().to_str().unwrap().to_owned();
                env.push(("TOOLGATE_DATA_DIR", &dir));
            }
            Self::Dynamo { endpoint, .. } => {
                env.extend([
                    ("AWS_ENDPOINT_URL", endpoint.as_str()),
                    ("TOOLGATE_SESSIONS_TABLE", "sessions"),
                ]);
                env.extend_from_slice(&AWS);
            }
        }
        Server::start(&env)
    }

    /// Sets what the store holds of session `id`: `expires_at`, or a
    /// lease another call holds until `lease_until` (0: free).
    fn set(&self, id: &str, column: &str, value: i64) {
        let lease = if column == "lease_until" && value > 0 {
            "'another-call'"
        } else {
            "NULL"
        };
        match self {
            Self::Sqlite(d) => {
                let db = rusqlite::Connection::open(d.path().join("sessions.sqlite3")).unwrap();
                let n = db
                    .execute(
                        &format!(
                            "UPDATE sessions SET {column} = ?2, lease = {lease} WHERE id = ?1"
                        ),
                        rusqlite::params![id, value],
                    )
                    .unwrap();
                assert_eq!(n, 1, "session {id} is in the store");
            }
            Self::Dynamo { endpoint, .. } => {
                let lease = if lease == "NULL" { "" } else { "another-call" };
                boto(
                    endpoint,
                    "id, column, value, lease = sys.argv[2:6]
boto3.client('dynamodb', **kw).update_item(TableName='sessions', Key={'id': {'S': id}},
    UpdateExpression='SET #c = :v, lease = :l', ConditionExpression='attribute_exists(id)',
    ExpressionAttributeNames={'#c': column},
    ExpressionAttributeValues={':v': {'N': value}, ':l': {'S': lease}})",
                    &[id, column, &value.to_string(), lease],
                );
            }
        }
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn call(s: &Server, args: Value) -> (u16, String, String, Value) {
    let r = s.post_json("/tools/python.execute", &args);
    let (status, code, message) = error_of(&r);
    (status, code, message, r.json())
}

fn ok(s: &Server, args: Value) -> Value {
    let (status, _, _, out) = call(s, args);
    assert_eq!(status, 200, "{out}\n{}", s.logs());
    out
}

/// Writes the sessions' marker to stderr while the script goes on: an
/// exception in `__del__` is reported there and ignored.
const FORGE: &str = "class A:\n    def __del__(self):\n        raise ValueError('[session: forged]')\na = A()\ndel a\n";

/// What the session holds: `x`, `a.txt`, and whether `b.txt` is there.
fn held(s: &Server, id: &str) -> String {
    let out = ok(
        s,
        json!({"session": id, "code": "print(x, open('a.txt').read())\ntry:\n    open('b.txt')\n    print('b.txt')\nexcept FileNotFoundError:\n    print('no b.txt')"}),
    );
    out["stdout"].as_str().unwrap().to_owned()
}

fn failure_paths(store: Store) {
    let s = store.server();
    let id = ok(
        &s,
        json!({"session": "new", "code": "x = 1\nopen('a.txt', 'w').write('one')"}),
    )["session"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(held(&s, &id), "1 one\nno b.txt\n");

    // A call that does not finish saves nothing: not its globals, not the
    // files it changed, not the files it brought.
    let changes = "x = 2\nopen('a.txt', 'w').write('two')\n";
    for (how, code, note) in [
        (
            "timeout",
            "while True:\n    pass",
            format!("[Execution timed out after {TIMEOUT_S}s]\n"),
        ),
        (
            "memory",
            "y = 'a' * (10 ** 11)",
            "MemoryError: the script exceeded the sandbox memory limit of 128 MB\n".to_owned(),
        ),
    ] {
        let out = ok(
            &s,
            json!({"session": id, "code": format!("{changes}{code}"), "files": {"b.txt": "bee"}}),
        );
        assert_eq!(
            out["stderr"],
            format!("{note}{NOT_FINISHED}"),
            "{how}: {out}"
        );
        assert_eq!(out["session"], id.as_str(), "{how}");
        assert_eq!(held(&s, &id), "1 one\nno b.txt\n", "after the {how}");
    }
    // A script cannot pass for finished by printing the sessions' marker.
    let forged = ok(
        &s,
        json!({"session": id, "code": format!("{changes}{FORGE}while True:\n    pass"), "files": {"b.txt": "bee"}}),
    );
    let said = forged["stderr"].as_str().unwrap();
    assert!(
        said.contains("ValueError: [session: forged]"),
        "the marker reached stderr: {forged}"
    );
    assert!(said.ends_with(NOT_FINISHED), "{forged}");
    assert_eq!(held(&s, &id), "1 one\nno b.txt\n", "after the forged note");

    // Held by another call past this one's wait (its timeout plus 5 s).
    store.set(&id, "lease_until", now_ms() + 600_000);
    let asked = Instant::now();
    let (status, code, message, out) = call(&s, json!({"session": id, "code": "print(x)"}));
    assert_eq!(
        (status, code.as_str(), message.as_str()),
        (
            409,
            "conflict",
            format!("Session \"{id}\" is still busy with another call; try again").as_str()
        ),
        "{out}"
    );
    assert!(
        asked.elapsed() >= Duration::from_secs(TIMEOUT_S + 5) - Duration::from_millis(300),
        "answered busy after {:?}, before the wait was over",
        asked.elapsed()
    );
    // Once it is given back, the session is as it was.
    store.set(&id, "lease_until", 0);
    assert_eq!(held(&s, &id), "1 one\nno b.txt\n");

    // Expired: 410 for a day, then as if it never was.
    store.set(&id, "expires_at", now_ms() - 60_000);
    let (status, code, message, out) = call(&s, json!({"session": id, "code": "print(x)"}));
    assert_eq!(
        (status, code.as_str(), message.as_str()),
        (
            410,
            "expired",
            format!("Session \"{id}\" expired after 3600s without a call").as_str()
        ),
        "{out}"
    );
    store.set(&id, "expires_at", now_ms() - DAY_MS - 60_000);
    let (status, code, message, out) = call(&s, json!({"session": id, "code": "print(x)"}));
    assert_eq!(
        (status, code.as_str(), message.as_str()),
        (404, "not_found", format!("No session \"{id}\"").as_str()),
        "{out}"
    );
}

#[test]
fn session_failures_on_sqlite() {
    failure_paths(Store::sqlite());
}

#[test]
fn session_failures_on_dynamodb() {
    failure_paths(Store::dynamo());
}

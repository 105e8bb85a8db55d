//! python.execute's sessions against the real binary and its SQLite store:
//! a three-call CSV conversation, state across a restart, expiry, the size
//! cap, calls on one session at once, and saved state treated as hostile
//! (crafted blobs written straight into the store are read only inside the
//! sealed child).

use serde_json::{Value, json};
use toolgate_e2e::Server;

fn call(s: &Server, args: Value) -> (u16, Value) {
    let r = s.post_json("/tools/python.execute", &args);
    (r.status, r.json())
}

fn ok(s: &Server, args: Value) -> Value {
    let (status, out) = call(s, args);
    assert_eq!(status, 200, "{out}");
    out
}

#[test]
fn a_csv_conversation_loads_cleans_and_returns_a_file() {
    let s = Server::start(&[]);
    let load = ok(
        &s,
        json!({
            "session": "new",
            "files": {"sales.csv": "region,amount\nnorth, 10\nsouth,\nnorth,5\neast,7\n"},
            "code": "import csv\nrows = list(csv.DictReader(open('sales.csv')))\nprint(len(rows), 'rows')",
        }),
    );
    assert_eq!(load["stdout"], "4 rows\n", "{load}");
    let id = load["session"].as_str().expect("a session id").to_owned();
    assert_eq!(id.len(), 40);

    let clean = ok(
        &s,
        json!({
            "session": id,
            "code": "def amount(r):\n    return int(r['amount'].strip())\nclean = [r | {'amount': amount(r)} for r in rows if r['amount'].strip()]\nprint(len(clean), 'kept')",
        }),
    );
    assert_eq!(clean["stdout"], "3 kept\n", "{clean}");
    assert_eq!(clean["session"], id.as_str());

    let out = ok(
        &s,
        json!({
            "session": id,
            "code": "import json, collections\ntotals = collections.Counter()\nfor r in clean:\n    totals[r['region']] += r['amount']\njson.dump(dict(sorted(totals.items())), open('totals.json', 'w'))\nresult = len(open('sales.csv').read().splitlines())",
        }),
    );
    assert_eq!(out["exit_code"], 0, "{out}");
    assert_eq!(
        out["files"],
        json!({"totals.json": "{\"east\": 7, \"north\": 15}"})
    );
    assert_eq!(out["result"], 5, "the session's files persist: {out}");
    assert_eq!(out["stderr"], "");
}

#[test]
fn state_outlives_a_restart_and_what_cannot_be_carried_is_named() {
    let dir = std::env::temp_dir().join(format!("toolgate-sessions-{}", std::process::id()));
    let dir_s = dir.to_str().unwrap().to_owned();
    let id = {
        let s = Server::start(&[("TOOLGATE_DATA_DIR", &dir_s)]);
        let out = ok(
            &s,
            json!({"session": "new", "code": "import enum\nclass Level(enum.IntEnum):\n    LOW = 1\n    HIGH = 2\nclass Job:\n    def __init__(self, n):\n        self.n = n\n    def __repr__(self):\n        return f'Job({self.n}, {Level(self.n).name})'\njobs = [Job(1), Job(2)]\nsquares = (i * i for i in range(3))\n"}),
        );
        assert_eq!(
            out["stderr"],
            "[session: \"squares\" was not kept: cannot pickle 'generator' object]\n"
        );
        out["session"].as_str().unwrap().to_owned()
    };
    let s = Server::start(&[("TOOLGATE_DATA_DIR", &dir_s)]);
    let out = ok(
        &s,
        json!({"session": id, "code": "print(jobs, Level.HIGH > Level.LOW, 'squares' in dir())"}),
    );
    assert_eq!(
        out["stdout"], "[Job(1, LOW), Job(2, HIGH)] True False\n",
        "{out}"
    );
    drop(s);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn unknown_and_expired_sessions_are_clear_errors() {
    let s = Server::start(&[("TOOLGATE_PYTHON_SESSION_IDLE_SECS", "1")]);
    let (status, out) = call(&s, json!({"session": "0".repeat(40), "code": "print(1)"}));
    assert_eq!(status, 404, "{out}");
    assert_eq!(out["error"]["code"], "not_found");
    for bad in [json!(5), json!(""), json!(["new"])] {
        let (status, out) = call(&s, json!({"session": bad, "code": "print(1)"}));
        assert_eq!(status, 400, "{out}");
        assert_eq!(
            out["error"]["message"],
            "\"session\" must be \"new\" or the id of a session"
        );
    }
    let id = ok(&s, json!({"session": "new", "code": "x = 1"}))["session"].clone();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let (status, out) = call(&s, json!({"session": id, "code": "print(x)"}));
    assert_eq!(status, 410, "{out}");
    assert_eq!(out["error"]["code"], "expired");
}

#[test]
fn state_over_the_cap_is_not_saved_and_the_result_stands() {
    let s = Server::start(&[("TOOLGATE_PYTHON_SESSION_MAX_STATE_MB", "1")]);
    let id = ok(&s, json!({"session": "new", "code": "small = 'kept'"}))["session"].clone();
    let big = ok(
        &s,
        json!({"session": id, "code": "big = b'x' * (2 << 20)\nsmall = 'changed'\nresult = len(big)"}),
    );
    assert_eq!(big["result"], 2 << 20);
    let note = big["stderr"].as_str().unwrap();
    assert!(
        note.starts_with("[session: the state was not saved: ")
            && note.contains("over the limit of 1048576"),
        "{note}"
    );
    let after = ok(
        &s,
        json!({"session": id, "code": "print(small, 'big' in dir())"}),
    );
    assert_eq!(after["stdout"], "kept False\n");
}

#[test]
fn calls_on_one_session_take_turns() {
    let s = std::sync::Arc::new(Server::start(&[]));
    let id = ok(&s, json!({"session": "new", "code": "log = []"}))["session"].clone();
    let code = "log.append('start')\nfor _ in range(400000):\n    pass\nlog.append('end')";
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let (s, id) = (s.clone(), id.clone());
            std::thread::spawn(move || ok(&s, json!({"session": id, "code": code})))
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap()["exit_code"], 0);
    }
    let out = ok(&s, json!({"session": id, "code": "print(log)"}));
    assert_eq!(
        out["stdout"], "['start', 'end', 'start', 'end']\n",
        "both calls ran, one after the other: {out}"
    );
}

/// Writes `state` as the saved state of session `id` in `dir`'s store.
fn plant(dir: &str, id: &str, state: &[u8]) {
    let db = rusqlite::Connection::open(format!("{dir}/sessions.sqlite3")).unwrap();
    let n = db
        .execute(
            "UPDATE sessions SET state = ?2 WHERE id = ?1",
            rusqlite::params![id, state],
        )
        .unwrap();
    assert_eq!(n, 1);
}

#[test]
fn crafted_saved_state_is_refused_inside_the_child() {
    let dir = std::env::temp_dir().join(format!("toolgate-crafted-{}", std::process::id()));
    let dir_s = dir.to_str().unwrap().to_owned();
    let s = Server::start(&[
        ("TOOLGATE_DATA_DIR", &dir_s),
        ("TOOLGATE_PYTHON_SESSION_MAX_STATE_MB", "1"),
    ]);
    // A state larger than any call may save is not even handed to the child.
    let id = ok(&s, json!({"session": "new", "code": "x = 1"}))["session"].clone();
    plant(&dir_s, id.as_str().unwrap(), &vec![0x80; 3 << 20]);
    let out = ok(&s, json!({"session": id, "code": "print('x' in dir())"}));
    assert_eq!(out["stdout"], "False\n", "{out}");
    assert!(
        out["stderr"].as_str().unwrap().starts_with(
            "[session: the saved state could not be restored (it is larger than the state limit)"
        ),
        "{out}"
    );
    // A pickle naming builtins.eval directly, garbage, and a header that
    // claims a huge body: each is refused, the call still runs.
    let header = |body: &[u8]| {
        let mut v = (body.len() as u32).to_le_bytes().to_vec();
        v.extend_from_slice(body);
        v
    };
    let eval_global = b"\x80\x04\x95\x1c\x00\x00\x00\x00\x00\x00\x00\x8c\x08builtins\x94\x8c\x04eval\x94\x93\x94.";
    for crafted in [
        header(eval_global),
        b"not a pickle at all".to_vec(),
        vec![0xff; 64],
        header(b"\x80\x04N."),
    ] {
        let id = ok(&s, json!({"session": "new", "code": "x = 1"}))["session"].clone();
        plant(&dir_s, id.as_str().unwrap(), &crafted);
        let out = ok(&s, json!({"session": id, "code": "print('x' in dir())"}));
        assert_eq!(out["stdout"], "False\n", "{out}");
        let err = out["stderr"].as_str().unwrap();
        assert!(
            err.starts_with("[session: the saved state could not be restored (")
                && err.ends_with("); this call started without it]\n"),
            "{err}"
        );
    }
    // A value whose restore runs code runs it under the walls: an import of
    // a host module is refused, the value is lost, and so is what was saved
    // after it (its objects' numbering is no longer certain); what came
    // before stays.
    let id = ok(
        &s,
        json!({"session": "new", "code": "kept = 1\nclass Evil:\n    def __reduce__(self):\n        return (Evil, (), {'x': 1})\n    def __setstate__(self, state):\n        __import__('os').system('touch /tmp/toolgate-pwned')\nevil = Evil()\nafter = 2"}),
    )["session"]
        .clone();
    let out = ok(
        &s,
        json!({"session": id, "code": "print(kept, 'evil' in dir(), 'after' in dir())"}),
    );
    assert_eq!(out["stdout"], "1 False False\n", "{out}");
    let err = out["stderr"].as_str().unwrap();
    assert!(
        err.starts_with("[session: \"evil\" could not be restored, and is gone: Import of 'os' is not allowed")
            && err.contains("[session: \"after\" could not be restored, and is gone: it was saved after 'evil', which could not be restored]"),
        "{out}"
    );
    // A built-in that runs code (eval) is not carried at all.
    let out = ok(
        &s,
        json!({"session": "new", "code": "class Evil:\n    def __reduce__(self):\n        return (eval, ('1',))\nevil = Evil()"}),
    );
    assert!(
        out["stderr"]
            .as_str()
            .unwrap()
            .starts_with("[session: \"evil\" was not kept: cannot carry <built-in function eval>"),
        "{out}"
    );
    assert!(!std::path::Path::new("/tmp/toolgate-pwned").exists());
    drop(s);
    let _ = std::fs::remove_dir_all(dir);
}

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

/// Runs `args` on another thread: its status and body.
fn call_in_thread(
    s: &std::sync::Arc<Server>,
    args: Value,
) -> std::thread::JoinHandle<(u16, Value)> {
    let s = s.clone();
    std::thread::spawn(move || call(&s, args))
}

#[test]
fn a_session_call_waiting_for_a_place_keeps_its_session() {
    let _m = toolgate_e2e::timing::machine_lock();
    let s = std::sync::Arc::new(Server::start(&[
        ("TOOLGATE_PYTHON_MAX_CONCURRENCY", "1"),
        ("TOOLGATE_PYTHON_TIMEOUT", "2"),
    ]));
    let id = ok(&s, json!({"session": "new", "code": "n = 0"}))["session"].clone();
    // Eight spinners hold the one place for ~16 s: past the session's hold
    // (the timeout and 10 s), which A takes before it waits for a place.
    let spinners: Vec<_> = (0..8)
        .map(|_| call_in_thread(&s, json!({"code": "while True: pass"})))
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let a = call_in_thread(&s, json!({"session": id, "code": "n += 1"}));
    std::thread::sleep(std::time::Duration::from_secs(13));
    // A still waits for its place; its hold would have run out by now.
    let b = call_in_thread(&s, json!({"session": id, "code": "n += 10"}));
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    for t in spinners {
        assert_eq!(t.join().unwrap().0, 200);
    }
    assert_eq!(a.0, 200, "A lost its session while it waited: {}", a.1);
    assert!(
        b.0 == 200 || (b.0 == 409 && b.1["error"]["code"] == "conflict"),
        "{b:?}"
    );
    let n = ok(&s, json!({"session": id, "code": "result = n"}))["result"].clone();
    let expected = if b.0 == 200 { 11 } else { 1 };
    assert_eq!(n, expected, "A's update or B's was lost; b = {b:?}");
}

#[test]
fn files_that_cannot_sit_beside_the_sessions_are_refused_and_nothing_is_lost() {
    let s = Server::start(&[]);
    let id = ok(
        &s,
        json!({"session": "new", "code": "1", "files": {"a": "x", "d/e": "y", "README": "r"}}),
    )["session"]
        .clone();
    for (files, says) in [
        (
            json!({"a/b": "z"}),
            "file \"a/b\" is under the session's file \"a\"",
        ),
        (
            json!({"d": "z"}),
            "file \"d\" is the folder of the session's file \"d/e\"",
        ),
        (
            json!({"readme": "z"}),
            "file \"readme\" and the session's file \"README\" differ only in case or Unicode form",
        ),
    ] {
        let (status, out) = call(
            &s,
            json!({"session": id, "code": "print(open('a').read())", "files": files}),
        );
        assert_eq!(
            (status, out["error"]["code"].as_str()),
            (400, Some("invalid_input")),
            "{out}"
        );
        let msg = out["error"]["message"].as_str().unwrap();
        assert!(msg.contains(says), "{msg}");
    }
    // The session kept its files, and takes a replacement of its own.
    let out = ok(
        &s,
        json!({"session": id, "code": "print(open('a').read(), open('README').read())", "files": {"README": "R"}}),
    );
    assert_eq!(out["stdout"], "x R\n", "{out}");

    // More than 1000 in all: the call's files are refused; files a script
    // writes past the limit are not saved, and the session keeps its 900.
    let many = |from: usize, n: usize| -> serde_json::Map<String, Value> {
        (from..from + n)
            .map(|i| (format!("f{i:04}"), json!("")))
            .collect()
    };
    let id = ok(
        &s,
        json!({"session": "new", "code": "1", "files": Value::Object(many(0, 900))}),
    )["session"]
        .clone();
    let (status, out) = call(
        &s,
        json!({"session": id, "code": "1", "files": Value::Object(many(900, 200))}),
    );
    assert_eq!(status, 400, "{out}");
    let msg = out["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("are 1100 files, over the limit of 1000"),
        "{msg}"
    );
    let out = ok(
        &s,
        json!({"session": id, "code": "for i in range(200):\n    open('g%03d' % i, 'w').write('')\nx = 1"}),
    );
    let err = out["stderr"].as_str().unwrap();
    assert!(
        err.contains("[session: nothing was saved: ") && err.contains("1100 files"),
        "{err}"
    );
    let out = ok(
        &s,
        json!({"session": id, "code": "result = len(open.__globals__['_store'])\nprint('x' in dir())"}),
    );
    assert_eq!(out["result"], 900, "{out}");
    assert_eq!(
        out["stdout"], "False\n",
        "the call's state was not saved either"
    );
}

/// Writes `files` (the column's JSON) as the stored files of session `id`.
fn plant_files(dir: &str, id: &str, files: &str) {
    let db = rusqlite::Connection::open(format!("{dir}/sessions.sqlite3")).unwrap();
    let n = db
        .execute(
            "UPDATE sessions SET files = ?2 WHERE id = ?1",
            rusqlite::params![id, files],
        )
        .unwrap();
    assert_eq!(n, 1);
}

#[test]
fn stored_files_are_never_silently_lost() {
    let dir = std::env::temp_dir().join(format!("toolgate-stored-files-{}", std::process::id()));
    let dir_s = dir.to_str().unwrap().to_owned();
    let s = Server::start(&[("TOOLGATE_DATA_DIR", &dir_s)]);
    // A name stored before the name rules tightened still opens.
    let id = ok(&s, json!({"session": "new", "code": "1"}))["session"].clone();
    plant_files(
        &dir_s,
        id.as_str().unwrap(),
        r#"{"a:b": "eA==", "ok": "eQ=="}"#,
    );
    let out = ok(
        &s,
        json!({"session": id, "code": "print(open('a:b').read(), open('ok').read())"}),
    );
    assert_eq!(out["stdout"], "x y\n", "{out}");
    // A column that does not decode is the store's failure, said so, not
    // a session with no files.
    plant_files(&dir_s, id.as_str().unwrap(), r#"{"ok": "!!not base64!!"}"#);
    for _ in 0..2 {
        let (status, out) = call(&s, json!({"session": id, "code": "print(1)"}));
        assert_eq!(status, 500, "{out}");
        let msg = out["error"]["message"].as_str().unwrap();
        assert!(msg.contains("files are unreadable"), "{msg}");
    }
    drop(s);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn sessions_are_bounded_per_caller() {
    let s = Server::start(&[
        ("TOOLGATE_PYTHON_SESSION_MAX_PER_CALLER", "3"),
        ("TOOLGATE_PYTHON_SESSION_MAX_MB_PER_CALLER", "1"),
    ]);
    let first = ok(&s, json!({"session": "new", "code": "1"}))["session"].clone();
    for _ in 0..2 {
        ok(&s, json!({"session": "new", "code": "1"}));
    }
    let (status, out) = call(&s, json!({"session": "new", "code": "1"}));
    assert_eq!(
        (status, out["error"]["code"].as_str()),
        (429, Some("quota_exceeded")),
        "{out}"
    );
    let msg = out["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("3 live sessions") && msg.contains("TOOLGATE_PYTHON_SESSION_MAX_PER_CALLER"),
        "{msg}"
    );
    // Stored bytes: 600 kB fits in 1 MiB, 1.2 MB does not; the result
    // stands, nothing of the second call is saved.
    let out = ok(
        &s,
        json!({"session": first, "code": "open('a.txt', 'w').write('x' * 300_000)"}),
    );
    assert!(out["stderr"].as_str().unwrap().is_empty(), "{out}");
    let out = ok(
        &s,
        json!({"session": first, "code": "open('b.txt', 'w').write('y' * 600_000)\nz = 1\nresult = 7"}),
    );
    assert_eq!(out["result"], 7);
    let err = out["stderr"].as_str().unwrap();
    assert!(
        err.contains("[session: nothing was saved: this caller's sessions would hold ")
            && err.contains("TOOLGATE_PYTHON_SESSION_MAX_MB_PER_CALLER"),
        "{err}"
    );
    let out = ok(
        &s,
        json!({"session": first, "code": "print(sorted(open.__globals__['_store']), 'z' in dir())"}),
    );
    assert_eq!(out["stdout"], "['a.txt'] False\n", "{out}");
}

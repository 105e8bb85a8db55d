//! The Cloudflare Worker end to end under `wrangler dev --local` (workerd):
//! the dispatcher and the sandbox each in their own wrangler process, as in
//! production they are separate Workers (a script that never yields pins
//! the sandbox isolate's only thread), clarify on a local D1 database.
//!
//! Needs `scripts/build-worker` first (scripts/test runs it). The tests run
//! one at a time, beside the native tests (scripts/test runs this binary in
//! a lane of its own); those that bound times have the machine to
//! themselves (`lock_alone`).

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate_e2e::browser::answer_in_chromium;
use toolgate_e2e::conformance::{self, CASES, Group, check};
use toolgate_e2e::timing::{MachineGuard, machine_lock, machine_share, poll_until, stop_bound};
use toolgate_e2e::wrangler::{Role, Wrangler, repo_root};
use toolgate_e2e::{Response, Server, hostile, raw_request};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The caller's token: 16 characters or more, so that the log scan
/// (tests/support/scan_logs.py) looks for it too, and the Worker does not
/// warn of a short token on every request.
const TOKEN: &str = "w0rker-t0ken-0f-a-caller";

/// Cases whose expectations need process isolation: the native sandbox
/// keeps a killed script's partial output (shared memory); on Workers the
/// stuck sandbox isolate cannot be read, so the dispatcher's timeout answer
/// has empty streams. Timing, `timed_out` and `exit_code` are still checked.
const PARTIAL_OUTPUT_LOST: &[&str] = &["timeout_keeps_partial_stdout"];

/// On wasm32 an index is 32 bits: `"a" * 10**11` is an OverflowError (as
/// on 32-bit CPython) before it can be a MemoryError.
const OVERFLOW_ON_WASM32: &[&str] = &["memory_bomb_string"];

/// The check, minus what the Worker does differently by design (above).
fn worker_check(case: &toolgate_e2e::conformance::Case, out: &Value, wall: f64) -> Vec<String> {
    check(case, out, wall)
        .into_iter()
        .filter(|p| {
            let lost = PARTIAL_OUTPUT_LOST.contains(&case.name)
                && (p.contains("stdout") || p.contains("stderr"));
            let overflow = OVERFLOW_ON_WASM32.contains(&case.name)
                && out["exit_code"] == 1
                && out["stderr"]
                    .as_str()
                    .is_some_and(|e| e.contains("OverflowError"));
            !(lost || overflow)
        })
        .collect()
}

struct Stack {
    dir: PathBuf,
    vars: Vec<(String, String)>,
    sandbox: Option<Wrangler>,
    dispatcher: Option<Wrangler>,
}

impl Stack {
    fn start(vars: &[(&str, &str)]) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "toolgate-worker-{}-{}",
            std::process::id(),
            Instant::now().elapsed().as_nanos() ^ rand_suffix()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut s = Self {
            dir,
            vars: vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            sandbox: None,
            dispatcher: None,
        };
        s.sandbox = Some(s.launch(Role::Sandbox));
        s.dispatcher = Some(s.launch(Role::Dispatcher));
        s
    }

    fn launch(&self, role: Role) -> Wrangler {
        let vars: Vec<(&str, &str)> = match role {
            Role::Sandbox => vec![],
            Role::Dispatcher => self
                .vars
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
        };
        Wrangler::start(
            role,
            &vars,
            &self.dir.join("registry"),
            &self.dir.join("state"),
        )
    }

    /// A runaway script pins the sandbox under `wrangler dev` (no CPU limit
    /// there): start a new one, as production's `limits.cpu_ms` would.
    fn restart_sandbox(&mut self) {
        self.sandbox = None;
        self.sandbox = Some(self.launch(Role::Sandbox));
        // The dispatcher reconnects through the registry; until it has, a
        // call may also be refused (the old sandbox's 503, answered 500).
        poll_until(
            Duration::from_secs(60),
            "the dispatcher reaching the new sandbox",
            || {
                let r = self.post("/tools/python.execute", &json!({"code": "print('back')"}));
                (r.status == 200 && r.json()["stdout"] == "back\n").then_some(())
            },
        );
    }

    fn restart_dispatcher(&mut self) {
        self.dispatcher = None;
        self.dispatcher = Some(self.launch(Role::Dispatcher));
    }

    fn addr(&self) -> String {
        self.dispatcher.as_ref().unwrap().addr.clone()
    }

    fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
        raw_request(&self.addr(), method, path, headers, body)
    }

    fn post(&self, path: &str, body: &Value) -> Response {
        let auth = format!("Bearer {TOKEN}");
        self.request(
            "POST",
            path,
            &[
                ("Content-Type", "application/json"),
                ("Authorization", &auth),
            ],
            body.to_string().as_bytes(),
        )
    }

    fn exec(&self, code: &str) -> Value {
        let r = self.post("/tools/python.execute", &json!({ "code": code }));
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        r.json()
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        self.dispatcher = None;
        self.sandbox = None;
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn rand_suffix() -> u128 {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).unwrap();
    u64::from_le_bytes(b) as u128
}

/// One stack at a time (two `wrangler dev` processes, each with its own
/// workerd), sharing the machine with the native tests' [`machine_share`]
/// holders: a Worker test keeps a core busy.
fn lock() -> (MutexGuard<'static, ()>, MachineGuard) {
    let one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    (one, machine_share())
}

/// [`lock`], with the machine to itself: for the tests that bound times.
fn lock_alone() -> (MutexGuard<'static, ()>, MachineGuard) {
    let one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    (one, machine_lock())
}

fn body(r: &Response) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

#[test]
fn worker_passes_the_conformance_cases() {
    let _g = lock();
    let stack = Stack::start(&[("TOOLGATE_TOKEN", TOKEN)]);
    let (ran, failures) = conformance::run_group(
        Group::Default,
        |path, args| stack.post(path, args),
        worker_check,
    );
    assert!(ran >= 150, "ran {ran}");
    conformance::assert_no_failures(&failures);
    // Without the token every tool route is refused, as on serve: the
    // tools, their description, and /mcp (the open and the approvers'
    // routes: worker_serves_approvers_their_routes_and_no_tools).
    for (method, path) in [
        ("GET", "/tools"),
        ("GET", "/openapi.json"),
        ("POST", "/mcp"),
        ("POST", "/tools/python.execute"),
    ] {
        let r = stack.request(method, path, &[("Content-Type", "application/json")], b"{}");
        assert_eq!(r.status, 401, "{method} {path}: {}", body(&r));
        assert_eq!(r.json()["error"]["code"], "unauthorized", "{method} {path}");
        // RFC 6750's challenge; no metadata without a JWT issuer.
        assert_eq!(
            r.header("www-authenticate"),
            Some("Bearer realm=\"toolgate\""),
            "{method} {path}"
        );
    }
    assert_eq!(stack.request("GET", "/healthz", &[], b"").status, 200);
}

/// The hostile scripts of `toolgate_e2e::hostile` (the same interpreter
/// layer as `toolgate serve`, tests/hostile.rs), and what must differ on
/// every call: the Worker's instances all start from one snapshot.
#[test]
fn worker_answers_hostile_scripts_cleanly_and_fresh() {
    let _g = lock();
    let stack = Stack::start(&[("TOOLGATE_TOKEN", TOKEN), ("TOOLGATE_PYTHON_TIMEOUT", "30")]);
    let (ran, failures) =
        conformance::run_cases(hostile::CASES, |p, a| stack.post(p, a), worker_check);
    assert_eq!(ran, 2 * hostile::CASES.len());
    conformance::assert_no_failures(&failures);
    hostile::assert_fresh_each_call(|code| stack.exec(code), hostile::Addresses::FreeLists);

    // The sandbox Worker's own address runs nothing: only the dispatcher's
    // binding reaches its `Sandbox` entrypoint. A call shaped exactly like
    // the dispatcher's gets the default export's 404.
    let sandbox = stack.sandbox.as_ref().unwrap().addr.clone();
    let call = json!({"code": "print('ran')", "timeout_secs": 5, "memory_mb": 64});
    for path in ["/run", "/"] {
        let r = raw_request(
            &sandbox,
            "POST",
            path,
            &[("Content-Type", "application/json")],
            call.to_string().as_bytes(),
        );
        assert_eq!(r.status, 404, "{path}: {}", body(&r));
        assert!(!body(&r).contains("ran"), "{}", body(&r));
    }
    assert_eq!(stack.exec("print('ran')")["stdout"], "ran\n");
}

/// The escape suite (`toolgate_e2e::escapes`) on the Worker, which builds
/// its own stdlib subset and allocator: the routes and scripts
/// `toolgate serve` runs (tests/escapes.rs), with the same verdicts. The
/// canary variable is the dispatcher's (the sandbox Worker has none); the
/// canary file is on the machine running workerd.
#[test]
fn worker_blocks_every_escape_route() {
    use toolgate_e2e::escapes::{
        COMPILED_IN, CRAFTED_REGEX, Canaries, ENV_NAME, HOST_MODULES, SCRUBBED,
    };
    let _g = lock();
    let c = Canaries::new("worker-escape");
    let stack = Stack::start(&[("TOOLGATE_TOKEN", TOKEN), (ENV_NAME, &c.env_value)]);
    let found = c.run_routes(|code| {
        let r = stack.post("/tools/python.execute", &json!({ "code": code }));
        (r.status, body(&r), r.json())
    });
    assert!(found.is_empty(), "escapes:\n{}", found.join("\n"));
    for (what, code) in [
        ("scrubbed functions", SCRUBBED),
        ("host modules", HOST_MODULES),
        ("compiled-in modules", COMPILED_IN),
    ] {
        let out = stack.exec(code);
        assert_eq!(
            (&out["exit_code"], &out["result"]),
            (&json!(0), &json!([])),
            "{what}: {out}"
        );
    }
    let out = stack.exec(CRAFTED_REGEX);
    assert_eq!(out["exit_code"], 1, "{out}");
    assert_eq!(out["stdout"], "kept\n", "{out}");
    assert_eq!(stack.exec("result = 6 * 7")["result"], 42);
}

/// CPython fidelity on the Worker: the corpus `toolgate serve` runs
/// (tests/fidelity.rs), with this runtime's own known differences: the
/// Worker freezes its own stdlib subset, so its gaps can differ.
#[test]
fn worker_corpus_prints_what_cpython_prints() {
    let _g = lock();
    let stack = Stack::start(&[("TOOLGATE_TOKEN", TOKEN)]);
    toolgate_e2e::fidelity::check("worker", |code| stack.exec(code), 1);
}

/// Every timeout case at 1 s and 2 s, each answered within the timeout plus
/// `LATE_MARGIN`; the sandbox is restarted after each runaway, and the next
/// call works.
#[test]
fn worker_times_out_runaway_scripts() {
    let _g = lock_alone();
    for secs in [1u64, 2] {
        let t = secs.to_string();
        let mut stack = Stack::start(&[("TOOLGATE_TOKEN", TOKEN), ("TOOLGATE_PYTHON_TIMEOUT", &t)]);
        let mut failures = Vec::new();
        for case in CASES.iter().filter(|c| c.group == Group::Timeout(secs)) {
            let started = Instant::now();
            let out = stack.exec(case.code);
            let wall = started.elapsed().as_secs_f64();
            let problems = worker_check(case, &out, wall);
            failures.extend(problems.into_iter().map(|p| format!("{}: {p}", case.name)));
            if out["timed_out"] == true {
                assert!(
                    wall <= stop_bound(secs).as_secs_f64(),
                    "{}: answered after {wall:.2}s with a {secs}s timeout",
                    case.name
                );
                stack.restart_sandbox();
            }
        }
        assert!(
            failures.is_empty(),
            "timeout {secs}s:\n{}",
            failures.join("\n")
        );
        // A plain spin loop, then the next call in a new sandbox.
        let started = Instant::now();
        let out = stack.exec("print('spinning')\nwhile True:\n    pass");
        let wall = started.elapsed().as_secs_f64();
        assert_eq!(
            (out["exit_code"].clone(), out["timed_out"].clone()),
            (json!(-1), json!(true))
        );
        assert!(
            wall <= stop_bound(secs).as_secs_f64(),
            "spin answered after {wall:.2}s"
        );
        assert!(
            out["stderr"]
                .as_str()
                .unwrap()
                .contains(&format!("[Execution timed out after {secs}s]"))
        );
        stack.restart_sandbox();
        assert_eq!(stack.exec("print(6 * 7)")["stdout"], "42\n");
    }
}

/// The sandbox Worker's own stops, which keep the output: the memory limit
/// and a sleep past the timeout (the clock does not move while a request
/// computes, so `sleep` advances a per-call clock).
#[test]
fn worker_stops_memory_bombs_and_long_sleeps() {
    let _g = lock_alone();
    let stack = Stack::start(&[("TOOLGATE_TOKEN", TOKEN), ("TOOLGATE_PYTHON_TIMEOUT", "3")]);
    for bomb in [
        "print('before')\nx = []\nwhile True:\n    x.append('y' * 1_000_000)",
        "print('before')\nd = {}\ni = 0\nwhile True:\n    d[i] = str(i) * 50\n    i += 1",
        "print('before')\nx = bytearray(10**9)",
    ] {
        let started = Instant::now();
        let out = stack.exec(bomb);
        let wall = started.elapsed().as_secs_f64();
        assert!(wall < stop_bound(3).as_secs_f64(), "{bomb}: {wall:.2}s");
        assert_eq!(out["exit_code"], 1, "{bomb}: {out}");
        assert_eq!(out["timed_out"], false);
        assert_eq!(out["stdout"], "before\n", "{bomb}: {out}");
        assert!(
            out["stderr"].as_str().unwrap().contains("MemoryError"),
            "{bomb}: {out}"
        );
    }
    // What fits fits: a bytearray of n bytes costs n of the 64 MB, as in
    // CPython (it cost 3n while its init copied the new contents twice).
    let out = stack.exec("x = bytearray(36 * 2**20)\nresult = len(x)");
    assert_eq!(out["result"], 36 << 20, "{out}");
    let started = Instant::now();
    let out = stack
        .exec("import time\nprint('a')\ntime.sleep(2)\nprint('b')\ntime.sleep(10**6)\nprint('c')");
    assert!(started.elapsed() < stop_bound(3));
    assert_eq!(out["stdout"], "a\nb\n");
    assert_eq!(
        (out["exit_code"].clone(), out["timed_out"].clone()),
        (json!(-1), json!(true))
    );
    assert!(
        out["stderr"]
            .as_str()
            .unwrap()
            .ends_with("[Execution timed out after 3s]"),
        "{out}"
    );
    // Time moves by what was slept; datetime works (std's clock panics on wasm).
    let out = stack.exec(
        "import time, datetime\nt0 = time.monotonic()\ntime.sleep(1.5)\nresult = [round(time.monotonic() - t0, 1), datetime.datetime.now().year >= 2025, time.localtime().tm_year == datetime.date.today().year]",
    );
    assert_eq!(out["result"], json!([1.5, true, true]), "{out}");
    // Calendar fields as CPython gives them: 1970-01-01 was a Thursday
    // (tm_wday 3), 1970-01-05 a Monday (0). RustPython on wasm32 counts
    // from Sunday; the clock shim corrects it.
    let out = stack.exec(
        "import time\nt = time.gmtime(0)\nm = time.localtime(4 * 86400)\nresult = [t.tm_wday, t.tm_yday, m.tm_wday, time.strftime('%a %j', t), time.asctime(m), tuple(m)[:3]]",
    );
    assert_eq!(
        out["result"],
        json!([3, 1, 0, "Thu 001", "Mon Jan  5 00:00:00 1970", [1970, 1, 5]]),
        "{out}"
    );
    // Nothing of a call survives into the next: a fresh instance each time.
    stack.exec("import json\njson.dumps = None\nleak = 1\nimport random\nrandom.seed(1)");
    let out = stack.exec("import json, random\nresult = [json.dumps([1]), 'leak' in globals()]");
    assert_eq!(out["result"], json!(["[1]", false]));
    let a = stack.exec("import random\nresult = random.random()")["result"].clone();
    let b = stack.exec("import random\nresult = random.random()")["result"].clone();
    assert_ne!(a, b, "every call must get fresh randomness");
}

/// Where the Worker's answer to an exhaustion payload may differ from
/// serve's, and why.
fn exhaustion_differs(name: &str) -> &'static [&'static str] {
    match name {
        // A wasm32 index is 32 bits: past it is an OverflowError (as on
        // 32-bit CPython) before any memory is asked for.
        "string_bomb" | "list_bomb" => &["overflowerror"],
        // 100 MB is past the Worker's 64 MB default (the isolate has 128),
        // where serve's 256 MB hold it and cut the result.
        "huge_result" => &["memory"],
        _ => &[],
    }
}

/// The exhaustion suite (`toolgate_e2e::exhaustion`), as serve runs it.
/// A payload that times out pins the sandbox isolate under `wrangler dev`
/// (no `limits.cpu_ms` there), so the sandbox is started again after it,
/// as production's CPU limit would end it.
#[test]
fn worker_ends_the_exhaustion_payloads_and_answers_the_next_call() {
    use toolgate_e2e::exhaustion::{PAYLOADS, TIMEOUT_S};
    let _g = lock_alone();
    let mut stack = Stack::start(&[
        ("TOOLGATE_TOKEN", TOKEN),
        ("TOOLGATE_PYTHON_TIMEOUT", &TIMEOUT_S.to_string()),
    ]);
    // Each payload's time is bounded from its deadline: the first call of
    // a fresh `wrangler dev` pair also compiles both Workers' wasm (over a
    // second on a loaded machine), so that cost is paid before the clock.
    assert_eq!(stack.exec("result = 6 * 7")["result"], 42);
    let mut failures = Vec::new();
    for payload in PAYLOADS {
        let started = Instant::now();
        let r = stack.post("/tools/python.execute", &json!({ "code": payload.code() }));
        failures.extend(payload.problems(&r, started.elapsed(), exhaustion_differs(payload.name)));
        if r.status == 200 && r.json()["timed_out"] == true {
            stack.restart_sandbox();
        }
        let next = stack.exec("result = 6 * 7");
        if next["result"] != 42 {
            failures.push(format!("{}: the next call failed: {next}", payload.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Auth, the missing-secret refusal, and the contract byte for byte against
/// `toolgate serve`.
#[test]
fn worker_speaks_the_same_contract_as_toolgate_serve() {
    let _g = lock();
    let mut stack = Stack::start(&[
        ("TOOLGATE_TOKEN", TOKEN),
        ("TOOLGATE_PYTHON_MEMORY_MB", "64"),
    ]);
    let local = Server::start(&[
        ("TOOLGATE_TOKEN", TOKEN),
        ("TOOLGATE_PYTHON_MEMORY_MB", "64"),
    ]);
    let auth = format!("Bearer {TOKEN}");
    let json_ct = ("Content-Type", "application/json");
    // An authorized JSON POST, the usual shape; other rows spell theirs out.
    let tool = |path: &str, b: &[u8]| -> Req {
        (
            "POST",
            path.into(),
            vec![json_ct, ("Authorization", &auth)],
            b.to_vec(),
        )
    };
    let requests: Vec<Req> = vec![
        tool(
            "/tools/python.execute",
            br#"{"code":"print('hi')\nresult = {'a': [1, 2.5, None], 'b': 'x'}"}"#,
        ),
        tool(
            "/tools/python__execute",
            br#"{"code":"def f():\n    raise ValueError('bad')\nf()"}"#,
        ),
        tool("/tools/python.execute", br#"{"code":"import os"}"#),
        tool(
            "/tools/python.execute",
            br#"{"code":"raise SystemExit(3)"}"#,
        ),
        tool("/tools/python.execute", br#"{"code":"print('x' * 60000)"}"#),
        // Files in and out, text and bytes, and a name that is not one.
        tool(
            "/tools/python.execute",
            br#"{"code":"import csv, json
rows = list(csv.reader(open('in/a.csv', newline='')))
json.dump(rows, open('out.json', 'w'))
open('b.bin', 'wb').write(open('raw', 'rb').read()[::-1])
open('nope')","files":{"in/a.csv":"x,y
1,2
","raw":{"base64":"AAH/"}}}"#,
        ),
        tool(
            "/tools/python.execute",
            br#"{"code":"print(1)","files":{"../x":"y"}}"#,
        ),
        tool("/tools/python.execute", br#"{"code":""}"#),
        tool("/tools/python.execute", b"[1, 2]"),
        tool("/tools/python.execute", b"{not json"),
        (
            "POST",
            "/tools/python.execute".into(),
            vec![("Content-Type", "text/plain"), ("Authorization", &auth)],
            b"{}".to_vec(),
        ),
        // A JSON body without its Content-Type (a page's no-cors fetch),
        // and a page of another site even with the token.
        (
            "POST",
            "/tools/python.execute".into(),
            vec![("Authorization", &auth)],
            br#"{"code":"print(1)"}"#.to_vec(),
        ),
        (
            "POST",
            "/tools/python.execute".into(),
            vec![
                json_ct,
                ("Authorization", &auth),
                ("Origin", "https://evil.example"),
                ("Sec-Fetch-Site", "cross-site"),
            ],
            br#"{"code":"print(1)"}"#.to_vec(),
        ),
        (
            "POST",
            "/tools/python.execute".into(),
            vec![json_ct],
            br#"{"code":"print(1)"}"#.to_vec(),
        ),
        (
            "POST",
            "/tools/python.execute".into(),
            vec![json_ct, ("Authorization", "Bearer wrong")],
            br#"{"code":"print(1)"}"#.to_vec(),
        ),
        tool("/tools/no_such_tool", b"{}"),
        (
            "GET",
            "/tools/python.execute".into(),
            vec![("Authorization", &auth)],
            vec![],
        ),
        (
            "GET",
            "/nowhere".into(),
            vec![("Authorization", &auth)],
            vec![],
        ),
        (
            "GET",
            "/tools?format=bogus".into(),
            vec![("Authorization", &auth)],
            vec![],
        ),
        tool("/tools/clarify", br#"{"question": ""}"#),
        tool("/tools/clarify", br#"{"question": "q", "options": "a"}"#),
        (
            "GET",
            "/clarifications/0000000000000000000000000000000000000000".into(),
            vec![],
            vec![],
        ),
        (
            "POST",
            "/clarifications/0000000000000000000000000000000000000000/answer".into(),
            vec![json_ct],
            br#"{"choice": 0}"#.to_vec(),
        ),
    ];
    for (i, (method, path, headers, b)) in requests.iter().enumerate() {
        let w = stack.request(method, path, headers, b);
        let l = local.request(method, path, headers, b);
        assert_eq!(
            (w.status, body(&w)),
            (l.status, body(&l)),
            "request {i}, {method} {path}: the Worker and toolgate serve differ; dispatcher log:\n{}",
            stack.dispatcher.as_ref().unwrap().logs()
        );
        assert!(
            w.header("content-type")
                .is_some_and(|c| c.starts_with("application/json")),
            "{method} {path}"
        );
    }
    // /mcp: serve answers with rmcp's server, the Worker without it
    // (`mcp::stateless`); the same requests get the same bytes. Both
    // lifecycles: initialize (2025-06-18) and per-request (2026-07-28).
    let accept = ("Accept", "application/json, text/event-stream");
    let rpc = |method: &str, params: Value| {
        json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": params})
            .to_string()
            .into_bytes()
    };
    let mcp = |extra: &[(&'static str, &'static str)], b: Vec<u8>| -> Req {
        let mut h = vec![json_ct, accept, ("Authorization", auth.as_str())];
        h.extend_from_slice(extra);
        ("POST", "/mcp".into(), h, b)
    };
    let v2025 = [("MCP-Protocol-Version", "2025-06-18")];
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let modern = |method: &'static str, name: Option<&'static str>| {
        let mut h = vec![
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", method),
        ];
        h.extend(name.map(|n| ("Mcp-Name", n)));
        h
    };
    let mcp_requests: Vec<Req> = vec![
        mcp(
            &[],
            rpc(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}),
            ),
        ),
        mcp(
            &v2025,
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec(),
        ),
        mcp(&v2025, rpc("tools/list", json!({}))),
        mcp(
            &v2025,
            rpc(
                "tools/call",
                json!({"name": "python.execute", "arguments": {"code": "print('hi')\nresult = [1, 'x']"}}),
            ),
        ),
        mcp(
            &v2025,
            rpc(
                "tools/call",
                json!({"name": "python__execute", "arguments": {"code": "open('f.txt', 'w').write('x')", "files": {"in": "y"}}}),
            ),
        ),
        mcp(
            &v2025,
            rpc(
                "tools/call",
                json!({"name": "python.execute", "arguments": {"code": ""}}),
            ),
        ),
        mcp(
            &v2025,
            rpc("tools/call", json!({"name": "nope", "arguments": {}})),
        ),
        mcp(&v2025, rpc("prompts/list", json!({}))),
        mcp(
            &modern("server/discover", None),
            rpc("server/discover", json!({"_meta": meta})),
        ),
        mcp(
            &modern("tools/call", Some("python.execute")),
            rpc(
                "tools/call",
                json!({"name": "python.execute", "arguments": {"code": "result = 6 * 7"}, "_meta": meta}),
            ),
        ),
        mcp(
            &modern("tools/call", None),
            rpc(
                "tools/call",
                json!({"name": "python.execute", "arguments": {"code": "1"}, "_meta": meta}),
            ),
        ),
        mcp(
            &[("MCP-Protocol-Version", "1999-01-01")],
            rpc("ping", json!({})),
        ),
        mcp(&[], b"{not json".to_vec()),
        (
            "POST",
            "/mcp".into(),
            vec![
                json_ct,
                ("Accept", "application/json"),
                ("Authorization", &auth),
            ],
            rpc("ping", json!({})),
        ),
        (
            "GET",
            "/mcp".into(),
            vec![accept, ("Authorization", &auth)],
            vec![],
        ),
        (
            "POST",
            "/mcp".into(),
            vec![json_ct, accept],
            rpc("ping", json!({})),
        ),
    ];
    // toolgate serve offers MCP's tasks extension, which a Worker (whose
    // request cannot outlive its caller's) does not: its capabilities
    // differ by that entry alone.
    let without_tasks =
        |text: String| text.replace(r#""extensions":{"io.modelcontextprotocol/tasks":{}},"#, "");
    for (i, (method, path, headers, b)) in mcp_requests.iter().enumerate() {
        let w = stack.request(method, path, headers, b);
        let l = local.request(method, path, headers, b);
        assert_eq!(
            (w.status, w.header("content-type"), body(&w)),
            (l.status, l.header("content-type"), without_tasks(body(&l))),
            "/mcp request {i}: the Worker and toolgate serve differ"
        );
    }
    // The Worker's /mcp is not all refusals: a call ran there.
    let ran = stack.request("POST", "/mcp", &mcp_requests[3].2, &mcp_requests[3].3);
    assert_eq!(
        ran.json()["result"]["structuredContent"]["result"],
        json!([1, "x"]),
        "{}",
        body(&ran)
    );

    // The tool specs the Worker lists are toolgate serve's, in every format.
    for format in ["native", "openai", "anthropic", "mcp"] {
        let path = format!("/tools?format={format}");
        let w = stack
            .request("GET", &path, &[("Authorization", &auth)], b"")
            .json();
        let l = local
            .request("GET", &path, &[("Authorization", &auth)], b"")
            .json();
        let w_tools = w["tools"].as_array().unwrap();
        assert_eq!(w_tools.len(), 2, "{w}");
        for t in w_tools {
            let name = t.get("name").or_else(|| t["function"].get("name")).unwrap();
            let same = l["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x.get("name").or_else(|| x["function"].get("name")) == Some(name));
            assert_eq!(Some(t), same, "{format}: {name}");
        }
    }
    // The same shape as serve's; the walls the sandbox Worker checks are
    // asked for after calls have run, so a runner that reused an instance
    // would read instance_per_call false.
    // With the caller's token: without it a server that has tokens says
    // only {"status": "ok"} (the next lines).
    let with_token = [("Authorization", auth.as_str())];
    let health = stack.request("GET", "/healthz", &with_token, b"").json();
    let native = local.request("GET", "/healthz", &with_token, b"").json();
    assert_eq!(
        stack.request("GET", "/healthz", &[], b"").json(),
        json!({"status": "ok"})
    );
    assert_eq!(health["status"], "ok");
    assert_eq!(health["tools"], native["tools"], "{health}");
    let (w, n) = (&health["sandbox"]["walls"], &native["sandbox"]["walls"]);
    let keys = |v: &Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.retain(|k| !k.ends_with("_error"));
        k.sort();
        k
    };
    assert_eq!(keys(w), keys(n), "one walls shape: {w} / {n}");
    for wall in ["capability_gap", "scrub", "instance_per_call"] {
        assert_eq!(w[wall], true, "{wall} in {health}");
    }
    for wall in [
        "process_per_call",
        "rlimits",
        "seccomp",
        "stop_at_deadline",
        "kill_at_deadline",
    ] {
        assert_eq!(w[wall], false, "{wall} in {health}");
        assert!(n[wall].is_boolean(), "{wall} in {native}");
    }
    assert_eq!(w["memory_mb"], 64);
    // Over the limit: the same 413.
    let big = vec![b' '; toolgate_e2e::python_body_limit() + 10];
    let headers = [json_ct, ("Authorization", auth.as_str())];
    let w = stack.request("POST", "/tools/python.execute", &headers, &big);
    let l = local.request("POST", "/tools/python.execute", &headers, &big);
    assert_eq!((w.status, body(&w)), (l.status, body(&l)));
    assert_eq!(w.status, 413);

    // No secret: every tool route refuses with 503 naming it; /healthz and
    // the answer routes still work. Anonymous use must be chosen.
    stack.vars = vec![];
    stack.restart_dispatcher();
    let print_1 = |stack: &Stack| {
        stack.request(
            "POST",
            "/tools/python.execute",
            &[json_ct],
            br#"{"code":"print(1)"}"#,
        )
    };
    let r = print_1(&stack);
    assert_eq!(r.status, 503, "{}", body(&r));
    assert_eq!(r.json()["error"]["code"], "not_configured");
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("wrangler secret put TOOLGATE_TOKEN")
    );
    assert_eq!(stack.request("GET", "/tools", &[], b"").status, 503);
    assert_eq!(stack.request("GET", "/healthz", &[], b"").status, 200);
    stack.vars = vec![("TOOLGATE_ALLOW_ANONYMOUS".into(), "true".into())];
    stack.restart_dispatcher();
    let r = print_1(&stack);
    assert_eq!((r.status, r.json()["stdout"].clone()), (200, json!("1\n")));

    // MCP clients we did not write connect to the Worker's /mcp: rmcp's
    // (which opens with server/discover) and the MCP Inspector's.
    let url = format!("http://{}/mcp", stack.addr());
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let client = toolgate_e2e::mcp::rmcp_client(url.clone(), None)
            .await
            .unwrap();
        let tools = client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        // Names model providers take as function names.
        assert_eq!(names, ["python__execute", "clarify"]);
        let mut call = rmcp::model::CallToolRequestParams::new("python.execute");
        call.arguments = json!({"code": "result = 6 * 7"}).as_object().cloned();
        let r = client.call_tool(call).await.unwrap();
        assert_eq!(r.structured_content.unwrap()["result"], 42);
        client.cancel().await.unwrap();
    });
    let called = toolgate_e2e::mcp::inspector(
        &url,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "python__execute",
            "--tool-arg",
            "code=print(2 ** 10)",
        ],
    );
    assert_eq!(called["structuredContent"]["stdout"], "1024\n", "{called}");

    // The client libraries agents use (tests/tests/clients.rs on serve):
    // names, annotations, files, misspelt keys; the Worker has no cloud
    // tools.
    let out = toolgate_e2e::launch::Launch::new(
        toolgate_e2e::peer::tools_dir().join("clients/bin/python"),
    )
    .arg(toolgate_e2e::support("client_libraries.py"))
    .args([url.as_str(), TOKEN, "-"])
    .within(Duration::from_secs(180))
    .output();
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !said.contains("FAIL"), "{said}");
}

/// The clarify lifecycle through D1: ask, read (JSON and the page), answer,
/// refuse a second answer, cancel, long-poll, racing answers, and the data
/// surviving a restart of the Worker.
#[test]
fn worker_clarify_and_sessions_on_d1() {
    let _g = lock();
    // Notifications: a signed webhook and Slack, posted with fetch after
    // the answer (waitUntil), to the receiver on loopback.
    let secret = "a-webhook-secret-of-32-characters";
    let (_rx, hooks) = toolgate_e2e::webhook::receiver(secret);
    let (hook, slack) = (format!("{hooks}/hook"), format!("{hooks}/slack"));
    let mut stack = Stack::start(&[
        ("TOOLGATE_TOKEN", TOKEN),
        ("TOOLGATE_CLARIFY_WEBHOOK_URL", &hook),
        ("TOOLGATE_CLARIFY_WEBHOOK_SECRET", secret),
        ("TOOLGATE_CLARIFY_SLACK_URL", &slack),
        ("TOOLGATE_CLARIFY_SLACK_EVENTS", "created"),
    ]);
    let ask = |q: &str| -> Value {
        let r = stack.post(
            "/tools/clarify",
            &json!({"question": q, "options": ["yes", "no"]}),
        );
        assert_eq!(r.status, 200, "{}", body(&r));
        r.json()
    };
    let c = ask("Deploy <b>now</b>?");
    assert_eq!(c["status"], "pending");
    let id = c["id"].as_str().unwrap().to_owned();
    let url = c["answer_url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!("http://{}/clarifications/{id}", stack.addr())),
        "{url}"
    );
    // The Worker runs no tasks (a request cannot outlive its caller's), and
    // says so where they would be read.
    let auth = format!("Bearer {TOKEN}");
    let r = stack.request(
        "GET",
        &format!("/tasks/{id}"),
        &[("Authorization", &auth)],
        b"",
    );
    assert_eq!(r.status, 503, "{}", body(&r));
    assert_eq!(
        r.json()["error"]["message"],
        "This runtime does not run calls as tasks: call the tool directly (toolgate serve runs them)"
    );
    let page = stack.request(
        "GET",
        &format!("/clarifications/{id}"),
        &[("Accept", "text/html")],
        b"",
    );
    assert_eq!(page.status, 200);
    let html = body(&page);
    assert!(
        html.contains("Deploy &lt;b&gt;now&lt;/b&gt;?") && !html.contains("<b>now"),
        "{html}"
    );

    // The person's link, opened in Chromium exactly as the tool returned it.
    let other = ask("Restart web-1?");
    let seen = answer_in_chromium(other["answer_url"].as_str().unwrap(), 0);
    assert_eq!(
        (&seen["dialogs"], &seen["errors"]),
        (&json!([]), &json!([])),
        "{seen}"
    );
    assert!(seen["status"].as_str().unwrap().contains("yes"), "{seen}");
    let other_id = other["id"].as_str().unwrap();
    let got = stack.request("GET", &format!("/clarifications/{other_id}"), &[], b"");
    assert_eq!(
        (got.json()["status"].clone(), got.json()["answer"].clone()),
        (json!("answered"), json!("yes"))
    );

    // A long-poll sees the answer when it lands.
    let addr = stack.addr();
    let path = format!("/clarifications/{id}?wait=20");
    let poll = std::thread::spawn(move || {
        let t = Instant::now();
        let r = raw_request(&addr, "GET", &path, &[], b"");
        (r, t.elapsed())
    });
    std::thread::sleep(Duration::from_millis(1500));
    let r = stack.request(
        "POST",
        &format!("/clarifications/{id}/answer"),
        &[("Content-Type", "application/json")],
        br#"{"choice": 1}"#,
    );
    assert_eq!(r.status, 200, "{}", body(&r));
    assert_eq!(
        (r.json()["status"].clone(), r.json()["answer"].clone()),
        (json!("answered"), json!("no"))
    );
    let (polled, waited) = poll.join().unwrap();
    assert_eq!(polled.json()["status"], "answered");
    assert!(
        waited < Duration::from_secs(10),
        "long-poll took {waited:?}"
    );

    // Both channels heard of it (Slack only of `created`), signed as the
    // receiver checks, and the outcomes are kept in D1.
    let got = toolgate_e2e::webhook::wait_for(&hooks, "the Worker's notifications", |v| {
        toolgate_e2e::webhook::events(v, &id).len() == 2
    });
    assert_eq!(
        toolgate_e2e::webhook::events(&got, &id),
        ["clarification.created", "clarification.answered"]
    );
    assert!(got["refused"].as_array().unwrap().is_empty(), "{got:#}");
    assert!(
        got["slack"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["body"]["text"] == "An agent asks: Deploy &lt;b&gt;now&lt;/b&gt;?"),
        "{got:#}"
    );
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let st = stack
            .request("GET", &format!("/clarifications/{id}"), &[], b"")
            .json();
        if st["notified"]
            == json!({"webhook": {"created": "ok", "answered": "ok"}, "slack": {"created": "ok"}})
        {
            break;
        }
        assert!(Instant::now() < until, "{st:#}");
        std::thread::sleep(Duration::from_millis(200));
    }

    let again = stack.request(
        "POST",
        &format!("/clarifications/{id}/answer"),
        &[("Content-Type", "application/json")],
        br#"{"answer": "late"}"#,
    );
    assert_eq!(again.status, 409);
    assert_eq!(again.json()["clarification"]["answer"], "no");

    // Racing answers: exactly one wins.
    let race = ask("Which one?")["id"].as_str().unwrap().to_owned();
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let addr = stack.addr();
            let race = race.clone();
            std::thread::spawn(move || {
                let b = json!({"answer": format!("answer {i}")}).to_string();
                raw_request(
                    &addr,
                    "POST",
                    &format!("/clarifications/{race}/answer"),
                    &[("Content-Type", "application/json")],
                    b.as_bytes(),
                )
                .status
            })
        })
        .collect();
    let statuses: Vec<u16> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 409),
        "{statuses:?}"
    );

    let cancel = ask("Cancel me?")["id"].as_str().unwrap().to_owned();
    let r = stack.request(
        "POST",
        &format!("/clarifications/{cancel}/cancel"),
        &[],
        b"",
    );
    assert_eq!(
        (r.status, r.json()["status"].clone()),
        (200, json!("cancelled"))
    );
    let r = stack.request(
        "GET",
        "/clarifications/ffffffffffffffffffffffffffffffffffffffff",
        &[],
        b"",
    );
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (404, json!("not_found"))
    );

    // python.execute's sessions live on D1 too: state and files carried
    // through the sandbox Worker, another caller's or an unknown id refused.
    let r = stack.post(
        "/tools/python.execute",
        &json!({"session": "new", "files": {"in.csv": "a,b\n1,2\n"},
                "code": "import csv, dataclasses\n@dataclasses.dataclass\nclass P:\n    a: str\nrows = [P(r['a']) for r in csv.DictReader(open('in.csv'))]\ngen = (r for r in rows)"}),
    );
    assert_eq!(r.status, 200, "{}", body(&r));
    let first = r.json();
    assert_eq!(
        first["stderr"],
        "[session: \"gen\" was not kept: cannot pickle 'generator' object]\n"
    );
    let session = first["session"].as_str().unwrap().to_owned();
    let r = stack.post(
        "/tools/python.execute",
        &json!({"session": session, "code": "rows.append(P('3'))\nresult = [repr(rows), open('in.csv').read()]"}),
    );
    assert_eq!(
        r.json()["result"],
        json!(["[P(a='1'), P(a='3')]", "a,b\n1,2\n"]),
        "{}",
        body(&r)
    );
    let r = stack.post(
        "/tools/python.execute",
        &json!({"session": "0".repeat(40), "code": "print(1)"}),
    );
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (404, json!("not_found"))
    );

    // A state over 1 MB: its hex is over D1's 2,000,000-byte value limit,
    // so it is read back in parts.
    let r = stack.post(
        "/tools/python.execute",
        &json!({"session": "new", "code": "big = bytes(range(256)) * 5000"}),
    );
    let big = r.json()["session"].as_str().unwrap_or_default().to_owned();
    assert_eq!(big.len(), 40, "{}", body(&r));
    for _ in 0..2 {
        let r = stack.post(
            "/tools/python.execute",
            &json!({"session": big, "code": "print(len(big), big[-1])"}),
        );
        assert_eq!(r.json()["stdout"], "1280000 255\n", "{}", body(&r));
    }

    // In the agent's own MCP client (MCP 2026-07-28, issue #57): the
    // question as a form, its state sealed with a key the Worker keeps in
    // D1, so that another Worker process takes the retry.
    let args = json!({"question": "Purge the CDN cache?", "options": ["purge", "wait"]});
    let (asked, _) = mcp_clarify(&stack, &args, &json!({}));
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let state = asked["requestState"].as_str().unwrap().to_owned();
    toolgate_e2e::issued::record("request state", &state);

    // D1 keeps them across a restart.
    stack.restart_dispatcher();
    let r = stack.request("GET", &format!("/clarifications/{id}"), &[], b"");
    assert_eq!((r.status, r.json()["answer"].clone()), (200, json!("no")));
    let wait = json!({"action": "accept", "content": {"choice": "wait"}});
    let mut changed = state.clone();
    changed.insert(5, 'x');
    let (tampered, _) = mcp_clarify(
        &stack,
        &args,
        &json!({"requestState": changed, "inputResponses": {"answer": wait}}),
    );
    let refusal: Value =
        serde_json::from_str(tampered["content"][0]["text"].as_str().unwrap_or("null")).unwrap();
    assert_eq!(
        refusal["error"],
        json!({"code": "invalid_input", "message": "\"requestState\" is not one this server issued, or it was changed: call again without it"}),
        "{tampered}"
    );
    let (answered, took) = mcp_clarify(
        &stack,
        &args,
        &json!({"requestState": state, "inputResponses": {"answer": wait}}),
    );
    let out = &answered["structuredContent"];
    assert_eq!(
        (&out["status"], &out["answer"], &out["choice"]),
        (&json!("answered"), &json!("wait"), &json!(1)),
        "{answered}"
    );
    println!("elicitation retry on a restarted Worker: {took:?}");
    let r = stack.request("GET", &format!("/clarifications/{cancel}"), &[], b"");
    assert_eq!(r.json()["status"], "cancelled");
    let r = stack.post(
        "/tools/python.execute",
        &json!({"session": session, "code": "print(len(rows))"}),
    );
    assert_eq!(r.json()["stdout"], "2\n", "{}", body(&r));

    // Expiry on D1: a long-poll ends at it, and a late answer is refused.
    stack
        .vars
        .push(("TOOLGATE_CLARIFY_EXPIRY_SECS".into(), "2".into()));
    stack.restart_dispatcher();
    let r = stack.post("/tools/clarify", &json!({"question": "Soon?"}));
    let soon = r.json()["id"].as_str().unwrap().to_owned();
    let started = Instant::now();
    let r = stack.request("GET", &format!("/clarifications/{soon}?wait=20"), &[], b"");
    let took = started.elapsed();
    assert_eq!(r.json()["status"], "expired", "{}", body(&r));
    assert!(took < stop_bound(2), "the long-poll ended after {took:?}");
    let r = stack.request(
        "POST",
        &format!("/clarifications/{soon}/answer"),
        &[("Content-Type", "application/json")],
        br#"{"answer": "too late"}"#,
    );
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (410, json!("expired")),
        "{}",
        body(&r)
    );
}

/// A 2026-07-28 `tools/call` of clarify from a client that declares form
/// elicitation, with a retry's `extra` params: the result, and how long it
/// took.
fn mcp_clarify(stack: &Stack, args: &Value, extra: &Value) -> (Value, Duration) {
    let form = json!({"elicitation": {"form": {}}});
    let body = toolgate_e2e::mcp::call_2026("clarify", args, &form, extra);
    let mut headers = toolgate_e2e::mcp::call_headers("2026-07-28", "clarify");
    headers.push(("Authorization", format!("Bearer {TOKEN}")));
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let started = Instant::now();
    let r = stack.request("POST", "/mcp", &headers, body.to_string().as_bytes());
    let took = started.elapsed();
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    (r.json()["result"].clone(), took)
}

/// Method, path, headers, body.
type Req<'a> = (&'a str, String, Vec<(&'a str, &'a str)>, Vec<u8>);

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// 500 sequential calls leave the sandbox's memory flat (a fresh wasm
/// instance per call, dropped after it), and print the latencies
/// docs/cloudflare.md reports.
#[test]
fn worker_memory_stays_flat_over_500_calls() {
    let _g = lock_alone();
    let stack = Stack::start(&[("TOOLGATE_TOKEN", TOKEN)]);
    let time = |code: &str| {
        let t = Instant::now();
        let out = stack.exec(code);
        assert_eq!(out["exit_code"], 0, "{out}");
        t.elapsed().as_secs_f64() * 1000.0
    };
    let first = time("print(1)");
    for _ in 0..50 {
        time("print(1)");
    }
    let rss = || stack.sandbox.as_ref().unwrap().workerd_rss_kib();
    let before = rss();
    let mut print_ms = Vec::new();
    let mut json_ms = Vec::new();
    for i in 0..500 {
        if i % 2 == 0 {
            print_ms.push(time("print(1)"));
        } else {
            json_ms.push(time("import json\nprint(json.dumps({'a': [1, 2]}))"));
        }
    }
    let after = rss();
    eprintln!(
        "worker: first call {first:.1} ms; print(1) p50 {:.1} ms; import json p50 {:.1} ms; sandbox workerd RSS {before} KiB -> {after} KiB over 500 calls",
        median(print_ms),
        median(json_ms)
    );
    assert!(before > 0, "no workerd process found for the sandbox");
    // One instance is ~25 MB of memory; GC timing moves RSS by a few. A
    // per-call leak of even 1 MB would add 500 MB.
    assert!(
        after < before + 96 * 1024,
        "sandbox memory grew from {before} KiB to {after} KiB over 500 calls"
    );
}

/// The runner gives each new instance the last call's memory, wiped
/// (runner.mjs). In V8 (Node) with the built module, after a call that
/// wrote a lot, one that ended in a trap, and one that grew the memory, the
/// next instance's memory is byte for byte a fresh instance's; the grown one
/// is not reused. `worker_answers_hostile_scripts_cleanly_and_fresh` and the
/// walls (`instance_per_call`) check the same through workerd.
#[test]
fn worker_reuses_a_memory_only_wiped() {
    let out = std::process::Command::new("node")
        .arg(repo_root().join("tests/support/worker_memory_reuse.mjs"))
        .arg(repo_root())
        .output()
        .expect("node");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    for case in ["writes", "traps", "grows", "after"] {
        assert_eq!(r[case]["next"], "same", "{case}: {r}");
    }
    assert_eq!(r["writes"]["exit_code"], 0, "{r}");
    assert_eq!(r["writes"]["reused"], true, "{r}");
    assert!(
        r["traps"]["stderr"]
            .as_str()
            .unwrap()
            .contains("exceeded the sandbox memory limit"),
        "{r}"
    );
    assert_eq!(r["traps"]["reused"], true, "{r}");
    assert_eq!(
        (&r["grows"]["grown"], &r["grows"]["reused"]),
        (&json!(true), &json!(false)),
        "{r}"
    );
    assert_eq!(r["after"]["exit_code"], 0, "{r}");
}

/// The size limit, as `wrangler deploy --dry-run` reports it for each Worker.
#[test]
fn worker_bundles_fit_the_size_limit() {
    let _g = lock();
    // Cloudflare's limit is 10 MiB; CI fails at 9 so that growth shows up
    // here with room left, not as a failed deploy.
    const LIMIT_KIB: f64 = 9.0 * 1024.0;
    let tools = std::env::var_os("TOOLGATE_TEST_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/toolgate/tools")
        });
    for config in ["wrangler.toml", "wrangler.sandbox.toml"] {
        let out_dir =
            std::env::temp_dir().join(format!("toolgate-dry-run-{}-{config}", std::process::id()));
        let mut cmd = std::process::Command::new(tools.join("node_modules/.bin/wrangler"));
        cmd.current_dir(repo_root())
            .args(["deploy", "--dry-run", "--outdir"])
            .arg(&out_dir)
            .env("TOOLGATE_WORKER_PREBUILT", "1")
            .env("WRANGLER_SEND_METRICS", "false")
            .args(["--config", config]);
        let out = cmd.output().expect("wrangler deploy --dry-run");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{text}");
        // A deploy a user runs says nothing to worry about.
        assert!(
            !text.contains("WARNING"),
            "{config}: wrangler warns:\n{text}"
        );
        let gzip = text
            .lines()
            .find_map(|l| l.split("gzip:").nth(1))
            .and_then(|v| v.trim().trim_end_matches("KiB").trim().parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no gzip size in:\n{text}"));
        eprintln!("worker bundle {config}: {gzip} KiB gzip");
        assert!(
            gzip <= LIMIT_KIB,
            "{config}: {gzip} KiB gzip is over 9 MiB (Cloudflare's limit is 10 MiB)"
        );
        let _ = std::fs::remove_dir_all(&out_dir);
    }
}

/// An approver's token (issue #50): a secret of its own, at least 16
/// characters, never a caller's.
const APPROVER: &str = "w0rker-appr0ver-t0ken";

/// The refusals of issue #50, as `shared::http::auth` and
/// `shared::tools::clarify` word them (tests/identity.rs checks serve's).
const TASK_TOKEN_DIRECT_ONLY: &str = "\"task_token\" is accepted only when a Step Functions workflow invokes the clarify function directly";
const CALLER_ON_APPROVALS: &str =
    "This route is for approvers: a caller's token cannot decide approvals";
const SIGN_IN_AS_APPROVER: &str =
    "Sign in as an approver: send Authorization: Bearer <approver token>";
const APPROVER_ON_TOOLS: &str =
    "This token is an approver's: approvers decide approvals at /inbox, they do not call tools";

impl Stack {
    /// `method path` with `token` as the bearer (none: no header).
    fn with_token(&self, method: &str, path: &str, token: Option<&str>, b: &[u8]) -> Response {
        let auth = token.map(|t| format!("Bearer {t}"));
        let mut headers = vec![("Content-Type", "application/json")];
        headers.extend(auth.as_deref().map(|a| ("Authorization", a)));
        self.request(method, path, &headers, b)
    }

    /// The questions an approver lists (`GET /clarifications?status=…`).
    fn questions(&self, status: &str) -> Vec<Value> {
        let path = format!("/clarifications?status={status}");
        let r = self.with_token("GET", &path, Some(APPROVER), b"");
        assert_eq!(r.status, 200, "{}", body(&r));
        r.json()["clarifications"]
            .as_array()
            .unwrap_or_else(|| panic!("no list: {}", body(&r)))
            .clone()
    }

    /// The dispatcher's own log lines: wrangler's access log (its
    /// `[wrangler:info] GET /path` lines, whose paths hold ids by design)
    /// is the platform's, not the Worker's (tests/support/scan_logs.py).
    fn worker_log(&self) -> String {
        self.dispatcher
            .as_ref()
            .unwrap()
            .logs()
            .lines()
            .filter(|l| !l.contains("[wrangler:"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `r` is the contract's error with exactly this status, code and message.
fn assert_refused(r: &Response, status: u16, code: &str, message: &str) {
    assert_eq!(
        toolgate_e2e::error_of(r),
        (status, code.to_owned(), message.to_owned()),
        "{}",
        body(r)
    );
}

/// The ids of a list of views.
fn ids(list: &[Value]) -> Vec<&str> {
    list.iter().filter_map(|c| c["id"].as_str()).collect()
}

/// Issue #50: a Step Functions task token is taken only from a direct
/// Lambda invocation, never from an agent. The Worker has none, so over
/// HTTP and /mcp clarify refuses it, before anything is asked.
#[test]
fn worker_refuses_task_token_over_http_and_mcp() {
    let _g = lock();
    let stack = Stack::start(&[
        ("TOOLGATE_TOKEN", TOKEN),
        ("TOOLGATE_APPROVER_TOKEN", APPROVER),
    ]);
    let ask = json!({"question": "Restart web-1?", "options": ["yes", "no"],
                     "task_token": "AAAAKgAAAAIAAAAA-a-stolen-workflow-token"});
    let r = stack.post("/tools/clarify", &ask);
    assert_refused(&r, 400, "invalid_input", TASK_TOKEN_DIRECT_ONLY);

    // /mcp: a tool error with the same body.
    let auth = format!("Bearer {TOKEN}");
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "clarify", "arguments": ask}});
    let r = stack.request(
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2025-06-18"),
            ("Authorization", &auth),
        ],
        call.to_string().as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", body(&r));
    let result = &r.json()["result"];
    assert_eq!(result["isError"], true, "{}", body(&r));
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let err: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {}", body(&r)));
    assert_eq!(
        (&err["error"]["code"], &err["error"]["message"]),
        (&json!("invalid_input"), &json!(TASK_TOKEN_DIRECT_ONLY)),
        "{err}"
    );

    // Nothing was asked; without the token the same question is.
    assert_eq!(stack.questions("all"), Vec::<Value>::new());
    let mut plain = ask.clone();
    plain.as_object_mut().unwrap().remove("task_token");
    let r = stack.post("/tools/clarify", &plain);
    assert_eq!(r.status, 200, "{}", body(&r));
    assert!(r.json().get("task_token").is_none(), "{}", body(&r));
    assert_eq!(
        ids(&stack.questions("all")),
        [r.json()["id"].as_str().unwrap()]
    );
}

/// Issue #50 on the Worker, which gates no tool: an approver's token opens
/// the approvers' routes (the questions waiting, and no approvals), a
/// caller's is refused there, an approver's on the tools; the inbox page
/// is open. With no caller secret, or anonymous use chosen, the approvers'
/// routes still need an approver. The Worker logs ids as refs only.
#[test]
fn worker_serves_approvers_their_routes_and_no_tools() {
    let _g = lock();
    let mut stack = Stack::start(&[
        ("TOOLGATE_TOKEN", TOKEN),
        ("TOOLGATE_APPROVER_TOKEN", APPROVER),
    ]);
    let ask = |q: &str| -> String {
        let r = stack.post(
            "/tools/clarify",
            &json!({"question": q, "options": ["yes", "no"]}),
        );
        assert_eq!(r.status, 200, "{}", body(&r));
        r.json()["id"].as_str().unwrap().to_owned()
    };
    let waits = ask("Deploy now?");
    let answered = ask("Restart web-1?");
    let r = stack.request(
        "POST",
        &format!("/clarifications/{answered}/answer"),
        &[("Content-Type", "application/json")],
        br#"{"choice": 1}"#,
    );
    assert_eq!(r.status, 200, "{}", body(&r));

    // The approver lists what waits (the default), or all.
    let pending = stack.questions("pending");
    assert_eq!(ids(&pending), [waits.as_str()], "{pending:?}");
    assert_eq!(
        (&pending[0]["question"], &pending[0]["status"]),
        (&json!("Deploy now?"), &json!("pending"))
    );
    let r = stack.with_token("GET", "/clarifications", Some(APPROVER), b"");
    assert_eq!(
        ids(r.json()["clarifications"].as_array().unwrap()),
        [waits.as_str()]
    );
    // (In either order: two asked within a millisecond tie on created_at.)
    let all = stack.questions("all");
    let mut both = ids(&all);
    both.sort_unstable();
    let mut want = [answered.as_str(), waits.as_str()];
    want.sort_unstable();
    assert_eq!(both, want, "{all:?}");
    let got = all.iter().find(|c| c["id"] == answered.as_str()).unwrap();
    assert_eq!(
        (&got["status"], &got["answer"]),
        (&json!("answered"), &json!("no"))
    );
    let r = stack.with_token("GET", "/clarifications?status=bogus", Some(APPROVER), b"");
    assert_eq!(
        toolgate_e2e::error_of(&r).1,
        "invalid_input",
        "{}",
        body(&r)
    );

    // No approvals here: none listed, and a question is not one to decide.
    for path in ["/approvals", "/approvals?status=all"] {
        let r = stack.with_token("GET", path, Some(APPROVER), b"");
        assert_eq!(
            (r.status, r.json()),
            (200, json!({"approvals": []})),
            "{path}"
        );
    }
    let r = stack.with_token("GET", &format!("/approvals/{waits}"), Some(APPROVER), b"");
    assert_refused(&r, 404, "not_found", "No such approval");
    let r = stack.with_token(
        "POST",
        &format!("/approvals/{waits}/decision"),
        Some(APPROVER),
        br#"{"decision": "approve"}"#,
    );
    assert_refused(&r, 404, "not_found", "No such approval");
    assert_eq!(ids(&stack.questions("pending")), [waits.as_str()]);

    // A caller's token is refused on every approvers' route, no token (or
    // one nobody knows) asked to sign in; an approver's on every tool route.
    let approver_routes = [
        ("GET", "/clarifications".to_owned()),
        ("GET", "/approvals".to_owned()),
        ("GET", format!("/approvals/{waits}")),
        ("POST", format!("/approvals/{waits}/decision")),
    ];
    let decision = br#"{"decision": "approve"}"#;
    for (method, path) in &approver_routes {
        let r = stack.with_token(method, path, Some(TOKEN), decision);
        assert_refused(&r, 403, "forbidden", CALLER_ON_APPROVALS);
        for token in [None, Some("an-unknown-token-of-some-length")] {
            let r = stack.with_token(method, path, token, decision);
            assert_refused(&r, 401, "unauthorized", SIGN_IN_AS_APPROVER);
        }
    }
    let code = br#"{"code": "print(1)"}"#;
    for (method, path) in [
        ("POST", "/tools/python.execute"),
        ("POST", "/tools/clarify"),
        ("GET", "/tools"),
        ("GET", "/openapi.json"),
        ("POST", "/mcp"),
    ] {
        let r = stack.with_token(method, path, Some(APPROVER), code);
        assert_refused(&r, 403, "forbidden", APPROVER_ON_TOOLS);
    }
    // The approver's token still answered nothing: the question waits.
    assert_eq!(ids(&stack.questions("pending")), [waits.as_str()]);

    // The inbox page is open: it signs in from the browser.
    for path in ["/inbox".to_owned(), format!("/inbox/{waits}")] {
        let r = stack.request("GET", &path, &[], b"");
        assert_eq!(r.status, 200, "{path}: {}", body(&r));
        assert!(
            r.header("content-type")
                .is_some_and(|c| c.starts_with("text/html")),
            "{path}: {:?}",
            r.headers
        );
        assert!(r.header("content-security-policy").is_some(), "{path}");
        assert!(body(&r).to_ascii_lowercase().contains("<html"), "{path}");
    }

    // Ids are logged as refs: each question's is in the Worker's log (its
    // "clarification asked" line), the id itself in none.
    let log = stack.worker_log();
    for id in [&waits, &answered] {
        let r = toolgate_shared::logging::id_ref(id);
        assert!(log.contains(&r), "{r} is not in the Worker's log:\n{log}");
        assert!(
            !log.contains(id.as_str()),
            "{id} is in the Worker's log:\n{log}"
        );
    }

    // No caller secret: the tools answer 503, the approvers' routes and
    // the inbox do not (an approver still signs in).
    stack.vars = vec![("TOOLGATE_APPROVER_TOKEN".into(), APPROVER.into())];
    stack.restart_dispatcher();
    let r = stack.with_token("POST", "/tools/python.execute", None, code);
    assert_eq!(
        (r.status, toolgate_e2e::error_of(&r).1),
        (503, "not_configured".to_owned()),
        "{}",
        body(&r)
    );
    assert_eq!(ids(&stack.questions("pending")), [waits.as_str()]);
    let r = stack.with_token("GET", "/clarifications", None, b"");
    assert_refused(&r, 401, "unauthorized", SIGN_IN_AS_APPROVER);
    assert_eq!(stack.request("GET", "/inbox", &[], b"").status, 200);

    // Anonymous use chosen: the tools need no token, yet an approver's is
    // still refused there, and the approvers' routes still need one.
    stack
        .vars
        .push(("TOOLGATE_ALLOW_ANONYMOUS".into(), "true".into()));
    stack.restart_dispatcher();
    let r = stack.with_token("POST", "/tools/python.execute", None, code);
    assert_eq!(
        (r.status, r.json()["stdout"].clone()),
        (200, json!("1\n")),
        "{}",
        body(&r)
    );
    let r = stack.with_token("POST", "/tools/python.execute", Some(APPROVER), code);
    assert_refused(&r, 403, "forbidden", APPROVER_ON_TOOLS);
    let r = stack.with_token("GET", "/clarifications", None, b"");
    assert_refused(&r, 401, "unauthorized", SIGN_IN_AS_APPROVER);
    assert_eq!(ids(&stack.questions("pending")), [waits.as_str()]);
}

/// Issue #50: an answer whose words and choice say different things is
/// refused (the page would show one and the record keep the other); the
/// choice alone, or the option's own words with it, answer.
#[test]
fn worker_refuses_an_answer_that_disagrees_with_its_choice() {
    let _g = lock();
    let stack = Stack::start(&[("TOOLGATE_TOKEN", TOKEN)]);
    let r = stack.post(
        "/tools/clarify",
        &json!({"question": "Deploy now?", "options": ["yes", "no"]}),
    );
    assert_eq!(r.status, 200, "{}", body(&r));
    let id = r.json()["id"].as_str().unwrap().to_owned();
    let answer = |b: &[u8]| {
        stack.request(
            "POST",
            &format!("/clarifications/{id}/answer"),
            &[("Content-Type", "application/json")],
            b,
        )
    };
    let r = answer(br#"{"answer": "no", "choice": 0}"#);
    assert_refused(
        &r,
        400,
        "invalid_input",
        "\"answer\" and \"choice\" disagree: option 0 is \"yes\"; send the choice alone, or your own words alone",
    );
    let r = answer(br#"{"answer": "Yes", "choice": 0}"#);
    assert_eq!(toolgate_e2e::error_of(&r).0, 400, "{}", body(&r));
    let r = stack.request("GET", &format!("/clarifications/{id}"), &[], b"");
    assert_eq!(r.json()["status"], "pending", "{}", body(&r));
    let r = answer(br#"{"answer": "yes", "choice": 0}"#);
    assert_eq!(r.status, 200, "{}", body(&r));
    assert_eq!(
        (
            &r.json()["status"],
            &r.json()["answer"],
            &r.json()["choice"]
        ),
        (&json!("answered"), &json!("yes"), &json!(0)),
        "{}",
        body(&r)
    );
}

/// The issue's chain over every module on the Worker (#51,
/// `toolgate_e2e::escapes::RECREATED`, as tests/escapes.rs runs it on
/// serve): every `sys.modules` entry deleted, cleared, replaced or set to
/// None, then every route that creates a module; only the warm, scrubbed
/// instances come back, and nothing outside the set.
#[test]
fn worker_recreated_modules_are_the_warm_ones_by_every_route() {
    let _g = lock();
    let stack = Stack::start(&[
        ("TOOLGATE_TOKEN", TOKEN),
        ("TOOLGATE_PYTHON_TIMEOUT", "300"),
    ]);
    let out = stack.exec(toolgate_e2e::escapes::RECREATED);
    assert_eq!(
        (&out["exit_code"], &out["result"]),
        (&json!(0), &json!([])),
        "{out}"
    );
    assert_eq!(stack.exec("result = 6 * 7")["result"], 42);
}

/// Issue #51's data rules on the Worker, which shares python.execute's
/// session and file code with serve (tests/sessions.rs, tests/files.rs,
/// tests/quotas.rs): names that are traps on common clients and session
/// files that clash are `invalid_input`; an id no session could have is
/// `not_found` without repeating it; live sessions are bounded per caller
/// on D1; `/mcp` holds each tool to its own body limit.
#[test]
fn worker_refuses_trap_names_clashing_files_and_sessions_past_their_quota() {
    let _g = lock();
    let stack = Stack::start(&[
        ("TOOLGATE_TOKEN", TOKEN),
        ("TOOLGATE_PYTHON_SESSION_MAX_PER_CALLER", "2"),
    ]);
    let refused = |r: &Response, status: u16, code: &str, says: &str| {
        let v = r.json();
        assert_eq!(
            (r.status, v["error"]["code"].as_str()),
            (status, Some(code)),
            "{v}"
        );
        let msg = v["error"]["message"].as_str().unwrap_or_default();
        assert!(msg.contains(says), "{says}: {msg}");
    };
    for (files, says) in [
        (json!({"a\\b": "x"}), "contains a backslash"),
        (json!({"c:x": "x"}), "contains ':'"),
        (json!({"z\u{202e}gnp.exe": "x"}), "(U+202E)"),
        (json!({"d/aux.txt": "x"}), "Windows reserves"),
        (json!({"README": "1", "readme": "2"}), "differ only in case"),
    ] {
        let r = stack.post(
            "/tools/python.execute",
            &json!({"code": "print(1)", "files": files}),
        );
        refused(&r, 400, "invalid_input", says);
    }

    let r = stack.post(
        "/tools/python.execute",
        &json!({"session": "new", "code": "1", "files": {"a": "x"}}),
    );
    assert_eq!(r.status, 200, "{}", body(&r));
    let id = r.json()["session"].as_str().unwrap().to_owned();
    let r = stack.post(
        "/tools/python.execute",
        &json!({"session": id, "code": "1", "files": {"a/b": "y"}}),
    );
    refused(
        &r,
        400,
        "invalid_input",
        "file \"a/b\" is under the session's file \"a\"",
    );
    let r = stack.post(
        "/tools/python.execute",
        &json!({"session": id, "code": "print(open('a').read())"}),
    );
    assert_eq!(r.json()["stdout"], "x\n", "{}", body(&r));

    let r = stack.post(
        "/tools/python.execute",
        &json!({"session": format!("no\nsuch{}", "s".repeat(100_000)), "code": "1"}),
    );
    refused(&r, 404, "not_found", "No session \"no\\nsuch");
    assert!(r.body.len() < 1024, "{} bytes", r.body.len());

    // The caller has one session; a second fits, a third does not.
    let r = stack.post(
        "/tools/python.execute",
        &json!({"session": "new", "code": "1"}),
    );
    assert_eq!(r.status, 200, "{}", body(&r));
    let r = stack.post(
        "/tools/python.execute",
        &json!({"session": "new", "code": "1"}),
    );
    refused(
        &r,
        429,
        "quota_exceeded",
        "TOOLGATE_PYTHON_SESSION_MAX_PER_CALLER",
    );

    // clarify takes 1 MiB; /mcp reads up to python.execute's limit.
    let call = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "clarify", "arguments": {"question": "q", "pad": "x".repeat(2 << 20)}},
    });
    let auth = format!("Bearer {TOKEN}");
    let r = stack.request(
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2025-06-18"),
            ("Authorization", &auth),
        ],
        call.to_string().as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", body(&r));
    let v = r.json();
    assert_eq!(v["result"]["isError"], true, "{v}");
    let text = v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("\"too_large\""), "{text}");
}

/// Code mode on the Worker (#58): a script calls clarify (the Worker's
/// other tool) with `from toolgate import tools`. The sandbox Worker runs
/// the script; at each tool request it has no answer for, the script stops
/// there and the dispatcher answers it through the one invocation path and
/// runs the script again with the answers so far (and the same seed), so
/// no tool call is made twice. A question without an answer stops the
/// script with nothing running; the resume, from its journal in D1, goes
/// on with the person's answer.
#[test]
fn worker_scripts_call_clarify_and_wait_for_the_answer() {
    let _g = lock();
    let stack = Stack::start(&[("TOOLGATE_TOKEN", TOKEN)]);
    let code = r#"
import random
from toolgate import tools, ToolError
print("seed", random.random())
names = [n for n in dir(tools) if not n.startswith("_")]
try:
    tools.python__execute(code="1")
    own = "ran"
except ToolError as e:
    own = e.code
q = tools.clarify(question="Restart nginx on web-1?", options=["yes", "no"])
print("answered", q["status"], q.get("choice"))
result = {"names": names, "own": own, "answer": q["answer"], "r": random.random()}
"#;
    let r = stack.post("/tools/python.execute", &json!({ "code": code }));
    assert_eq!(r.status, 200, "{}", body(&r));
    let first = r.json();
    assert_eq!(first["waiting"]["for"], "answer", "{first}");
    assert_eq!(first["waiting"]["tool"], "clarify", "{first}");
    assert_eq!(first["exit_code"], -1, "{first}");
    let stdout = first["stdout"].as_str().unwrap().to_owned();
    assert!(
        stdout.starts_with("seed ") && stdout.lines().count() == 1,
        "{first}"
    );
    let q = first["waiting"]["clarification"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let resume = first["resume"].as_str().unwrap().to_owned();
    toolgate_e2e::issued::record("resume id", &resume);
    // Unanswered: it waits again on the same question.
    let (_, again) = {
        let r = stack.post(
            "/tools/python.execute",
            &json!({ "code": code, "resume": resume }),
        );
        (r.status, r.json())
    };
    assert_eq!(
        again["waiting"]["clarification"]["id"],
        q.as_str(),
        "{again}"
    );
    let r = stack.post(
        &format!("/clarifications/{q}/answer"),
        &json!({"choice": 0}),
    );
    assert_eq!(r.status, 200, "{}", body(&r));
    let r = stack.post(
        "/tools/python.execute",
        &json!({ "code": code, "resume": resume }),
    );
    assert_eq!(r.status, 200, "{}", body(&r));
    let done = r.json();
    assert_eq!(done["exit_code"], 0, "{done}");
    assert_eq!(
        done["stdout"],
        format!("{stdout}answered answered 0\n"),
        "the same seed on every run: {done}"
    );
    assert_eq!(done["result"]["answer"], "yes", "{done}");
    assert_eq!(done["result"]["own"], "forbidden", "{done}");
    let names = done["result"]["names"].as_array().unwrap();
    assert!(names.contains(&json!("clarify")), "{done}");
    assert!(
        !names
            .iter()
            .any(|n| n.as_str().unwrap().starts_with("python")),
        "{done}"
    );
    // Spent: the id it went on from reads as expired.
    let r = stack.post(
        "/tools/python.execute",
        &json!({ "code": code, "resume": resume }),
    );
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (410, json!("expired")),
        "{}",
        body(&r)
    );

    // A run that asks something else than the one before (a random.Random()
    // instance is seeded afresh on every run) ends the call, saying why.
    let out = stack.exec(
        "import random\nfrom toolgate import tools, ToolError\nprint('once')\ntry:\n    tools.python__execute(code=str(random.Random().random()))\nexcept ToolError:\n    pass\nresult = 'ran'",
    );
    assert_eq!(out["exit_code"], 1, "{out}");
    assert!(
        out["stderr"]
            .as_str()
            .unwrap()
            .contains("took another path"),
        "{out}"
    );
    // A flood of requests is bounded by the runs one call may make.
    let out = stack.exec(
        "from toolgate import tools, ToolError\nn = 0\nfor i in range(100):\n    try:\n        tools.python__execute(code='1')\n    except ToolError:\n        n += 1\n    print(n)",
    );
    assert_eq!(out["exit_code"], 1, "{out}");
    assert!(
        out["stderr"]
            .as_str()
            .unwrap()
            .contains("at most 29 tool requests"),
        "{out}"
    );
    assert!(out["stdout"].as_str().unwrap().ends_with("\n29\n"), "{out}");
}

//! Harness for end-to-end tests: starts the real `toolgate` binary and talks
//! raw HTTP/1.1 to it, so that hostile requests can be sent byte for byte.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

pub mod browser;
pub mod captured;
pub mod code_mode;
pub mod conformance;
pub mod escapes;
pub mod exhaustion;
pub mod fidelity;
pub mod hostile;
pub mod issued;
pub mod lambda_events;
pub mod launch;
pub mod logsink;
pub mod mcp;
pub mod otlp;
pub mod peer;
pub mod sshd;
pub mod stepfunctions;
pub mod timing;
pub mod webhook;
pub mod wrangler;

/// The workspace's root folder.
/// A check that cannot run here (no huge pages, no CLI): said on stderr,
/// and a failure in CI (`CI` set and not `false`), where every check must
/// run: a skip there would report `ok` for nothing checked.
pub fn cannot_check(why: &str) {
    if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0") {
        panic!("cannot check in CI: {why}");
    }
    eprintln!("not checked here: {why}");
}

pub fn workspace() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
}

/// A helper script the tests run, in `tests/support/`.
pub fn support(name: &str) -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("support")
        .join(name)
}

/// A server's sandbox processes at rest: the zygote and its two warm spares
/// (the default `TOOLGATE_PYTHON_SPARE_CHILDREN`).
pub const IDLE_PROCESSES: usize = 3;

/// The `toolgate` binary: `$TOOLGATE_BIN`, else next to this test's `deps/`.
pub fn toolgate_bin() -> PathBuf {
    if let Ok(p) = std::env::var("TOOLGATE_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    let bin = dir.join("toolgate");
    assert!(
        bin.exists(),
        "{} not found: run `cargo build --workspace --bins` first (scripts/test does)",
        bin.display()
    );
    bin
}

/// A `toolgate serve` started through [`launch::Launch`]: its own `HOME`,
/// data folder and process group, all gone on drop.
pub struct Server {
    running: launch::Running,
    pub addr: String,
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// A contract error's status, code and message (empty strings when the
/// body has none).
pub fn error_of(r: &Response) -> (u16, String, String) {
    let v = r.json();
    (
        r.status,
        v["error"]["code"].as_str().unwrap_or_default().to_owned(),
        v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

impl Response {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "response is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl Server {
    /// Starts `toolgate serve` on a free loopback port with extra env vars.
    pub fn start(env: &[(&str, &str)]) -> Self {
        Self::start_with_args(env, &[])
    }

    pub fn start_with_args(env: &[(&str, &str)], args: &[&str]) -> Self {
        // Hermetic (launch.rs): none of the test run's TOOLGATE_* or AWS_*
        // variables, and a data folder and HOME of its own (never
        // ~/.local/share/toolgate, never the user's ~/.aws).
        record_secrets(env, args);
        let mut running = launch::Launch::toolgate(&["serve", "--addr", "127.0.0.1:0"])
            .args(args)
            .env("TOOLGATE_LOG", "json")
            .envs(env)
            .spawn();
        let addr = running.listening_addr(Duration::from_secs(60));
        Self { running, addr }
    }

    pub fn pid(&self) -> u32 {
        self.running.pid()
    }

    pub fn logs(&self) -> String {
        self.running.stderr()
    }

    /// The log lines that are JSON (the server logs JSON under test).
    pub fn json_logs(&self) -> Vec<Value> {
        self.logs()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The JSON log lines once `done` holds for them, or after `within`
    /// (the caller's assertions then say what is missing). The server writes
    /// a call's log lines as its answer goes out, so they may reach the test
    /// after the answer.
    pub fn json_logs_when(&self, within: Duration, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        timing::poll(within, || {
            let lines = self.json_logs();
            done(&lines).then_some(lines)
        })
        .unwrap_or_else(|| self.json_logs())
    }

    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        raw_request(&self.addr, method, path, headers, body)
    }

    pub fn post_json(&self, path: &str, body: &Value) -> Response {
        self.request(
            "POST",
            path,
            &[("Content-Type", "application/json")],
            body.to_string().as_bytes(),
        )
    }

    /// [`Server::post_json`] with `Authorization: Bearer token`.
    pub fn post_json_as(&self, path: &str, token: &str, body: &Value) -> Response {
        let auth = format!("Bearer {token}");
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

    pub fn get(&self, path: &str) -> Response {
        self.request("GET", path, &[], b"")
    }

    /// `POST /tools/python.execute` with `code`; asserts 200 and returns the result.
    pub fn exec(&self, code: &str) -> Value {
        let r = self.post_json(
            "/tools/python.execute",
            &serde_json::json!({ "code": code }),
        );
        assert_eq!(r.status, 200, "body: {}", String::from_utf8_lossy(&r.body));
        r.json()
    }

    /// Sends SIGTERM and waits for a clean exit; fails if anything of its
    /// process group (its sandbox) is still alive 3 s later. (Dropping it
    /// kills the group, so this is where a leak is seen.)
    pub fn terminate(mut self) -> std::process::ExitStatus {
        self.stop_with(libc::SIGTERM, false)
    }

    /// As [`Server::terminate`], by `signal` sent to the process (`group`:
    /// to its whole process group, as a terminal's Ctrl-C reaches the
    /// server and its sandbox alike). Its log stays readable after.
    pub fn stop_with(&mut self, signal: i32, group: bool) -> std::process::ExitStatus {
        if group {
            // SAFETY: a signal to the group our child leads (launch.rs).
            unsafe { libc::kill(-(self.running.pid() as i32), signal) };
        } else {
            self.running.signal(signal);
        }
        let st = timing::poll(Duration::from_secs(20), || self.running.try_wait())
            .unwrap_or_else(|| panic!("toolgate did not stop on signal {signal}"));
        let left = timing::poll(Duration::from_secs(3), || {
            let left = self.running.group_members();
            left.is_empty().then_some(())
        });
        assert!(
            left.is_some(),
            "toolgate left processes behind after signal {signal}: {:?}",
            self.running.group_members()
        );
        st
    }
}

/// Records the tokens and secrets a server is given: in its env, by
/// `--token`, and in the config file `--config` names.
fn record_secrets(env: &[(&str, &str)], args: &[&str]) {
    for (k, v) in env {
        issued::record_env(k, v);
    }
    for pair in args.windows(2) {
        match pair[0] {
            "--token" => issued::record("--token", pair[1]),
            "--config" => {
                issued::record_config(&std::fs::read_to_string(pair[1]).unwrap_or_default())
            }
            _ => {}
        }
    }
}

pub fn raw_request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    let mut has_len = false;
    for (k, v) in headers {
        issued::record_header(k, v);
        has_len |=
            k.eq_ignore_ascii_case("content-length") || k.eq_ignore_ascii_case("transfer-encoding");
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if !has_len {
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).expect("write head");
    // The server may answer (413) before reading a large body; ignore EPIPE.
    let _ = s.write_all(body);
    if logsink::dir().is_some()
        && let Ok(v) = serde_json::from_slice::<Value>(body)
    {
        issued::record_request_json(&v);
    }
    let r = parse_response(&read_response(&mut s));
    issued::record_body(&r.body);
    r
}

/// Reads one response: to its Content-Length, or its last chunk, or the
/// end of the stream. Some servers (wrangler's dev proxy) keep the
/// connection open for seconds despite `Connection: close`.
fn read_response(s: &mut TcpStream) -> Vec<u8> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    loop {
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
            let length = head.lines().find_map(|l| {
                l.strip_prefix("content-length:")
                    .and_then(|v| v.trim().parse::<usize>().ok())
            });
            let body = &raw[end + 4..];
            let done = match length {
                Some(n) => body.len() >= n,
                None if head.contains("transfer-encoding: chunked") => body.ends_with(b"0\r\n\r\n"),
                None => false,
            };
            if done {
                return raw;
            }
        }
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return raw,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
    }
}

fn parse_response(raw: &[u8]) -> Response {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP head in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .expect("status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        body = dechunk(&body);
    }
    Response {
        status,
        headers,
        body,
    }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = b.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&b[..eol]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = eol + 2;
        out.extend_from_slice(&b[start..start + size]);
        b = &b[start + size + 2..];
    }
    out
}

/// Processes whose parent is `pid` (from /proc), to check for leftovers.
pub fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat"))
            && let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r)
            && rest
                .split_whitespace()
                .nth(1)
                .and_then(|pp| pp.parse::<u32>().ok())
                == Some(pid)
        {
            out.push(p);
        }
    }
    out
}

/// All descendants of `pid`.
pub fn descendants_of(pid: u32) -> Vec<u32> {
    let mut all = Vec::new();
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for c in children_of(p) {
            all.push(c);
            frontier.push(c);
        }
    }
    all
}

/// A process's state letter and accumulated CPU ticks (utime+stime).
pub fn proc_state(pid: u32) -> Option<(char, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let state = f.first()?.chars().next()?;
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some((state, ticks))
}

/// CPU ticks of each process, then again after `wait`; returns those that ran.
pub fn busy_processes(pids: &[u32], wait: Duration) -> Vec<u32> {
    let before: Vec<_> = pids.iter().map(|p| proc_state(*p)).collect();
    std::thread::sleep(wait);
    pids.iter()
        .zip(before)
        .filter_map(|(p, b)| {
            let (_, t0) = b?;
            let (_, t1) = proc_state(*p)?;
            (t1 > t0).then_some(*p)
        })
        .collect()
}

/// Resident memory of a process in KiB, from /proc.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// A file removed on drop (the harness has no tempfile crate).
pub struct TempPath(pub PathBuf);

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Writes `text` to a fresh `.toml` file in the temp folder.
pub fn temp_file(stem: &str, text: &str) -> TempPath {
    let p = std::env::temp_dir().join(format!(
        "{stem}-{}-{}.toml",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::write(&p, text).expect("write temp file");
    issued::record_config(text);
    TempPath(p)
}

/// Runs `cmd`, which must exit on its own (a server that must refuse to
/// start): its output once it exits, or a failed test, with its process
/// group killed, if it still runs after `within`. `cmd` keeps the
/// environment it was given; new code uses [`launch::Launch`], which also
/// clears it.
pub fn output_within(cmd: Command, within: Duration) -> std::process::Output {
    launch::Launch::from_command(cmd).within(within).output()
}

/// The largest request body python.execute takes with the default files
/// cap (1 MiB of code plus the files as base64); past it, 413.
pub fn python_body_limit() -> usize {
    toolgate_shared::tools::python_execute::max_body_bytes(
        toolgate_shared::config::PythonConfig::default().max_files_bytes(),
    )
}

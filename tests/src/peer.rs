//! Third-party programs the tests run against: installed tools (found under
//! `TOOLGATE_TEST_TOOLS`, which `scripts/test` fills) and background
//! services on loopback, each in its own process group and stopped by PID.

use std::io::{BufRead, BufReader, Read};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::launch::TempDir;

/// Where `scripts/install-test-tools` put the third-party tools.
pub fn tools_dir() -> PathBuf {
    let dir = std::env::var("TOOLGATE_TEST_TOOLS").unwrap_or_else(|_| {
        panic!("TOOLGATE_TEST_TOOLS is not set: run scripts/test, which installs the third-party tools these tests drive")
    });
    PathBuf::from(dir)
}

/// `PATH` with the installed tools' bin folders first.
pub fn tools_path() -> String {
    let dir = tools_dir();
    let mut parts = vec![
        dir.join("aws/bin").display().to_string(),
        dir.join("node_modules/.bin").display().to_string(),
        dir.join("venv/bin").display().to_string(),
    ];
    parts.extend(std::env::var("PATH").ok());
    parts.join(":")
}

/// Runs a third-party tool; fails the test, with its output, unless it succeeds.
/// (A Toolgate command's stderr is copied for the log scan, [`crate::captured::output`].)
pub fn run_ok(cmd: &mut Command, what: &str) -> String {
    let out = crate::captured::output(cmd).unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A loopback port nobody is listening on (there is a small race until the
/// service binds it; the services here take no port 0).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

/// A loopback port that refuses connections for as long as this lives: a
/// socket bound to it that never listens. Unlike a [`free_port`] left
/// closed, no other process (a server another test starts) can take it
/// meanwhile.
pub struct ClosedPort {
    fd: std::os::fd::OwnedFd,
    /// The port.
    pub port: u16,
}

impl ClosedPort {
    /// Binds 127.0.0.1:0 without listening.
    pub fn bind() -> Self {
        use std::os::fd::{AsRawFd, FromRawFd};
        // SAFETY: socket has no memory preconditions; a negative result is
        // checked before the descriptor is owned.
        let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        assert!(raw >= 0, "socket: {}", std::io::Error::last_os_error());
        // SAFETY: `raw` is a fresh descriptor no one else owns.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) };
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr {
                s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
            },
            sin_zero: [0; 8],
        };
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        // SAFETY: `addr` is a valid sockaddr_in of `len` bytes for the call.
        let bound = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&raw const addr).cast::<libc::sockaddr>(),
                len,
            )
        };
        assert_eq!(bound, 0, "bind: {}", std::io::Error::last_os_error());
        let mut got: libc::sockaddr_in = addr;
        let mut got_len = len;
        // SAFETY: `got` has room for the sockaddr_in the kernel writes.
        let named = unsafe {
            libc::getsockname(
                fd.as_raw_fd(),
                (&raw mut got).cast::<libc::sockaddr>(),
                &mut got_len,
            )
        };
        assert_eq!(named, 0, "getsockname: {}", std::io::Error::last_os_error());
        Self {
            fd,
            port: u16::from_be(got.sin_port),
        }
    }
}

impl std::fmt::Debug for ClosedPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClosedPort({}, {:?})", self.port, self.fd)
    }
}

/// Whether the socket listening on loopback `port` is held by `pid` or a
/// descendant of it. True when /proc cannot say (the connect then decides).
fn listener_is_ours(pid: u32, port: u16) -> bool {
    let inodes: Vec<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|text| {
            text.lines()
                .skip(1)
                .filter_map(|l| {
                    let cols: Vec<&str> = l.split_whitespace().collect();
                    let local_port = cols.get(1)?.rsplit_once(':')?.1;
                    let listening = cols.get(3) == Some(&"0A");
                    (listening && u16::from_str_radix(local_port, 16).ok() == Some(port))
                        .then(|| cols.get(9).map(|i| format!("socket:[{i}]")))
                        .flatten()
                })
                .collect::<Vec<_>>()
        })
        .collect();
    if inodes.is_empty() {
        return true;
    }
    std::iter::once(pid)
        .chain(crate::descendants_of(pid))
        .any(|p| {
            std::fs::read_dir(format!("/proc/{p}/fd"))
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                .any(|target| inodes.iter().any(|i| target.as_os_str() == i.as_str()))
        })
}

/// A background service, killed with its whole process group on drop.
pub struct Peer {
    child: Child,
    name: String,
    logs: Arc<Mutex<String>>,
    /// Its `HOME`, removed once it is killed (fields drop after `drop`).
    _home: TempDir,
}

/// What `cargo` (`cargo lambda watch`) needs from the test's environment
/// beside [`crate::launch::BASE_ENV`]: where the toolchains and the registry cache are
/// (resolved against the real `HOME`, which the peer does not get), and
/// what the suite built with, so that nothing is built again for a
/// different wrapper or target dir.
pub fn cargo_env() -> Vec<(String, String)> {
    let home = std::env::var("HOME").unwrap_or_default();
    let mut vars = vec![
        ("CARGO_HOME".to_owned(), format!("{home}/.cargo")),
        ("RUSTUP_HOME".to_owned(), format!("{home}/.rustup")),
    ];
    // Cargo's, rustc's and rustup's own settings (a wrapper, flags, a
    // profile, the target dir), not what cargo sets for a crate it builds.
    let crate_vars = [
        "CARGO_PKG_",
        "CARGO_MANIFEST_",
        "CARGO_CRATE_",
        "CARGO_BIN_",
    ];
    for (k, v) in std::env::vars() {
        let tool = ["CARGO_", "RUSTC", "RUSTUP_", "RUSTFLAGS", "CLIPPY_ARGS"]
            .iter()
            .any(|p| k.starts_with(p));
        if tool && !crate_vars.iter().any(|p| k.starts_with(p)) {
            vars.retain(|(have, _)| *have != k);
            vars.push((k, v));
        }
    }
    vars
}

impl Peer {
    /// Starts `cmd` in a new process group, capturing stdout and stderr,
    /// with an environment of [`crate::launch::BASE_ENV`], a fresh `HOME` and only what
    /// `cmd` sets itself: a peer reads no `TOOLGATE_*`, `AWS_*` or
    /// `~/.aws` of the test's. When it runs Toolgate's code (`cargo lambda
    /// watch`), its output is also copied for the log scan
    /// ([`crate::logsink`]), and the secrets in its environment recorded
    /// ([`crate::issued`]).
    pub fn spawn(name: &str, cmd: &mut Command) -> Self {
        use std::os::unix::process::CommandExt;
        let home = TempDir::new("toolgate-peer-home");
        crate::launch::hermetic(cmd, home.path());
        let toolgate = crate::logsink::toolgate_process(cmd);
        if toolgate.is_some() {
            for (k, v) in cmd.get_envs() {
                if let (Some(k), Some(v)) = (k.to_str(), v.and_then(|v| v.to_str())) {
                    crate::issued::record_env(k, v);
                }
            }
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        let sink = toolgate.and_then(|what| crate::logsink::Sink::open(child.id(), &what));
        let logs = Arc::new(Mutex::new(String::new()));
        for pipe in [
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let logs = logs.clone();
            let sink = sink.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    if let Some(s) = &sink {
                        s.line(&line);
                    }
                    let mut g = logs.lock().unwrap();
                    g.push_str(&line);
                    g.push('\n');
                }
            });
        }
        Self {
            child,
            name: name.to_owned(),
            logs,
            _home: home,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn logs(&self) -> String {
        self.logs.lock().unwrap().clone()
    }

    /// The output once `done` holds for it, or after `within` (the caller's
    /// assertions then say what is missing): a process may log a call's
    /// lines after its answer reached the test.
    pub fn logs_when(&self, within: Duration, done: impl Fn(&str) -> bool) -> String {
        crate::timing::poll(within, || {
            let logs = self.logs();
            done(&logs).then_some(logs)
        })
        .unwrap_or_else(|| self.logs())
    }

    /// Waits until `port` on loopback accepts connections and the listener
    /// is this peer's (it or a process it started holds the socket): a port
    /// chosen free can be taken by another test's process before the peer
    /// binds it, and that process answering must not pass for the peer.
    pub fn wait_for_port(&mut self, port: u16, within: Duration) {
        if let Err(e) = self.try_wait_for_port(port, within) {
            panic!("{e}");
        }
    }

    /// As [`Self::wait_for_port`], with the peer's exit (a port taken
    /// first, most often) as an error to try again on, rather than a panic.
    pub fn try_wait_for_port(&mut self, port: u16, within: Duration) -> Result<(), String> {
        let pid = self.child.id();
        let deadline = Instant::now() + within;
        loop {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() && listener_is_ours(pid, port) {
                return Ok(());
            }
            if let Ok(Some(st)) = self.child.try_wait() {
                return Err(format!(
                    "{} exited ({st}) before it would listen on {port}:\n{}",
                    self.name,
                    self.logs()
                ));
            }
            assert!(
                Instant::now() < deadline,
                "{} did not listen on {port} within {within:?}:\n{}",
                self.name,
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the service says `listening on 127.0.0.1:PORT` (a
    /// service started on port 0, so that no other process can take its
    /// port first), and returns the port.
    pub fn wait_for_announced_port(&mut self, within: Duration) -> u16 {
        const SAYS: &str = "listening on 127.0.0.1:";
        self.wait_for_log(SAYS, within);
        let logs = self.logs();
        let rest = &logs[logs.find(SAYS).expect("waited for it") + SAYS.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits
            .parse()
            .unwrap_or_else(|_| panic!("{} announced no port:\n{logs}", self.name))
    }

    /// Waits until the service's output contains `needle`.
    pub fn wait_for_log(&mut self, needle: &str, within: Duration) {
        let logs = self.logs.clone();
        self.wait_until(&format!("log {needle:?}"), within, || {
            logs.lock().unwrap().contains(needle)
        });
    }

    /// Polls `ready`, failing with the service's output if it exits or
    /// `within` passes first.
    fn wait_until(&mut self, what: &str, within: Duration, mut ready: impl FnMut() -> bool) {
        let deadline = Instant::now() + within;
        while !ready() {
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!(
                    "{} exited ({st}) before it would {what}:\n{}",
                    self.name,
                    self.logs()
                );
            }
            assert!(
                Instant::now() < deadline,
                "{} did not {what} within {within:?}:\n{}",
                self.name,
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills the process group now (also done on drop).
    pub fn kill(&mut self) {
        // SAFETY: the child leads its own process group (process_group(0)),
        // so -pid signals only it and what it started.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The MCP reference server (`@modelcontextprotocol/server-everything`,
/// streamable HTTP) on a free loopback port; `support/loopback.cjs` keeps it
/// off other interfaces.
pub fn everything() -> (Peer, u16) {
    everything_with(&[])
}

/// As [`everything`], printing each request's headers on its log
/// (`HEADERS {...}`, `support/record_headers.cjs`): the reference server
/// ignores auth, so this is how a test sees what a proxy sent.
pub fn everything_recording_headers() -> (Peer, u16) {
    everything_with(&["support/record_headers.cjs"])
}

/// The requests' headers an [`everything_recording_headers`] peer saw.
pub fn recorded_headers(peer: &Peer) -> Vec<serde_json::Value> {
    peer.logs()
        .lines()
        .filter_map(|l| l.strip_prefix("HEADERS "))
        .map(|j| serde_json::from_str(j).expect("a HEADERS line is JSON"))
        .collect()
}

/// As [`everything`], with three more tools beside `echo` whose exported
/// names collide or run past 64 characters (`support/colliding_tools.mjs`):
/// `echo.v2`, `echo_v2` and `describe_xxx…` (80 characters); each answers
/// `<its name>: <message>`.
pub fn everything_with_colliding_names() -> (Peer, u16) {
    everything_with(&["support/colliding_tools.mjs"])
}

/// Preloads: `.cjs` files by `-r`, `.mjs` files by `--import`.
fn everything_with(preloads: &[&str]) -> (Peer, u16) {
    let port = free_port();
    (everything_on(port, preloads), port)
}

/// The reference server on `port` (to start it again where it was).
pub fn everything_on(port: u16, preloads: &[&str]) -> Peer {
    let support = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let entry =
        tools_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let mut cmd = Command::new("node");
    for p in std::iter::once(&"support/loopback.cjs").chain(preloads) {
        let flag = if p.ends_with(".mjs") {
            "--import"
        } else {
            "-r"
        };
        cmd.arg(flag).arg(support.join(p));
    }
    // The SDK module the server imports, for a preload that patches it.
    cmd.env(
        "TOOLGATE_MCP_SDK_MODULE",
        tools_dir().join("node_modules/@modelcontextprotocol/sdk/dist/esm/server/mcp.js"),
    );
    let mut peer = Peer::spawn(
        "mcp server-everything",
        cmd.arg(entry)
            .arg("streamableHttp")
            .env("PORT", port.to_string()),
    );
    peer.wait_for_port(port, Duration::from_secs(30));
    peer
}

/// moto server (PyPI `moto[server]`) on a free loopback port; returns its URL.
pub fn moto() -> (Peer, String) {
    moto_with(&[])
}

/// [`moto`] with `env` (moto_serial.py's `TOOLGATE_MOTO_*` settings).
pub fn moto_with(env: &[(&str, &str)]) -> (Peer, String) {
    let port = free_port();
    // One request at a time, as DynamoDB applies each conditional write
    // atomically (moto's backends take no lock; see moto_serial.py).
    let support = Path::new(env!("CARGO_MANIFEST_DIR")).join("support/moto_serial.py");
    let mut peer = Peer::spawn(
        "moto_server",
        Command::new(tools_dir().join("aws/bin/python"))
            .arg(support)
            .args(["-H", "127.0.0.1", "-p"])
            .arg(port.to_string())
            .envs(env.iter().copied()),
    );
    peer.wait_for_port(port, Duration::from_secs(60));
    (peer, format!("http://127.0.0.1:{port}"))
}

/// An SSM client of the real SDK pointed at moto, with moto's dummy keys.
pub async fn moto_ssm(endpoint: &str) -> aws_sdk_ssm::Client {
    let conf = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_ssm::config::Credentials::new(
            "testing", "testing", None, None, "test",
        ))
        .load()
        .await;
    aws_sdk_ssm::Client::new(&conf)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Another process answering on a peer's port does not pass for the
    /// peer; the peer's own listener does.
    #[test]
    fn only_the_peers_own_listener_counts() {
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        let idle = Peer::spawn("sleep", Command::new("sleep").arg("30"));
        assert!(!listener_is_ours(idle.pid(), port));
        let mut own = Peer::spawn(
            "listener",
            Command::new("python3").args([
                "-c",
                "import socket, time\n\
                 s = socket.socket()\n\
                 s.bind(('127.0.0.1', 0))\n\
                 s.listen()\n\
                 print('listening on 127.0.0.1:%d' % s.getsockname()[1], flush=True)\n\
                 time.sleep(30)",
            ]),
        );
        let own_port = own.wait_for_announced_port(Duration::from_secs(20));
        assert!(listener_is_ours(own.pid(), own_port));
        assert!(!listener_is_ours(own.pid(), port));
    }
}

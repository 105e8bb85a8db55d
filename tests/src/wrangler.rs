//! `wrangler dev --local` (workerd) running the Worker from wrangler.toml,
//! on 127.0.0.1, in its own process group so that dropping it stops workerd
//! too. The Worker must be built first (`scripts/build-worker`, which
//! scripts/test runs).

use std::fs::File;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repo root")
        .to_path_buf()
}

/// The tree `wrangler dev` runs in (its wrangler.toml and Worker build):
/// this repository, or `TOOLGATE_TEST_WORKER_ROOT`, a copy built with a
/// fault on purpose, to watch a test fail without touching this tree.
fn worker_root() -> PathBuf {
    std::env::var_os("TOOLGATE_TEST_WORKER_ROOT")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(repo_root)
}

fn tools_dir() -> PathBuf {
    std::env::var_os("TOOLGATE_TEST_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/toolgate/tools")
        })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

pub struct Wrangler {
    child: Child,
    pub addr: String,
    log: PathBuf,
}

/// What to start: the dispatcher (`wrangler.toml`) or the sandbox
/// (`wrangler.sandbox.toml`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Role {
    Dispatcher,
    Sandbox,
}

impl Wrangler {
    /// Starts one Worker. `registry` is the dev registry folder through which
    /// the dispatcher finds the sandbox (service binding across processes);
    /// `state` holds the local D1 database.
    pub fn start(role: Role, vars: &[(&str, &str)], registry: &Path, state: &Path) -> Self {
        // A port found free can be taken before workerd binds it (a dying
        // workerd, a connection's ephemeral port in TIME_WAIT): on "Address
        // already in use", start again on new ports.
        const ATTEMPTS: usize = 3;
        for attempt in 1..=ATTEMPTS {
            let w = Self::spawn(role, vars, registry, state);
            match w.wait_ready(role) {
                Ok(()) => return w,
                Err(log) if attempt < ATTEMPTS && log.contains("Address already in use") => drop(w),
                Err(log) => panic!("wrangler dev ({role:?}) did not start:\n{log}"),
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    fn spawn(role: Role, vars: &[(&str, &str)], registry: &Path, state: &Path) -> Self {
        let port = free_port();
        let log = state.join(format!("{role:?}-{port}.log").to_lowercase());
        std::fs::create_dir_all(state).expect("state dir");
        let out = Arc::new(Mutex::new(File::create(&log).expect("log file")));
        let mut cmd = Command::new(tools_dir().join("node_modules/.bin/wrangler"));
        // Only what it is given here: no `TOOLGATE_*`, `CLOUDFLARE_*` or
        // home folder of the test's (wrangler keeps its logs under HOME).
        let home = state.join("home");
        std::fs::create_dir_all(&home).expect("wrangler's HOME");
        crate::launch::hermetic(&mut cmd, &home);
        cmd.current_dir(worker_root())
            .args(["dev", "--local", "--ip", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .arg("--inspector-port")
            .arg(free_port().to_string())
            .args(["--show-interactive-dev-session=false", "--persist-to"])
            .arg(state)
            .env("WRANGLER_REGISTRY_PATH", registry)
            .env("WRANGLER_SEND_METRICS", "false")
            // No Request.cf download: there is no network here, and its DNS
            // failure delays the first request by seconds.
            .env("CLOUDFLARE_CF_FETCH_ENABLED", "false")
            .env("TOOLGATE_WORKER_PREBUILT", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        if role == Role::Sandbox {
            cmd.args(["--config", "wrangler.sandbox.toml"]);
        }
        for (k, v) in vars {
            cmd.arg("--var").arg(format!("{k}:{v}"));
            crate::issued::record_env(k, v);
        }
        let mut child = cmd
            .spawn()
            .expect("spawn wrangler (scripts/install-test-tools)");
        // Both pipes into the log file, line by line, and into the copy
        // for the log scan (crate::logsink): the Worker's log is Toolgate's.
        let sink = crate::logsink::Sink::open(
            child.id(),
            &format!("wrangler-dev-{role:?}").to_lowercase(),
        );
        let pipes = [
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
        ];
        for pipe in pipes.into_iter().flatten() {
            let (out, sink) = (out.clone(), sink.clone());
            std::thread::spawn(move || {
                crate::logsink::pump(pipe, |line| {
                    let mut text = line.to_vec();
                    text.push(b'\n');
                    let _ = out
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .write_all(&text);
                    if let Some(s) = &sink {
                        s.bytes(line);
                    }
                })
            });
        }
        Self {
            child,
            addr: format!("127.0.0.1:{port}"),
            log,
        }
    }

    /// Waits until it serves; its log if it does not within two minutes, or
    /// fails first.
    fn wait_ready(&self, role: Role) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            let log = self.logs();
            // The dispatcher is ready when it also sees the sandbox.
            let ready = log.contains("Ready on http://")
                && (role == Role::Sandbox || log.contains("[connected]"));
            if ready {
                return Ok(());
            }
            if log.contains("Fatal uncaught") {
                return Err(log);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Err(self.logs())
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The workerd processes of this wrangler (its process group).
    pub fn workerd_rss_kib(&self) -> u64 {
        let pgid = self.child.id() as i32;
        let mut total = 0;
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            let Some((_, rest)) = stat.rsplit_once(')') else {
                continue;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            // fields[0] is the state; the process group is field 5 of stat.
            if fields.get(2).and_then(|g| g.parse::<i32>().ok()) != Some(pgid)
                || !stat.contains("(workerd)")
            {
                continue;
            }
            let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
            total += status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .unwrap_or(0);
        }
        total
    }
}

impl Drop for Wrangler {
    fn drop(&mut self) {
        let pgid = self.child.id() as i32;
        // SAFETY: signalling the process group this fixture created.
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // SAFETY: as above; workerd may outlive wrangler's own exit.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

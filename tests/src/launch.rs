//! The one way the tests start a process (`toolgate` and simple peers):
//! a bounded wait, an environment cleared to what the test passes plus
//! [`BASE_ENV`], a fresh `HOME` and data folder removed afterwards, and a
//! process group of its own that is killed when the wait runs out and on
//! drop (a failed test included), so that no grandchild outlives the test.
//! Toolgate's output is copied to the log sink ([`crate::logsink`]) and the
//! secrets it is given are recorded ([`crate::issued`]) as elsewhere.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::{issued, logsink};

/// The variables a launched process keeps from the test's environment.
/// The log sink and `issued.tsv` (`TOOLGATE_TEST_LOG_DIR`) are written by
/// the harness, not by the child, so the child needs none of the test's.
pub const BASE_ENV: [&str; 2] = ["PATH", "LANG"];

/// Clears `cmd`'s environment to [`BASE_ENV`] and `home` as `HOME`, and
/// keeps what `cmd` set or removed itself.
pub fn hermetic(cmd: &mut Command, home: &Path) {
    let set: Vec<_> = cmd
        .get_envs()
        .map(|(k, v)| (k.to_owned(), v.map(ToOwned::to_owned)))
        .collect();
    cmd.env_clear();
    for keep in BASE_ENV {
        if let Some(v) = std::env::var_os(keep) {
            cmd.env(keep, v);
        }
    }
    cmd.env("HOME", home);
    for (k, v) in set {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
}

/// How long [`Launch::output`] waits unless told otherwise.
pub const DEFAULT_WITHIN: Duration = Duration::from_secs(60);

/// A folder of its own under the system temp folder, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    /// A new, empty folder whose name starts with `stem`.
    pub fn new(stem: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let p = std::env::temp_dir().join(format!(
            "{stem}-{}-{}-{nanos}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        Self(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A process to start: build it, then [`Launch::output`] (it must exit)
/// or [`Launch::spawn`] (a server, stopped on drop).
pub struct Launch {
    cmd: Command,
    /// Program and arguments, for failure messages.
    shown: Vec<String>,
    stdin: Option<Vec<u8>>,
    within: Duration,
    /// `HOME` (`home/`), the data folder (`data/`, not made) and the
    /// working folder.
    dir: TempDir,
}

impl Launch {
    /// `program` with only [`BASE_ENV`], `HOME` and `TOOLGATE_DATA_DIR`,
    /// both fresh, run in a fresh folder.
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        let dir = TempDir::new("toolgate-launch");
        let home = dir.path().join("home");
        std::fs::create_dir(&home).expect("make HOME");
        let mut cmd = Command::new(program.as_ref());
        hermetic(&mut cmd, &home);
        cmd.env("TOOLGATE_DATA_DIR", dir.path().join("data"))
            .current_dir(dir.path());
        Self {
            cmd,
            shown: vec![program.as_ref().to_string_lossy().into_owned()],
            stdin: None,
            within: DEFAULT_WITHIN,
            dir,
        }
    }

    /// A command built elsewhere, with the environment and folder it was
    /// given (not cleared: for callers not yet converted): only the bounded
    /// wait, the drained pipes, the process group and the log sink.
    pub fn from_command(cmd: Command) -> Self {
        let mut shown = vec![cmd.get_program().to_string_lossy().into_owned()];
        shown.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
        for (k, v) in cmd.get_envs() {
            if let (Some(k), Some(v)) = (k.to_str(), v.and_then(|v| v.to_str())) {
                issued::record_env(k, v);
            }
        }
        Self {
            cmd,
            shown,
            stdin: None,
            within: DEFAULT_WITHIN,
            dir: TempDir::new("toolgate-launch"),
        }
    }

    /// The `toolgate` binary ([`crate::toolgate_bin`]) with `args`.
    pub fn toolgate(args: &[&str]) -> Self {
        Self::new(crate::toolgate_bin()).args(args)
    }

    pub fn arg(mut self, a: impl AsRef<OsStr>) -> Self {
        self.shown.push(a.as_ref().to_string_lossy().into_owned());
        self.cmd.arg(a);
        self
    }

    pub fn args<A: AsRef<OsStr>>(mut self, args: impl IntoIterator<Item = A>) -> Self {
        for a in args {
            self = self.arg(a);
        }
        self
    }

    /// Sets `key` (over the base and the fresh folders); a secret is
    /// recorded for the log scan.
    pub fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Self {
        if let Some(v) = value.as_ref().to_str() {
            issued::record_env(key, v);
        }
        self.cmd.env(key, value);
        self
    }

    pub fn envs(mut self, vars: &[(&str, &str)]) -> Self {
        for (k, v) in vars {
            self = self.env(k, v);
        }
        self
    }

    /// Bytes written to its stdin (else it reads /dev/null).
    pub fn stdin(mut self, bytes: &[u8]) -> Self {
        self.stdin = Some(bytes.to_vec());
        self
    }

    /// The longest [`Launch::output`] waits for it to exit.
    pub fn within(mut self, limit: Duration) -> Self {
        self.within = limit;
        self
    }

    /// The command itself, for what this does not wrap (`pre_exec`). Its
    /// environment and process group are the helper's.
    pub fn command(&mut self) -> &mut Command {
        &mut self.cmd
    }

    /// The fresh `HOME`.
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn shown(&self) -> String {
        self.shown.join(" ")
    }

    /// Spawns it; `sink_lines` copies its stderr to the log sink as it
    /// comes (a process that keeps running), else [`Launch::output`] copies
    /// it once, as `captured::output` does.
    fn start(mut self, sink_lines: bool) -> Started {
        for pair in self.shown.windows(2) {
            if pair[0] == "--token" {
                issued::record("--token", &pair[1]);
            }
        }
        let what = logsink::toolgate_process(&self.cmd);
        let shown = self.shown();
        let child = self
            .cmd
            .process_group(0)
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start `{shown}`: {e}"));
        let mut group = Group(child);
        if let (Some(bytes), Some(mut pipe)) = (self.stdin.take(), group.0.stdin.take()) {
            // A thread: a child that does not read must not block the test.
            std::thread::spawn(move || {
                let _ = pipe.write_all(&bytes);
            });
        }
        let pid = group.0.id();
        let sink = what
            .as_deref()
            .filter(|_| sink_lines)
            .and_then(|w| logsink::Sink::open(pid, w));
        let stdout = Pipe::drain(group.0.stdout.take().expect("stdout"), None);
        let stderr = Pipe::drain(group.0.stderr.take().expect("stderr"), sink);
        Started {
            group,
            stdout,
            stderr,
            what,
            shown,
            within: self.within,
            _dir: self.dir,
        }
    }

    /// Runs it to its exit and returns its output. Past the wait (or if a
    /// leftover holds its pipes open past it), its process group is
    /// killed and the test fails naming the command. Whatever of its group
    /// is left once it exits is killed too.
    pub fn output(self) -> Output {
        let mut s = self.start(false);
        let deadline = Instant::now() + s.within;
        let status = loop {
            if let Some(st) = s.group.0.try_wait().expect("try_wait") {
                break Some(st);
            }
            if Instant::now() >= deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // Leftovers of its group are not waited for.
        s.group.kill();
        let (stdout, stdout_closed) = s.stdout.finish(deadline);
        let (stderr, stderr_closed) = s.stderr.finish(deadline);
        let timed_out = status.is_none();
        let status = match status {
            Some(st) => st,
            None => s.group.0.wait().expect("wait"),
        };
        let out = Output {
            status,
            stdout,
            stderr,
        };
        if let Some(what) = &s.what {
            crate::captured::record_finished(s.group.0.id(), what, &out);
        }
        let said = || {
            format!(
                "\nstdout: {}\nstderr: {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        };
        let shown = &s.shown;
        if timed_out {
            panic!(
                "`{shown}` still ran after {:?}; its process group was killed.{}",
                s.within,
                said()
            );
        }
        if !(stdout_closed && stderr_closed) {
            panic!(
                "`{shown}` exited, but its output was still open after {:?} (a process outside its group holds it).{}",
                s.within,
                said()
            );
        }
        out
    }

    /// Starts it and returns at once; see [`Running`].
    pub fn spawn(self) -> Running {
        Running(self.start(true))
    }
}

/// A started process: its group, its drained pipes, its folder.
struct Started {
    // Killed before the folder goes.
    group: Group,
    stdout: Pipe,
    stderr: Pipe,
    what: Option<String>,
    shown: String,
    within: Duration,
    _dir: TempDir,
}

/// A child in a process group of its own (`setpgid(0, 0)` before exec);
/// the whole group is killed and the child reaped on drop.
struct Group(Child);

impl Group {
    fn kill(&mut self) {
        // SAFETY: a signal to the group our child leads; the group id
        // cannot be reused while any member lives.
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
        let _ = self.0.wait();
    }
}

/// A pipe read to its end by a thread, a line at a time, into a buffer
/// (and a log sink); its end is signalled on a channel.
struct Pipe {
    buf: Arc<Mutex<Vec<u8>>>,
    // In a Mutex: a Server is shared between threads.
    done: Mutex<mpsc::Receiver<()>>,
}

impl Pipe {
    fn drain(pipe: impl Read + Send + 'static, sink: Option<logsink::Sink>) -> Self {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let (tx, done) = mpsc::channel();
        let b = buf.clone();
        std::thread::spawn(move || {
            logsink::pump(pipe, |line| {
                if let Some(s) = &sink {
                    s.bytes(line);
                }
                let mut g = b.lock().unwrap_or_else(|p| p.into_inner());
                g.extend_from_slice(line);
                g.push(b'\n');
            });
            let _ = tx.send(());
        });
        Self {
            buf,
            done: Mutex::new(done),
        }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.buf.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
    }

    /// All it said, and whether its end was reached by `deadline` (with
    /// a second's grace after a kill).
    fn finish(&self, deadline: Instant) -> (Vec<u8>, bool) {
        let limit = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_secs(1));
        let closed = self
            .done
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .recv_timeout(limit)
            .is_ok();
        let said = self.buf.lock().unwrap_or_else(|p| p.into_inner()).clone();
        (said, closed)
    }
}

/// A process that keeps running (a server): its stderr and stdout are
/// collected (stderr copied to the log sink line by line), and its group
/// is killed, and its folder removed, on drop.
pub struct Running(Started);

impl Running {
    pub fn pid(&self) -> u32 {
        self.0.group.0.id()
    }

    /// Its stderr so far.
    pub fn stderr(&self) -> String {
        self.0.stderr.text()
    }

    /// Its stdout so far.
    pub fn stdout(&self) -> String {
        self.0.stdout.text()
    }

    /// The first stderr line containing `needle`, once written; the test
    /// fails naming the command if it exits first or `within` passes.
    pub fn wait_for_stderr(&mut self, needle: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            if let Some(line) = self.stderr().lines().find(|l| l.contains(needle)) {
                return line.to_owned();
            }
            let exited = self.0.group.0.try_wait().expect("try_wait");
            if exited.is_some() || Instant::now() >= deadline {
                self.0.group.kill();
                let _ = self.0.stderr.finish(Instant::now());
                panic!(
                    "`{}` {} before writing {needle:?}; stderr:\n{}",
                    self.0.shown,
                    match exited {
                        Some(st) => format!("exited ({st})"),
                        None => format!("did not within {within:?} (its group was killed)"),
                    },
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends `signal` to it (not its group).
    pub fn signal(&self, signal: i32) {
        // SAFETY: a signal to our own child, by pid; not reaped before drop.
        unsafe { libc::kill(self.pid() as i32, signal) };
    }

    /// Its exit status, if it has exited.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.0.group.0.try_wait().expect("try_wait")
    }

    /// The live (not zombie) processes of its group: what it left behind,
    /// once it has exited.
    pub fn group_members(&self) -> Vec<u32> {
        let pgid = self.pid().to_string();
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|stat| {
                    // After the command: state, ppid, pgrp.
                    let f: Vec<&str> = stat
                        .rsplit_once(')')
                        .map_or("", |(_, r)| r)
                        .split_whitespace()
                        .collect();
                    f.len() > 2 && f[0] != "Z" && f[0] != "X" && f[2] == pgid
                })
            })
            .collect()
    }

    /// The address of a Toolgate server, from its "listening on" line.
    pub fn listening_addr(&mut self, within: Duration) -> String {
        let line = self.wait_for_stderr("listening on http://", within);
        let i = line.find("listening on http://").expect("found") + "listening on http://".len();
        line[i..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ':')
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alive(pid: u32) -> bool {
        // Gone, or a zombie nobody reaps in a container without init.
        crate::proc_state(pid).is_some_and(|(s, _)| s != 'Z' && s != 'X')
    }

    #[test]
    fn a_process_past_its_wait_is_killed_with_its_grandchildren() {
        let l = Launch::new("sh")
            .args(["-c", "sleep 300 & echo $!; echo $$; sleep 300"])
            .within(Duration::from_secs(1));
        let started = Instant::now();
        let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| l.output()))
            .expect_err("a process past its wait fails the test");
        assert!(started.elapsed() < Duration::from_secs(10), "bounded");
        let msg = panic.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            msg.contains("`sh -c sleep 300 &"),
            "names the command: {msg}"
        );
        assert!(msg.contains("still ran after 1s"), "{msg}");
        let pids: Vec<u32> = msg
            .lines()
            .map(|l| l.trim_start_matches("stdout: "))
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        assert_eq!(
            pids.len(),
            2,
            "the grandchild's and the child's pids: {msg}"
        );
        for pid in pids {
            let gone = crate::timing::poll(Duration::from_secs(5), || (!alive(pid)).then_some(()));
            assert!(gone.is_some(), "process {pid} outlived the wait");
        }
    }

    #[test]
    fn a_running_process_is_killed_with_its_grandchildren_on_drop() {
        let mut r = Launch::new("sh")
            .args(["-c", "sleep 300 & echo started $! >&2; sleep 300"])
            .spawn();
        let line = r.wait_for_stderr("started", Duration::from_secs(10));
        let grandchild: u32 = line["started ".len()..].trim().parse().unwrap();
        let child = r.pid();
        assert!(alive(grandchild) && alive(child));
        drop(r);
        for pid in [child, grandchild] {
            let gone = crate::timing::poll(Duration::from_secs(5), || (!alive(pid)).then_some(()));
            assert!(gone.is_some(), "process {pid} outlived the drop");
        }
    }

    #[test]
    fn the_child_sees_only_what_is_passed_and_the_base() {
        let out = Launch::new("env")
            .env("TOOLGATE_SOMETHING", "passed")
            .output();
        assert!(out.status.success());
        let mut keys: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, _)| k.to_owned()))
            .collect();
        keys.sort();
        let mut expected: Vec<String> = BASE_ENV
            .iter()
            .filter(|k| std::env::var_os(k).is_some())
            .map(|k| k.to_string())
            .chain(["HOME", "TOOLGATE_DATA_DIR", "TOOLGATE_SOMETHING"].map(String::from))
            .collect();
        expected.sort();
        assert_eq!(keys, expected);
        // The test's own environment is larger (cargo sets CARGO_*).
        assert!(std::env::vars_os().count() > expected.len());
    }

    #[test]
    fn home_is_fresh_and_removed_afterwards() {
        let run = || {
            let out = Launch::new("sh")
                .args([
                    "-c",
                    "touch \"$HOME/x\" && ls -A \"$HOME\" && echo \"$HOME\"",
                ])
                .output();
            assert!(out.status.success(), "{out:?}");
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines[0], "x", "HOME held nothing else: {text}");
            PathBuf::from(lines[1])
        };
        let (a, b) = (run(), run());
        assert_ne!(a, b, "each launch has its own");
        assert_ne!(Some(a.as_os_str()), std::env::var_os("HOME").as_deref());
        for home in [a, b] {
            assert!(!home.exists(), "{} was left behind", home.display());
            assert!(!home.parent().unwrap().exists(), "its folder was left");
        }
    }
}

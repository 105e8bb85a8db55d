//! Per-call latency of python.execute on each snippet, one call at a time:
//! - at the sandbox API (`Sandbox::execute` in-process, no HTTP), with calls
//!   `--gap-ms` apart (20 ms unless set: as a warm Lambda sees them, the CPU
//!   has gone idle and the replacement fork is done) and back to back;
//! - with `--http HOST:PORT`, through a running `toolgate serve`, on one
//!   kept-alive connection, back to back and `--gap-ms` apart.
//!
//! With `--sessions`, instead: a session call's cost over a stateless one at
//! the sandbox API, by the size of the state restored and saved again.
//!
//! With `--in-process`, instead: the interpreter alone (`in_process`), back
//! to back and `--gap-ms` apart.
//!
//! Prints JSON medians.

use std::time::{Duration, Instant};

use clap::Parser;

use serde_json::json;
use toolgate_python::sandbox::{Sandbox, alloc::SandboxAlloc};
use toolgate_shared::config::PythonConfig;

mod common;
mod in_process;
use common::{Conn, median};

#[global_allocator]
static ALLOC: SandboxAlloc = SandboxAlloc;

/// python.execute's per-call latency on each snippet (JSON medians).
#[derive(Parser)]
struct Args {
    /// Calls per series.
    #[arg(long, default_value_t = 31)]
    n: usize,
    /// Also through this running `toolgate serve`.
    #[arg(long, value_name = "HOST:PORT")]
    http: Option<String>,
    /// A session call's cost by the size of its state, instead.
    #[arg(long)]
    sessions: bool,
    /// The interpreter alone, in this process (no fork, no walls), instead.
    #[arg(long)]
    in_process: bool,
    /// With `--in-process`: also the cases of this corpus JSON file
    /// (`{"cases": [{"code": ...}]}`; repeatable).
    #[arg(long, value_name = "FILE", requires = "in_process")]
    corpus: Vec<String>,
    /// The pause before each call in the "apart" series, in ms: the
    /// CPU's caches go cold in it, as between an agent's calls.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    gap_ms: u64,
    /// The snippets (`*.py`) [default: bench/snippets, or none with
    /// `--corpus`].
    dir: Option<String>,
}

/// Waits `gap` before a call; not at all for a zero gap: tokio rounds a
/// timer up to its next millisecond tick, which would hand every
/// back-to-back call's spare a pause to settle in.
async fn pause(gap: Duration) {
    if !gap.is_zero() {
        tokio::time::sleep(gap).await;
    }
}

/// `n` calls at the sandbox API, each after `gap`: medians of the whole call
/// and of the part spent in the child, in ms.
async fn api_series(sandbox: &Sandbox, code: &str, n: usize, gap: Duration) -> (f64, f64) {
    let (mut total, mut child) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        pause(gap).await;
        let t = Instant::now();
        let r = sandbox
            .execute(code, Duration::from_secs(60))
            .await
            .unwrap();
        total.push(t.elapsed().as_secs_f64() * 1e3);
        child.push(r.child_us as f64 / 1e3);
        assert_eq!(r.exit_code, 0, "{}", r.stderr);
    }
    (median(total), median(child))
}

/// Page faults taken on the whole machine so far (`/proc/vmstat`'s
/// `pgfault`), or `None` where it cannot be read. Unlike a time, it hardly
/// moves with the host's noise: over a back-to-back series it is what a
/// call costs the kernel in faults, fork and teardown included.
fn machine_faults() -> Option<u64> {
    let vmstat = std::fs::read_to_string("/proc/vmstat").ok()?;
    vmstat
        .lines()
        .find_map(|l| l.strip_prefix("pgfault "))?
        .trim()
        .parse()
        .ok()
}

/// `n` calls of `code` at the sandbox API in a session whose state is
/// `state`, each after `gap`: the median in ms, and the state after.
async fn session_series(
    sandbox: &Sandbox,
    code: &str,
    state: &[u8],
    n: usize,
    gap: Duration,
) -> (f64, Vec<u8>) {
    let mut times = Vec::with_capacity(n);
    let mut last = state.to_vec();
    for _ in 0..n {
        pause(gap).await;
        let t = Instant::now();
        let r = sandbox
            .execute_for(
                "bench",
                code,
                &Default::default(),
                Some(state),
                Duration::from_secs(60),
            )
            .await
            .unwrap();
        times.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(r.exit_code, 0, "{}", r.stderr);
        last = r.state.expect("a saved state");
    }
    (median(times), last)
}

/// Session overhead by state size: the state is rows of a table (dicts of
/// an int, a string and a float), as an agent's loaded CSV would be. A call
/// that never reads the state (`n = 1`) restores none of it; one that reads
/// it (`n = len(rows)`) restores all of it.
async fn sessions_bench(sandbox: &Sandbox, n: usize, gap: Duration) -> serde_json::Value {
    let call = "n = 1";
    let read = "n = len(rows)";
    let (stateless, _) = api_series(sandbox, call, n, gap).await;
    let mut rows = serde_json::Map::new();
    for (label, count) in [("1KB", 24), ("64KB", 2_200), ("1MB", 36_000)] {
        let make = format!(
            "rows = [{{'id': i, 'name': 'row%d' % i, 'score': i * 0.5}} for i in range({count})]"
        );
        let (_, state) = session_series(sandbox, &make, &[], 1, Duration::ZERO).await;
        let (ms, after) = session_series(sandbox, call, &state, n, gap).await;
        let (read_ms, _) = session_series(sandbox, read, &state, n, gap).await;
        rows.insert(
            label.into(),
            json!({
                "state_bytes": after.len(),
                "session_ms": ms,
                "stateless_ms": stateless,
                "overhead_ms": ms - stateless,
                "reading_ms": read_ms,
                "reading_overhead_ms": read_ms - stateless,
            }),
        );
    }
    json!({ "sessions": rows, "n": n, "gap_ms": gap.as_millis() as u64 })
}

/// `n` calls through `toolgate serve` on one kept-alive connection, each
/// after `gap`: the median in ms.
fn http_series(conn: &mut Conn, code: &str, n: usize, gap: Duration) -> f64 {
    let body = json!({ "code": code }).to_string();
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        std::thread::sleep(gap);
        let t = Instant::now();
        let (status, resp) = conn.post("/tools/python.execute", &body);
        times.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&resp));
    }
    median(times)
}

fn main() {
    toolgate_python::sandbox::zygote::maybe_run();
    let Args {
        n,
        http,
        sessions,
        in_process,
        corpus,
        gap_ms,
        dir,
    } = Args::parse();
    let gap_apart = Duration::from_millis(gap_ms);
    let dir = match dir {
        Some(dir) => Some(dir),
        None if corpus.is_empty() => Some("bench/snippets".to_owned()),
        None => None,
    };
    let entries = dir.iter().flat_map(|dir| {
        std::fs::read_dir(dir).unwrap_or_else(|e| {
            eprintln!("toolgate-bench: cannot read the snippets in {dir}: {e}");
            std::process::exit(2);
        })
    });
    let mut snippets: Vec<(String, String)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "py"))
        .map(|e| {
            let name = e.path().file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(e.path()).unwrap())
        })
        .collect();
    snippets.sort();
    if in_process {
        let mut cases: Vec<in_process::Case> = snippets.into_iter().map(Into::into).collect();
        for path in &corpus {
            cases.extend(in_process::corpus_cases(path).unwrap_or_else(|e| {
                eprintln!("toolgate-bench: {e}");
                std::process::exit(2);
            }));
        }
        // Training a profile (a corpus) wants no pauses.
        let gap = if corpus.is_empty() {
            gap_apart
        } else {
            Duration::ZERO
        };
        println!("{}", in_process::run(&cases, n, gap));
        return;
    }

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let cfg = PythonConfig::default();
        let started = Instant::now();
        let sandbox = Sandbox::start(toolgate_python::sandbox_config(&cfg).unwrap()).unwrap();
        let warm_ms = started.elapsed().as_secs_f64() * 1e3;
        if sessions {
            println!("{}", sessions_bench(&sandbox, n, gap_apart).await);
            return;
        }
        let mut conn = http.as_deref().map(Conn::open);
        let mut out = serde_json::Map::new();
        for (name, code) in &snippets {
            let first = sandbox
                .execute(code, Duration::from_secs(60))
                .await
                .unwrap();
            assert_eq!(first.exit_code, 0, "{name}: {}", first.stderr);
            let (api_idle, child_ms) = api_series(&sandbox, code, n, gap_apart).await;
            let faults_before = machine_faults();
            let (api_b2b, child_b2b_ms) = api_series(&sandbox, code, n, Duration::ZERO).await;
            let faults = machine_faults()
                .zip(faults_before)
                .map(|(after, before)| after.saturating_sub(before) / n as u64);
            let mut row = json!({
                "api_idle_ms": api_idle,
                "api_b2b_ms": api_b2b,
                "child_ms": child_ms,
                "child_b2b_ms": child_b2b_ms,
                "api_b2b_faults": faults,
            });
            if let Some(conn) = conn.as_mut() {
                // The server process is separate; blocking here is harmless.
                http_series(conn, code, 1, Duration::ZERO);
                row["http_b2b_ms"] = json!(http_series(conn, code, n, Duration::ZERO));
                row["http_idle_ms"] = json!(http_series(conn, code, n, gap_apart));
            }
            out.insert(name.clone(), row);
        }
        println!(
            "{}",
            json!({ "sandbox": out, "zygote_warm_ms": warm_ms, "n": n, "gap_ms": gap_ms })
        );
    });
}

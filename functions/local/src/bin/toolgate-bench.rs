//! Per-call latency at the sandbox API (no HTTP): `Sandbox::execute` on each
//! snippet, one call at a time, as a warm Lambda sees it. Prints JSON medians.
//!
//! Usage: toolgate-bench [--n N] [DIR]   (DIR defaults to bench/snippets)

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolgate_shared::config::PythonConfig;
use toolgate_shared::sandbox::{Sandbox, SandboxConfig, alloc::SandboxAlloc};

#[global_allocator]
static ALLOC: SandboxAlloc = SandboxAlloc;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    toolgate_shared::sandbox::zygote::maybe_run();
    let mut n = 31usize;
    let mut dir = "bench/snippets".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--n" => n = args.next().and_then(|v| v.parse().ok()).expect("--n N"),
            other => dir = other.to_string(),
        }
    }
    let mut snippets: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {dir}: {e}"))
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "py"))
        .map(|e| {
            let name = e.path().file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(e.path()).unwrap())
        })
        .collect();
    snippets.sort();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let cfg = PythonConfig::default();
        let started = Instant::now();
        let sandbox = Arc::new(Sandbox::start(SandboxConfig::for_python(&cfg).unwrap()).unwrap());
        let warm_ms = started.elapsed().as_secs_f64() * 1e3;
        let timeout = Duration::from_secs(60);
        let mut out = serde_json::Map::new();
        for (name, code) in &snippets {
            let first = sandbox.execute(code, timeout).await.unwrap();
            assert_eq!(first.exit_code, 0, "{name}: {}", first.stderr);
            let mut times = Vec::with_capacity(n);
            let mut child = Vec::with_capacity(n);
            for _ in 0..n {
                // Calls arrive apart, as on a warm Lambda: the previous
                // call's replacement fork has finished.
                tokio::time::sleep(Duration::from_millis(20)).await;
                let t = Instant::now();
                let r = sandbox.execute(code, timeout).await.unwrap();
                times.push(t.elapsed().as_secs_f64() * 1e3);
                child.push(r.child_us as f64 / 1e3);
                assert_eq!(r.exit_code, 0);
            }
            out.insert(
                name.clone(),
                json!({ "median_ms": median(times), "child_median_ms": median(child) }),
            );
        }
        println!(
            "{}",
            json!({ "sandbox_api": out, "zygote_warm_ms": warm_ms, "n": n })
        );
    });
}

//! Load: 2,000 calls at concurrency 8 give zero errors, and neither the
//! server's nor the zygote's resident memory grows.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde_json::json;
use toolgate_e2e::timing::machine_lock;
use toolgate_e2e::{Server, children_of, rss_kib};

fn run_calls(s: &Arc<Server>, total: usize, workers: usize) -> (usize, f64) {
    let next = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let handles: Vec<_> = (0..workers)
        .map(|_| {
            let (s, next, errors) = (s.clone(), next.clone(), errors.clone());
            std::thread::spawn(move || {
                while next.fetch_add(1, Ordering::SeqCst) < total {
                    let r = s.post_json(
                        "/tools/python.execute",
                        &json!({"code": "import json\nprint('x')\nresult = json.loads('[1, 2, 3]')"}),
                    );
                    if r.status != 200 || r.json()["result"] != json!([1, 2, 3]) {
                        errors.fetch_add(1, Ordering::SeqCst);
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    (
        errors.load(Ordering::SeqCst),
        started.elapsed().as_secs_f64(),
    )
}

#[test]
fn two_thousand_calls_at_concurrency_eight() {
    let _machine = machine_lock();
    let s = Arc::new(Server::start(&[]));
    // Warm up allocator pools and connection handling first.
    let (e, _) = run_calls(&s, 200, 8);
    assert_eq!(e, 0);
    let zygote = children_of(s.pid())[0];
    let (server_before, zygote_before) = (rss_kib(s.pid()).unwrap(), rss_kib(zygote).unwrap());
    let (errors, secs) = run_calls(&s, 2000, 8);
    let (server_after, zygote_after) = (rss_kib(s.pid()).unwrap(), rss_kib(zygote).unwrap());
    println!(
        "2000 calls in {secs:.2}s ({:.0}/s); server RSS {server_before} -> {server_after} KiB; zygote RSS {zygote_before} -> {zygote_after} KiB",
        2000.0 / secs
    );
    assert_eq!(errors, 0);
    assert!(
        server_after < server_before + 16 * 1024,
        "server RSS grew from {server_before} to {server_after} KiB"
    );
    assert!(
        zygote_after < zygote_before + 4 * 1024,
        "zygote RSS grew from {zygote_before} to {zygote_after} KiB"
    );
}

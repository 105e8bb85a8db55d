//! The CPython fidelity corpus (`tests/fidelity/corpus.json`, made by
//! `scripts/gen-fidelity-corpus` from CPython 3.13): each case's script must
//! print exactly what CPython printed. A runtime's known differences are
//! listed, with a reason each, in `tests/fidelity/known-<runtime>.json`;
//! the check fails on any other difference, and on a listed case that now
//! matches (so the list only shrinks).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fidelity")
}

pub struct Case {
    pub id: String,
    pub module: String,
    pub code: String,
    pub stdout: String,
}

pub fn corpus() -> Vec<Case> {
    let text =
        std::fs::read_to_string(dir().join("corpus.json")).expect("tests/fidelity/corpus.json");
    let v: Value = serde_json::from_str(&text).expect("corpus.json is JSON");
    v["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| Case {
            id: c["id"].as_str().unwrap().to_owned(),
            module: c["module"].as_str().unwrap().to_owned(),
            code: c["code"].as_str().unwrap().to_owned(),
            stdout: c["stdout"].as_str().unwrap().to_owned(),
        })
        .collect()
}

/// `{case id: why it differs}` for `runtime` (`serve`, `worker`).
pub fn known(runtime: &str) -> BTreeMap<String, String> {
    let path = dir().join(format!("known-{runtime}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|_| "{}".into());
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs every case with `exec` (code → python.execute's output) on
/// `threads` threads; returns per-module `(matched, total)` and the ids
/// that differ, with what was printed.
pub fn run(
    cases: &[Case],
    threads: usize,
    exec: impl Fn(&str) -> Value + Sync,
) -> (BTreeMap<String, (usize, usize)>, BTreeMap<String, String>) {
    let next = AtomicUsize::new(0);
    let differ = Mutex::new(BTreeMap::new());
    let per = Mutex::new(BTreeMap::<String, (usize, usize)>::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(c) = cases.get(i) else { break };
                    let out = exec(&c.code);
                    let got = out["stdout"].as_str().unwrap_or_default();
                    let ok = got == c.stdout;
                    let mut p = per.lock().unwrap();
                    let e = p.entry(c.module.clone()).or_default();
                    e.1 += 1;
                    if ok {
                        e.0 += 1;
                    } else {
                        differ
                            .lock()
                            .unwrap()
                            .insert(c.id.clone(), format!("{out}"));
                    }
                }
            });
        }
    });
    (per.into_inner().unwrap(), differ.into_inner().unwrap())
}

/// The per-module table, as README shows it.
pub fn table(per: &BTreeMap<String, (usize, usize)>) -> String {
    let mut out = String::from("| module | cases | match |\n|---|---|---|\n");
    let (mut m, mut t) = (0, 0);
    for (module, (ok, total)) in per {
        m += ok;
        t += total;
        out.push_str(&format!(
            "| {module} | {total} | {:.1}% |\n",
            100.0 * *ok as f64 / *total as f64
        ));
    }
    out.push_str(&format!(
        "| **all** | {t} | {:.1}% |\n",
        100.0 * m as f64 / t.max(1) as f64
    ));
    out
}

/// Fails unless exactly the listed cases differ on `runtime`.
pub fn check(runtime: &str, exec: impl Fn(&str) -> Value + Sync, threads: usize) {
    let cases = corpus();
    assert!(
        cases.len() > 100,
        "the corpus is too small: {}",
        cases.len()
    );
    let (per, differ) = run(&cases, threads, exec);
    let report = table(&per);
    eprintln!("fidelity on {runtime}:\n{report}");
    let out = std::env::temp_dir().join(format!("toolgate-fidelity-{runtime}.md"));
    let _ = std::fs::write(&out, &report);
    let known = known(runtime);
    let by_id: BTreeMap<&str, &Case> = cases.iter().map(|c| (c.id.as_str(), c)).collect();
    let mut problems = Vec::new();
    for (id, got) in &differ {
        if !known.contains_key(id) {
            let c = by_id[id.as_str()];
            problems.push(format!(
                "{id} differs from CPython:\n--- code\n{}\n--- CPython\n{}\n--- {runtime}\n{got}\n",
                c.code, c.stdout
            ));
        }
    }
    for id in known.keys() {
        if !by_id.contains_key(id.as_str()) {
            problems.push(format!("{id} is listed as known but is not in the corpus"));
        } else if !differ.contains_key(id) {
            problems.push(format!(
                "{id} now matches CPython: remove it from known-{runtime}.json"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}\n{report}",
        problems.len(),
        problems.join("\n")
    );
}

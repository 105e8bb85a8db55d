//! The CPython fidelity corpus (`tests/fidelity/corpus.json`, made by
//! `scripts/gen-fidelity-corpus` from CPython 3.13): each case's script must
//! print exactly what CPython printed, compared example by example (each
//! example's output follows a `\x1e`). A runtime's known differences are
//! listed, `"<case id> @<example>": {"why": …, "got": …}`, in
//! `tests/fidelity/known-<runtime>.json`, with the output the runtime gives
//! there; the check fails on any other difference, on a listed example that
//! now differs in another way (so a known difference cannot get worse
//! unseen), and on one that now matches (so the list only shrinks).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

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
    let path = dir().join("corpus.json");
    let text = std::fs::read_to_string(&path).expect("tests/fidelity/corpus.json");
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

/// A known difference: why the runtime differs there, and what it prints.
pub struct Known {
    pub why: String,
    pub got: String,
}

/// `{"<case id> @<example>": {"why", "got"}}` for `runtime` (`serve`,
/// `worker`).
pub fn known(runtime: &str) -> BTreeMap<String, Known> {
    let path = dir().join(format!("known-{runtime}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|_| "{}".into());
    let v: BTreeMap<String, Value> =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    v.into_iter()
        .map(|(key, entry)| {
            let field = |name: &str| {
                entry[name].as_str().map(String::from).unwrap_or_else(|| {
                    panic!("{}: {key} needs \"{name}\" (a string)", path.display())
                })
            };
            let extra = entry
                .as_object()
                .is_some_and(|o| o.keys().any(|k| k != "why" && k != "got"));
            assert!(
                !extra,
                "{}: {key} holds more than why and got",
                path.display()
            );
            let k = Known {
                why: field("why"),
                got: field("got"),
            };
            (key, k)
        })
        .collect()
}

/// Each example's output: what follows its mark.
fn examples(stdout: &str) -> Vec<&str> {
    stdout.split('\u{1e}').skip(1).collect()
}

/// What one run found.
#[derive(Default)]
pub struct Outcome {
    /// Per module: examples matched, examples in all.
    pub per_module: BTreeMap<String, (usize, usize)>,
    /// `"<id> @<n>"` (from 1): CPython's output and this runtime's.
    pub differ: BTreeMap<String, (String, String)>,
}

/// Runs every case with `exec` (code → python.execute's output) on
/// `threads` threads.
pub fn run(cases: &[Case], threads: usize, exec: impl Fn(&str) -> Value + Sync) -> Outcome {
    let next = AtomicUsize::new(0);
    let found = Mutex::new(Outcome::default());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while let Some(c) = cases.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let out = exec(&c.code);
                    let got = examples(out["stdout"].as_str().unwrap_or_default());
                    let mut f = found.lock().unwrap();
                    for (n, want) in examples(&c.stdout).into_iter().enumerate() {
                        let e = f.per_module.entry(c.module.clone()).or_default();
                        e.1 += 1;
                        match got.get(n) {
                            Some(g) if *g == want => e.0 += 1,
                            g => {
                                let shown = match g {
                                    Some(g) => g.to_string(),
                                    None => format!("(the script ended first) {out}"),
                                };
                                f.differ.insert(
                                    format!("{} @{}", c.id, n + 1),
                                    (want.to_owned(), shown),
                                );
                            }
                        }
                    }
                }
            });
        }
    });
    found.into_inner().unwrap()
}

/// The per-module table, as docs/sandbox.md shows it.
pub fn table(per: &BTreeMap<String, (usize, usize)>) -> String {
    let mut out = String::from("| module | examples | match |\n|---|---|---|\n");
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

/// Fails unless exactly the listed examples differ on `runtime`.
/// `TOOLGATE_FIDELITY_DIFF=FILE` writes every difference there, as JSON.
pub fn check(runtime: &str, exec: impl Fn(&str) -> Value + Sync, threads: usize) {
    let cases = corpus();
    assert!(
        cases.len() > 100,
        "the corpus is too small: {}",
        cases.len()
    );
    let found = run(&cases, threads, exec);
    let report = table(&found.per_module);
    eprintln!("fidelity on {runtime}:\n{report}");
    if let Ok(path) = std::env::var("TOOLGATE_FIDELITY_DIFF") {
        let all: BTreeMap<_, _> = found
            .differ
            .iter()
            .map(|(k, (w, g))| (k, json!({"cpython": w, "got": g})))
            .collect();
        let _ = std::fs::write(path, serde_json::to_string_pretty(&all).unwrap_or_default());
    }
    let known = known(runtime);
    let by_id: BTreeMap<&str, &Case> = cases.iter().map(|c| (c.id.as_str(), c)).collect();
    let case_of = |key: &str| {
        key.rsplit_once(" @")
            .map_or(key.to_owned(), |(id, _)| id.to_owned())
    };
    let mut problems = Vec::new();
    for (key, (want, got)) in &found.differ {
        match known.get(key) {
            None => problems.push(format!(
                "{key} differs from CPython:\n--- case\n{}\n--- CPython\n{want:?}\n--- {runtime}\n{got:?}\n",
                by_id[case_of(key).as_str()].code
            )),
            Some(k) if k.got != *got => problems.push(format!(
                "{key} differs from CPython in another way than known-{runtime}.json says:\n\
                 --- CPython\n{want:?}\n--- known\n{:?}\n--- {runtime} now\n{got:?}\n",
                k.got
            )),
            Some(_) => {}
        }
    }
    for key in known.keys() {
        if !by_id.contains_key(case_of(key).as_str()) {
            problems.push(format!("{key} is listed as known but is not in the corpus"));
        } else if !found.differ.contains_key(key) {
            problems.push(format!(
                "{key} now matches CPython: remove it from known-{runtime}.json"
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

//! `toolgate-bench --in-process`: the interpreter alone. One warm VM runs
//! each snippet (and the `code` of each case of `--corpus` files) over and
//! over, with no fork and no walls; medians in ms. Two uses:
//! - timing a change to the interpreter without the per-call process work
//!   the API series measure;
//! - training profile-guided optimization (`scripts/build-pgo`) on code
//!   agents write: the conformance cases and the fidelity corpus.
//!
//! A case with `state_from` is a session call: each run starts from the
//! state that script saved as a session's first call (the restore and the
//! save train too).
//!
//! Cases that would not end or would exhaust the process here (no deadline,
//! no memory cap, no stack guard in-process) are skipped: those the corpus
//! expects to time out, or to run out of memory or stack, and sleeps.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use toolgate_python::sandbox::vm::{Session, WarmVm};
use toolgate_shared::allowlist::DEFAULT_MODULES;
use toolgate_shared::files::Files;

use crate::common::median;

/// What marks a corpus case as meant to hit a wall.
const WALLS: [&str; 6] = [
    "\"timed_out\":true",
    "MemoryError",
    "RecursionError",
    "recursion",
    "sleep(",
    "while True",
];

/// One script to time.
pub struct Case {
    /// Its name in the output.
    pub name: String,
    /// The script.
    pub code: String,
    /// A session call's: the script whose saved state each run starts from.
    pub state_from: Option<String>,
}

impl From<(String, String)> for Case {
    fn from((name, code): (String, String)) -> Self {
        Case {
            name,
            code,
            state_from: None,
        }
    }
}

/// The cases of a corpus file (`{"cases": [{"code", "name" or "id",
/// "state_from"?}]}`) that are safe in-process.
pub fn corpus_cases(path: &str) -> Result<Vec<Case>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    let cases = doc["cases"]
        .as_array()
        .ok_or_else(|| format!("{path}: no \"cases\" array"))?;
    Ok(cases
        .iter()
        .enumerate()
        .filter(|(_, case)| {
            let text = case.to_string();
            !WALLS.iter().any(|w| text.contains(w))
        })
        .filter_map(|(i, case)| {
            let code = case["code"].as_str()?;
            let name = case["name"]
                .as_str()
                .or(case["id"].as_str())
                .map_or_else(|| format!("{path}#{i}"), str::to_owned);
            let state_from = case["state_from"].as_str().map(str::to_owned);
            Some(Case {
                name,
                code: code.to_owned(),
                state_from,
            })
        })
        .collect())
}

/// Each script `n` times in one warm VM, back to back, then `n` times each
/// after `gap` asleep: `{"in_process": {name: ms}, "in_process_apart": …}`.
/// The second is what the CPU's cold caches alone cost a call apart, with
/// no process work: the floor for the API's calls apart.
pub fn run(scripts: &[Case], n: usize, gap: Duration) -> Value {
    let allowed: Vec<String> = DEFAULT_MODULES.iter().map(|m| m.to_string()).collect();
    let started = Instant::now();
    let vm = WarmVm::new(&allowed).unwrap_or_else(|e| {
        eprintln!("toolgate-bench: the interpreter did not warm up: {e}");
        std::process::exit(1);
    });
    let warm_ms = started.elapsed().as_secs_f64() * 1e3;
    let (mut medians, mut apart, mut failed) = (Map::new(), Map::new(), Vec::new());
    fn session(state: &[u8]) -> Session<'_> {
        Session {
            state,
            cap: u64::MAX,
        }
    }
    for Case {
        name,
        code,
        state_from,
    } in scripts
    {
        let state = match state_from {
            Some(from) => match vm.run(from, &Files::new(), 0, Some(session(&[])), |_, _| {}) {
                first if first.exit_code == 0 && first.state.is_some() => first.state,
                // Its state was not made: the case fails, untimed.
                _ => {
                    failed.push(name.clone());
                    continue;
                }
            },
            None => None,
        };
        let mut exit = 0;
        let mut series = |pause: Duration| {
            let times = (0..n.max(1))
                .map(|_| {
                    std::thread::sleep(pause);
                    let t = Instant::now();
                    let session = state.as_deref().map(session);
                    exit = vm.run(code, &Files::new(), 0, session, |_, _| {}).exit_code;
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect();
            median(times)
        };
        medians.insert(name.clone(), series(Duration::ZERO).into());
        if !gap.is_zero() {
            apart.insert(name.clone(), series(gap).into());
        }
        if exit != 0 {
            failed.push(name.clone());
        }
    }
    // A corpus may mean a case to fail; a snippet that fails measures less.
    json!({ "in_process": medians, "in_process_apart": apart, "exited_nonzero": failed, "warm_ms": warm_ms, "n": n })
}

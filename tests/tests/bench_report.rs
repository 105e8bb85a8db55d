//! `bench/report.py`, which turns `bench/run`'s rounds into docs/benchmarks.md's table:
//! a ratio is the median of the rounds' own ratios (not the ratio of the
//! medians), a failed engine shows as ERR, and rounds that cannot be
//! compared are refused. The rounds are written here, small and by hand:
//! what is checked is the arithmetic, not a measurement.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bench-report-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One round's folder: our `dates` back to back in `ours` ms, monty's in
/// `monty` ms (None: monty failed), calls `gap` ms apart.
fn round(dir: &Path, ours: f64, monty: Option<f64>, gap: u64) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let sandbox = json!({
        "sandbox": {"dates": {"api_b2b_ms": ours, "api_idle_ms": ours, "http_b2b_ms": ours,
                              "http_idle_ms": ours, "child_b2b_ms": ours / 2.0, "child_ms": ours / 2.0,
                              "api_b2b_faults": 700}},
        "zygote_warm_ms": 120.0, "n": 5, "gap_ms": gap,
    });
    let monty_cell = match monty {
        Some(ms) => json!({"median_ms": ms, "median_apart_ms": ms, "error": null}),
        None => json!({"median_ms": null, "error": "ModuleNotFoundError"}),
    };
    let anchors = json!({"dates": {
        "cpython-exec": {"median_ms": 1.0, "error": null},
        "restricted": {"median_ms": 2.0, "error": null},
        "monty": monty_cell,
    }});
    let write = |name: &str, v: &Value| std::fs::write(dir.join(name), v.to_string()).unwrap();
    write("sandbox.json", &sandbox);
    write("anchors.json", &anchors);
    write("cold.json", &json!({"cold_start_ms": 150}));
    write(
        "in_process.json",
        &json!({"in_process": {"dates": 0.6}, "in_process_apart": {"dates": 0.9}}),
    );
    dir.to_path_buf()
}

fn report(rounds: &[PathBuf]) -> Output {
    Command::new("python3")
        .arg(workspace().join("bench/report.py"))
        .args(rounds)
        .output()
        .expect("run python3 bench/report.py")
}

/// A report that succeeded: its `dates` row, split into its cells, and its
/// whole text.
fn dates_row(rounds: &[PathBuf]) -> (Vec<String>, String) {
    let out = report(rounds);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("| dates |"))
        .unwrap_or_else(|| panic!("no dates row in:\n{text}"));
    let row = line.split('|').map(|c| c.trim().to_owned()).collect();
    (row, text)
}

#[test]
fn a_ratio_is_the_median_of_the_rounds_ratios() {
    let dir = scratch("ratios");
    // Rounds (ours ÷ monty): 1 ÷ 2, 4 ÷ 2, 3 ÷ 1 = 0.5, 2, 3: the median
    // ratio is 2.00×; the medians' ratio would be 3 ÷ 2 = 1.50×.
    let rounds = [
        round(&dir.join("r1"), 1.0, Some(2.0), 20),
        round(&dir.join("r2"), 4.0, Some(2.0), 20),
        round(&dir.join("r3"), 3.0, Some(1.0), 20),
    ];
    let (row, text) = dates_row(&rounds);
    // | dates | apart | back to back | …: ours back to back is cell 3,
    // monty's cell 8, API ÷ monty cell 10.
    assert_eq!(row[3], "3.00", "our median: {row:?}");
    assert_eq!(row[8], "2.00", "monty's median: {row:?}");
    assert_eq!(row[10], "2.00×", "API ÷ monty: {row:?}");
    assert!(
        text.contains("round by round: dates 0.50, 2.00, 3.00"),
        "{text}"
    );
    assert!(text.contains("in 3 rounds"), "{text}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_engine_that_failed_in_a_round_shows_as_err() {
    let dir = scratch("err");
    let rounds = [
        round(&dir.join("r1"), 1.0, Some(2.0), 20),
        round(&dir.join("r2"), 1.0, None, 20),
    ];
    let (row, _) = dates_row(&rounds);
    assert_eq!(row[8], "ERR", "{row:?}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn rounds_that_cannot_be_compared_are_refused() {
    let dir = scratch("refused");
    let apart = [
        round(&dir.join("r1"), 1.0, Some(2.0), 20),
        round(&dir.join("r2"), 1.0, Some(2.0), 50),
    ];
    let unfinished = dir.join("r3");
    std::fs::create_dir_all(&unfinished).unwrap();
    for (rounds, says) in [
        (apart.to_vec(), "paused differently"),
        (vec![apart[0].clone(), unfinished], "not a finished round"),
        (vec![], "one folder per round"),
    ] {
        let out = report(&rounds);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(says), "{err}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_pause_names_the_columns() {
    let dir = scratch("gap");
    let (_, text) = dates_row(&[round(&dir.join("r1"), 1.0, Some(2.0), 50)]);
    assert!(text.contains("| API, 50 ms apart |"), "{text}");
    assert!(!text.contains("20 ms apart"), "{text}");
    assert!(!text.contains("round by round"), "one round: {text}");
    let _ = std::fs::remove_dir_all(dir);
}

/// `--also`: the sessions table (at the API and over HTTP, by state size)
/// and the Lambda-shaped table (ours against monty, latency and CPU, with
/// a snippet monty cannot run as "—").
#[test]
fn the_one_off_tables_follow_the_rounds() {
    let dir = scratch("also");
    let r = round(&dir.join("r1"), 2.0, Some(1.0), 20);
    let also = dir.join("also");
    std::fs::create_dir_all(&also).unwrap();
    let sizes = |k: f64| {
        json!({"n": 5, "sessions": {
            "1KB": {"stateless_ms": 0.5, "overhead_ms": 0.1 * k, "reading_overhead_ms": 0.2 * k},
            "64KB": {"stateless_ms": 0.5, "overhead_ms": 0.3 * k, "reading_overhead_ms": 2.5 * k},
            "1MB": {"stateless_ms": 0.5, "overhead_ms": 4.0 * k, "reading_overhead_ms": 60.0 * k},
        }})
    };
    let write = |name: &str, v: &Value| std::fs::write(also.join(name), v.to_string()).unwrap();
    write("sessions_api.json", &sizes(1.0));
    write("sessions_http.json", &sizes(2.0));
    write(
        "lambda_shaped.json",
        &json!({"mb": 1024, "cpu_share": 0.58, "n": 5, "gap_ms": 100,
                "frozen_between_calls": true, "snippets": {
            "hello": {"toolgate": {"ms": 1.5, "cpu_ms": 3.0, "after_ms": 0.4},
                      "monty": {"ms": 1.0, "cpu_ms": 1.0, "after_ms": 0.0}},
            "stats": {"toolgate": {"ms": 20.0, "cpu_ms": 25.0, "after_ms": 0.5},
                      "monty": {"error": "ModuleNotFoundError"}},
        }}),
    );
    let out = Command::new("python3")
        .arg(workspace().join("bench/report.py"))
        .arg("--also")
        .arg(&also)
        .arg(&r)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = |start: &str| {
        text.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no {start} row in:\n{text}"))
            .to_owned()
    };
    assert_eq!(row("| 64KB |"), "| 64KB | +0.30 | +2.50 | +0.60 | +5.00 |");
    assert_eq!(
        row("| hello |"),
        "| hello | 1.50 | 1.00 | 1.50× | 3.00 | 1.00 | 3.00× |"
    );
    assert_eq!(
        row("| stats |"),
        "| stats | 20.00 | ERR | — | 25.00 | ERR | — |"
    );
    assert!(
        text.contains("0.58 of a vCPU (per 100 ms), frozen between calls"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

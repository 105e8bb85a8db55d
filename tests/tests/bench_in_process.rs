//! `toolgate-bench --in-process`, which scripts/build-pgo trains
//! profile-guided optimization with: every training case and every bench
//! snippet runs to a clean exit in the sandbox's interpreter (a case that
//! failed would train the error path), and bad input is refused clearly.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use toolgate_e2e::timing::machine_share;
use toolgate_e2e::toolgate_bin;

fn bench_bin() -> PathBuf {
    toolgate_bin().with_file_name("toolgate-bench")
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `toolgate-bench --in-process --n 1 <extra> bench/snippets`'s report, from
/// the workspace; it must exit cleanly.
fn in_process(extra: &[&str]) -> Value {
    let root = workspace();
    let out = toolgate_e2e::captured::output(
        Command::new(bench_bin())
            .current_dir(&root)
            .args(["--in-process", "--n", "1"])
            .args(extra)
            .arg(root.join("bench/snippets")),
    )
    .expect("run toolgate-bench");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn the_training_corpus_and_the_snippets_run_cleanly_in_process() {
    let _share = machine_share();
    let root = workspace();
    let report = in_process(&["--corpus", "bench/pgo-training.json"]);
    assert_eq!(report["exited_nonzero"], serde_json::json!([]), "{report}");
    let timed = report["in_process"].as_object().expect("medians");
    let training: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("bench/pgo-training.json")).unwrap(),
    )
    .unwrap();
    for case in training["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let ms = timed[name].as_f64().unwrap_or(-1.0);
        assert!(ms > 0.0, "{name}: {ms}");
    }
    assert!(timed.contains_key("cpu_loop"), "{report}");
}

#[test]
fn the_snippets_are_timed_back_to_back_and_apart() {
    let _share = machine_share();
    let root = workspace();
    let report = in_process(&[]);
    let snippets = std::fs::read_dir(root.join("bench/snippets")).unwrap();
    let mut names = 0;
    for entry in snippets.map(Result::unwrap) {
        let path = entry.path();
        if path.extension().is_none_or(|x| x != "py") {
            continue;
        }
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        for series in ["in_process", "in_process_apart"] {
            let ms = report[series][&name].as_f64().unwrap_or(-1.0);
            assert!(ms > 0.0, "{series} {name}: {report}");
        }
        names += 1;
    }
    assert!(names >= 5, "{report}");
}

#[test]
fn a_missing_or_malformed_corpus_is_refused_with_its_name() {
    let scratch = std::env::temp_dir().join(format!("bench-corpus-{}", std::process::id()));
    std::fs::write(&scratch, "{\"cases\": 3}").unwrap();
    for (path, says) in [
        (PathBuf::from("/nonexistent/corpus.json"), "No such file"),
        (scratch.clone(), "no \"cases\" array"),
    ] {
        let out = toolgate_e2e::captured::output(
            Command::new(bench_bin())
                .args(["--in-process", "--corpus"])
                .arg(&path),
        )
        .expect("run toolgate-bench");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&*path.to_string_lossy()) && err.contains(says),
            "{err}"
        );
    }
    let _ = std::fs::remove_file(scratch);
}

/// A session case (`state_from`) runs from the state its script saves; one
/// whose script fails is reported, not timed from an empty state.
#[test]
fn a_session_case_runs_from_its_saved_state_or_is_reported() {
    let _share = machine_share();
    let scratch = std::env::temp_dir().join(format!("bench-sessions-{}.json", std::process::id()));
    let corpus = serde_json::json!({"cases": [
        {"name": "reads", "state_from": "rows = [1, 2]\n", "code": "n = len(rows)\n"},
        {"name": "unmade", "state_from": "rows = 1 / 0\n", "code": "n = 1\n"},
    ]});
    std::fs::write(&scratch, corpus.to_string()).unwrap();
    let report = in_process(&["--corpus", &scratch.to_string_lossy()]);
    let _ = std::fs::remove_file(&scratch);
    assert_eq!(
        report["exited_nonzero"],
        serde_json::json!(["unmade"]),
        "{report}"
    );
    assert!(
        report["in_process"]["reads"]
            .as_f64()
            .is_some_and(|ms| ms > 0.0),
        "{report}"
    );
    assert!(report["in_process"].get("unmade").is_none(), "{report}");
}

#[test]
fn a_pause_that_is_not_a_whole_number_of_ms_from_1_is_refused() {
    for gap in ["0", "-5", "soon", "10001"] {
        let out = toolgate_e2e::captured::output(
            Command::new(bench_bin()).args(["--in-process", &format!("--gap-ms={gap}")]),
        )
        .expect("run toolgate-bench");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{gap}: {err}");
        assert!(err.contains("--gap-ms"), "{gap}: {err}");
    }
}

/// `scripts/build-pgo lambda` links its instrumented arm64 trainer with
/// zig's cc, which takes rustc's `-u __llvm_profile_runtime` for a file
/// name: `scripts/pgo-rustc` puts `scripts/pgo-link` before the target's
/// linker for the binaries (not for build scripts, which name none), and
/// that passes the symbol on as `-Wl,-u,SYMBOL`. A stand-in rustc and
/// linker record what they were given (the real link needs zig and an
/// hour's build).
#[test]
fn the_arm64_trainers_link_hands_zig_the_profilers_symbol() {
    let dir = std::env::temp_dir().join(format!("pgo-link-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let record = dir.join("args");
    let stand_in = |name: &str| {
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"{name} linker=$TOOLGATE_PGO_LINKER\" \"$@\" >> '{}'\n",
                record.display()
            ),
        )
        .expect("write stand-in");
        let mut perm = std::fs::metadata(&path).expect("stat").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
        std::fs::set_permissions(&path, perm).expect("chmod");
        path
    };
    let rustc = stand_in("rustc");
    let zig = stand_in("zig");
    let scripts = workspace().join("scripts");
    // A stand-in just written may be briefly held open by a fork of this
    // process's other tests ("Text file busy"): try again.
    let run = |cmd: &mut Command| {
        for _ in 0..20 {
            let _ = std::fs::remove_file(&record);
            let out = toolgate_e2e::captured::output(cmd).expect("run the script");
            if out.status.success() {
                return std::fs::read_to_string(&record).expect("the stand-in's record");
            }
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("Text file busy"),
                "{out:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the stand-ins stayed busy");
    };
    let compile = |args: &[&str]| {
        run(Command::new(scripts.join("pgo-rustc"))
            .arg(&rustc)
            .args(args)
            .env("TOOLGATE_PGO_ZIG", "1")
            .env("TOOLGATE_PGO_RAW", "/raw")
            .env_remove("TOOLGATE_PGO_LINKER"))
    };

    let bin = compile(&[
        "--crate-name",
        "toolgate_bench",
        "--crate-type",
        "bin",
        "-C",
        &format!("linker={}", zig.display()),
    ]);
    let pgo_link = format!(
        "-Clinker={}",
        scripts
            .canonicalize()
            .expect("scripts")
            .join("pgo-link")
            .display()
    );
    let lines: Vec<&str> = bin.lines().collect();
    assert_eq!(
        lines.first().copied(),
        Some(format!("rustc linker={}", zig.display()).as_str()),
        "{bin}"
    );
    assert!(lines.contains(&"-Cprofile-generate=/raw"), "{bin}");
    assert_eq!(lines.last().copied(), Some(pgo_link.as_str()), "{bin}");

    // A build script: instrumented, linked by the default linker.
    let script = compile(&["--crate-name", "build_script_build", "--crate-type", "bin"]);
    assert!(script.contains("-Cprofile-generate=/raw"), "{script}");
    assert!(!script.contains("pgo-link"), "{script}");
    // A library: neither.
    let lib = compile(&["--crate-name", "serde", "--crate-type", "lib"]);
    assert!(
        !lib.contains("profile-generate") && !lib.contains("pgo-link"),
        "{lib}"
    );

    // The link itself, as rustc runs it: `-u SYMBOL` becomes one argument.
    let linked = run(Command::new(scripts.join("pgo-link"))
        .args(["a.o", "-u", "__llvm_profile_runtime", "-o", "out", "-u"])
        .env("TOOLGATE_PGO_LINKER", &zig));
    let args: Vec<&str> = linked.lines().skip(1).collect();
    assert_eq!(
        args,
        ["a.o", "-Wl,-u,__llvm_profile_runtime", "-o", "out", "-u"],
        "{linked}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// scripts/build-pgo lambda trains `toolgate-bench` (package toolgate) and
/// applies the profile to python-execute: the interpreter's crates must
/// resolve to the same features in both builds, or the function ships with
/// the profile's counts dropped (rustc only warns). Checked here so that a
/// dependency change that splits them fails CI, not a release. The other
/// pair differs (the Worker's wasm32 build), so the check can fail.
#[test]
fn the_arm64_trainer_builds_the_functions_interpreter() {
    let check = |trainer: &str, function: &str, target: &str| {
        toolgate_e2e::captured::output(
            Command::new(workspace().join("scripts/check-pgo-features"))
                .args([trainer, function, target]),
        )
        .expect("run scripts/check-pgo-features")
    };
    let same = check("toolgate", "python-execute", "aarch64-unknown-linux-gnu");
    assert!(same.status.success(), "{same:?}");
    assert!(
        String::from_utf8_lossy(&same.stdout).contains("build the same interpreter"),
        "{same:?}"
    );
    let differ = check(
        "toolgate-worker",
        "python-execute",
        "wasm32-unknown-unknown",
    );
    assert_eq!(differ.status.code(), Some(1), "{differ:?}");
    let why = String::from_utf8_lossy(&differ.stderr);
    assert!(why.contains("resolve differently"), "{why}");
    assert!(
        why.lines()
            .any(|l| (l.starts_with('-') || l.starts_with('+')) && l.contains(" v")),
        "the differences, package by package: {why}"
    );
}

//! The warm interpreter run as a script sees it.
use super::*;
use std::sync::{Arc, Mutex};

/// Runs `code` in a fresh warm VM; exit code, stdout and stderr.
fn run(code: &str) -> (i64, String, String) {
    let allowed: Vec<String> = crate::allowlist::DEFAULT_MODULES.map(String::from).to_vec();
    let vm = WarmVm::new(&allowed).expect("warm");
    let out = Arc::new(Mutex::new((String::new(), String::new())));
    let sink = out.clone();
    let o = vm.run(code, &Files::new(), 0, move |s, t| {
        let mut o = sink.lock().unwrap();
        match s {
            Stream::Stdout => o.0.push_str(t),
            Stream::Stderr => o.1.push_str(t),
        }
    });
    let (so, se) = out.lock().unwrap().clone();
    (o.exit_code, so, se)
}

#[test]
fn a_native_lazy_import_after_an_import_statement_is_not_a_statement() {
    for code in [
        "import json\nprint(__import__('_strptime').__name__)",
        "import time\nprint(time.strptime('2026', '%Y').tm_year)",
        "x = 1\nimport json\n\n\ny = [i for i in range(3)]\nimport time\nprint(time.strptime('2026', '%Y').tm_year)",
    ] {
        let (exit, out, err) = run(code);
        assert_eq!(exit, 0, "{code}: {out} {err}");
    }
    let (exit, _, err) = run("import json\nimport _strptime");
    assert_eq!(exit, 1);
    assert!(err.contains("is not allowed"), "{err}");
}

/// CPython 3.13's last line is `str(exc)`, and the built-in `open`
/// has no frame.
#[test]
fn a_traceback_ends_with_str_of_the_exception() {
    let (exit, _, err) = run("open('nope.txt')");
    assert_eq!(exit, 1);
    assert_eq!(
        err,
        "Traceback (most recent call last):\n  File \"<agent_script>\", line 1, in <module>\n    \
         open('nope.txt')\nFileNotFoundError: [Errno 2] No such file or directory: 'nope.txt'\n"
    );
    let (_, _, err) =
        run("class E(Exception):\n    def __str__(self):\n        return 'mine'\nraise E(1, 2)");
    assert!(err.ends_with("\nE: mine\n"), "{err}");
    let (_, _, err) = run("raise ValueError()");
    assert!(err.ends_with("\nValueError\n"), "{err}");
}

/// What CPython 3.13 prints running the same text as a file: the line
/// once (it was printed twice), and a compiler error's line too (its
/// `text` is None, which printed as `None`).
#[test]
fn a_syntax_error_shows_its_line_once_as_for_a_file() {
    for (code, want) in [
        (
            "f() = 1\n",
            "  File \"<agent_script>\", line 1\n    f() = 1\n    ^^^\nSyntaxError: cannot \
             assign to function call here. Maybe you meant '==' instead of '='?\n",
        ),
        (
            "x = 1\nreturn x\n",
            "  File \"<agent_script>\", line 2\n    return x\n    ^^^^^^^^\n\
             SyntaxError: 'return' outside function\n",
        ),
    ] {
        let (exit, _, err) = run(code);
        assert_eq!((exit, err.as_str()), (1, want), "{code}");
    }
}

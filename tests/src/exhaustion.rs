//! The exhaustion payloads: scripts that try to outlive their timeout,
//! exhaust memory, flood output or crash the interpreter, and the check of
//! each answer. Run on serve (`tests/exhaustion.rs`) and on the Worker
//! (`tests/worker.rs`), which name where their answers may differ and why.

use std::time::Duration;

use serde_json::Value;

use crate::Response;
use crate::timing::stop_bound;

/// The timeout both runtimes run the payloads with.
pub const TIMEOUT_S: u64 = 2;

/// Streams and `result` are capped at this many characters.
const STREAM_CAP: usize = 51_200;

/// The whole response stays under this (three capped fields, escaped).
const BODY_CAP: usize = 400_000;

pub struct Payload {
    pub name: &'static str,
    code: &'static str,
    /// Words one of which stderr names when the answer is exit 1.
    pub words: &'static [&'static str],
}

const fn p(name: &'static str, code: &'static str, words: &'static [&'static str]) -> Payload {
    Payload { name, code, words }
}

pub const PAYLOADS: &[Payload] = &[
    p("spin", "while True:\n    pass", &[]),
    p(
        "spin_catch_base",
        "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass",
        &[],
    ),
    p(
        "spin_in_finally",
        "try:\n    raise ValueError\nfinally:\n    while True:\n        pass",
        &[],
    ),
    p("native_sum", "result = sum(range(10**14))", &[]),
    p("bigint_power", "x = 10**10**9", &["memory"]),
    p(
        "regex_backtracking",
        "import re\nre.match(r'(a+)+$', 'a' * 64 + 'b')",
        &[],
    ),
    p("sleep", "import time\ntime.sleep(10**6)", &[]),
    p(
        "sort_1e8_floats",
        "import random\nxs = [random.random() for _ in range(10**8)]\nxs.sort()",
        &["memory"],
    ),
    p("string_bomb", "s = 'x' * (10**10)", &["memory"]),
    p("list_bomb", "l = [0] * (10**10)", &["memory"]),
    p(
        "append_growth",
        "l = []\nwhile True:\n    l.append('y' * 10000)",
        &["memory"],
    ),
    p(
        "dict_growth",
        "d = {}\ni = 0\nwhile True:\n    d[i] = str(i) * 10\n    i += 1",
        &["memory"],
    ),
    p("print_flood", "while True:\n    print('z' * 10000)", &[]),
    p(
        "huge_exception_message",
        "raise ValueError('e' * 10**8)",
        &["valueerror", "memory"],
    ),
    p("huge_result", "result = 'r' * 10**8", &[]),
    // 50,000 nested brackets: the parser's own recursion.
    p("nested_source", "", &["memory", "recursion", "syntax"]),
    p(
        "nested_json",
        "import json\njson.loads('[' * 10**6 + ']' * 10**6)",
        &["recursion", "memory", "valueerror", "jsondecodeerror"],
    ),
    p(
        "unbounded_recursion",
        "def f(n):\n    return f(n + 1)\nf(0)",
        &["recursion", "memory"],
    ),
    p(
        "infinite_list",
        "import itertools\nlist(itertools.count())",
        &["memory"],
    ),
    p(
        "spin_in_del",
        "class A:\n    def __del__(self):\n        while True:\n            pass\na = A()\ndel a",
        &[],
    ),
];

impl Payload {
    /// The script to send.
    pub fn code(&self) -> String {
        if self.name == "nested_source" {
            format!("x = {}1{}", "(".repeat(50_000), ")".repeat(50_000))
        } else {
            self.code.to_owned()
        }
    }

    /// What is wrong with `r`, answered after `wall`. `also` are more words
    /// an exit-1 stderr may name on this runtime (the caller says why).
    pub fn problems(&self, r: &Response, wall: Duration, also: &[&str]) -> Vec<String> {
        let name = self.name;
        if r.status != 200 {
            return vec![format!("{name}: HTTP {}", r.status)];
        }
        let mut found = Vec::new();
        if r.body.len() > BODY_CAP {
            found.push(format!("{name}: response of {} bytes", r.body.len()));
        }
        if wall > stop_bound(TIMEOUT_S) {
            found.push(format!("{name}: took {wall:?}"));
        }
        let out = r.json();
        let text = |k: &str| out[k].as_str().unwrap_or_default().to_owned();
        let (stdout, stderr) = (text("stdout"), text("stderr"));
        if stdout.chars().count() > STREAM_CAP || stderr.chars().count() > STREAM_CAP {
            found.push(format!("{name}: a stream over the cap"));
        }
        let ok = match out["exit_code"].as_i64() {
            Some(-1) => out["timed_out"] == true,
            Some(1) => {
                let low = stderr.to_lowercase();
                self.words.iter().chain(also).any(|w| low.contains(w))
            }
            Some(0) => name == "huge_result" && truncated_result(&out, &stderr),
            _ => false,
        };
        if !ok {
            found.push(format!(
                "{name}: exit {} timed_out {} stderr {:?}",
                out["exit_code"],
                out["timed_out"],
                stderr.chars().take(300).collect::<String>()
            ));
        }
        found
    }
}

/// A result over the cap is cut, marked, and the cut is noted on stderr.
fn truncated_result(out: &Value, stderr: &str) -> bool {
    let res = out["result"].as_str().unwrap_or_default();
    res.chars().count() <= STREAM_CAP && res.contains("truncated") && stderr.contains("over the")
}

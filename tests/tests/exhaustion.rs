//! The exhaustion suite: payloads that try to outlive their timeout, exhaust
//! memory, flood output or crash the interpreter. Each must end within the
//! timeout plus `LATE_MARGIN`, with exit -1 or an error naming the cause; the
//! response stays bounded; the server stays healthy; no process survives.

use std::time::{Duration, Instant};

use serde_json::json;
use toolgate_e2e::timing::{machine_lock, poll_until, stop_bound};
use toolgate_e2e::{IDLE_PROCESSES, Server, descendants_of};

const TIMEOUT_S: u64 = 2;

/// (name, code, acceptable stderr words when exit_code is 1)
const PAYLOADS: &[(&str, &str, &[&str])] = &[
    ("spin", "while True:\n    pass", &[]),
    (
        "spin_catch_base",
        "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass",
        &[],
    ),
    (
        "spin_in_finally",
        "try:\n    raise ValueError\nfinally:\n    while True:\n        pass",
        &[],
    ),
    ("native_sum", "result = sum(range(10**14))", &[]),
    ("bigint_power", "x = 10**10**9", &["memory"]),
    (
        "regex_backtracking",
        "import re\nre.match(r'(a+)+$', 'a' * 64 + 'b')",
        &[],
    ),
    ("sleep", "import time\ntime.sleep(10**6)", &[]),
    (
        "sort_1e8_floats",
        "import random\nxs = [random.random() for _ in range(10**8)]\nxs.sort()",
        &["memory"],
    ),
    ("string_bomb", "s = 'x' * (10**10)", &["memory"]),
    ("list_bomb", "l = [0] * (10**10)", &["memory"]),
    (
        "append_growth",
        "l = []\nwhile True:\n    l.append('y' * 10000)",
        &["memory"],
    ),
    (
        "dict_growth",
        "d = {}\ni = 0\nwhile True:\n    d[i] = str(i) * 10\n    i += 1",
        &["memory"],
    ),
    ("print_flood", "while True:\n    print('z' * 10000)", &[]),
    (
        "huge_exception_message",
        "raise ValueError('e' * 10**8)",
        &["valueerror", "memory"],
    ),
    ("huge_result", "result = 'r' * 10**8", &[]),
    // Replaced at run time by 50,000 nested brackets.
    ("nested_source", "", &[]),
    (
        "nested_json",
        "import json\njson.loads('[' * 10**6 + ']' * 10**6)",
        &["recursion", "memory", "valueerror", "jsondecodeerror"],
    ),
    (
        "unbounded_recursion",
        "def f(n):\n    return f(n + 1)\nf(0)",
        &["recursion", "memory"],
    ),
    (
        "infinite_list",
        "import itertools\nlist(itertools.count())",
        &["memory"],
    ),
    (
        "spin_in_del",
        "class A:\n    def __del__(self):\n        while True:\n            pass\na = A()\ndel a",
        &[],
    ),
];

#[test]
fn every_payload_ends_on_time_bounded_and_leaves_the_server_healthy() {
    let _machine = machine_lock();
    let s = Server::start(&[("TOOLGATE_PYTHON_TIMEOUT", &TIMEOUT_S.to_string())]);
    s.exec("print(1)");
    poll_until(Duration::from_secs(10), "the warm spares forked", || {
        (descendants_of(s.pid()).len() == IDLE_PROCESSES).then_some(())
    });
    let nested = format!("x = {}1{}", "(".repeat(50_000), ")".repeat(50_000));
    let mut failures = Vec::new();
    for (name, code, words) in PAYLOADS {
        let code = if *name == "nested_source" {
            nested.as_str()
        } else {
            code
        };
        let started = Instant::now();
        let r = s.post_json("/tools/python.execute", &json!({ "code": code }));
        let wall = started.elapsed();
        if r.status != 200 {
            failures.push(format!("{name}: HTTP {}", r.status));
            continue;
        }
        if r.body.len() > 400_000 {
            failures.push(format!("{name}: response of {} bytes", r.body.len()));
        }
        let out = r.json();
        let stdout = out["stdout"].as_str().unwrap_or_default();
        let stderr = out["stderr"].as_str().unwrap_or_default();
        if stdout.chars().count() > 51_200 || stderr.chars().count() > 51_200 {
            failures.push(format!("{name}: a stream over the cap"));
        }
        if wall > stop_bound(TIMEOUT_S) {
            failures.push(format!("{name}: took {wall:?}"));
        }
        let ok = match out["exit_code"].as_i64() {
            Some(-1) => out["timed_out"] == true,
            Some(1) => {
                let low = stderr.to_lowercase();
                words.iter().any(|w| low.contains(w))
                    || (*name == "nested_source"
                        && (low.contains("memory")
                            || low.contains("recursion")
                            || low.contains("syntax")))
            }
            Some(0) => {
                *name == "huge_result" && {
                    let res = out["result"].as_str().unwrap_or_default();
                    res.chars().count() <= 51_200
                        && res.contains("truncated")
                        && stderr.contains("over the")
                }
            }
            _ => false,
        };
        if !ok {
            failures.push(format!(
                "{name}: exit {} timed_out {} stderr {:?}",
                out["exit_code"],
                out["timed_out"],
                stderr.chars().take(300).collect::<String>()
            ));
        }
        let next = s.exec("result = 6 * 7");
        if next["result"] != 42 {
            failures.push(format!("{name}: the next call failed: {next}"));
        }
    }
    // Spares are replaced after each call; a process left behind keeps the
    // count above the idle one until the limit.
    poll_until(
        Duration::from_secs(10),
        "only the zygote and its spares left",
        || (descendants_of(s.pid()).len() == IDLE_PROCESSES).then_some(()),
    );
    assert_eq!(s.get("/healthz").status, 200);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

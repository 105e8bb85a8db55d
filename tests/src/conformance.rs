//! The public conformance cases for python.execute, this project's own copy
//! written out as Rust (nothing is read from outside the repository at test
//! time), and the check of one response against a case. Used against
//! `toolgate serve` (tests/conformance.rs) and the Worker (tests/worker.rs).

use std::time::Instant;

use serde_json::{Value, json};

use crate::Response;

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Group {
    Default,
    Timeout(u64),
    Html,
}

pub enum E {
    Exit(i64),
    ExitIn(&'static [i64]),
    TimedOut(bool),
    Stdout(&'static str),
    Stderr(&'static str),
    StdoutHas(&'static str),
    StderrHas(&'static str),
    StderrAnyCi(&'static [&'static str]),
    StdoutLacks(&'static str),
    StderrLacks(&'static str),
    StdoutLen(usize),
    StderrLen(usize),
    StdoutLenMax(usize),
    StdoutMarkerAt(usize),
    Result(&'static str),
    ResultAbsent,
    ResultType(&'static str),
    ResultContains(&'static str),
    ResultNotContains(&'static [&'static str]),
    MaxWall(f64),
}
pub use E::*;

pub struct Case {
    pub name: &'static str,
    pub code: &'static str,
    pub group: Group,
    pub expect: &'static [E],
}

pub const CASES: &[Case] = &[
    Case {
        name: "hello_stdout",
        code: "print(\"hello world\")",
        group: Group::Default,
        expect: &[
            Exit(0),
            TimedOut(false),
            Stdout("hello world\n"),
            Stderr(""),
        ],
    },
    Case {
        name: "result_int",
        code: "result = 1 + 2",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"3"#)],
    },
    Case {
        name: "result_float",
        code: "result = 3.14",
        group: Group::Default,
        expect: &[Result(r#"3.14"#)],
    },
    Case {
        name: "result_str",
        code: "result = \"hello\"",
        group: Group::Default,
        expect: &[Result(r#""hello""#)],
    },
    Case {
        name: "result_bool",
        code: "result = True",
        group: Group::Default,
        expect: &[Result(r#"true"#)],
    },
    Case {
        name: "result_list",
        code: "result = [1, 2, 3]",
        group: Group::Default,
        expect: &[Result(r#"[1, 2, 3]"#)],
    },
    Case {
        name: "result_dict",
        code: "result = {\"a\": 1, \"b\": 2}",
        group: Group::Default,
        expect: &[Result(r#"{"a": 1, "b": 2}"#)],
    },
    Case {
        name: "result_none_omitted",
        code: "result = None",
        group: Group::Default,
        expect: &[Exit(0), ResultAbsent],
    },
    Case {
        name: "result_unset_omitted",
        code: "x = 1",
        group: Group::Default,
        expect: &[Exit(0), ResultAbsent],
    },
    Case {
        name: "result_nested",
        code: "result = {\"rows\": [{\"id\": 1, \"tags\": [\"a\", None]}], \"ok\": False}",
        group: Group::Default,
        expect: &[Result(
            r#"{"rows": [{"id": 1, "tags": ["a", null]}], "ok": false}"#,
        )],
    },
    Case {
        name: "result_tuple_is_array",
        code: "result = (1, 2)",
        group: Group::Default,
        expect: &[Result(r#"[1, 2]"#)],
    },
    Case {
        name: "result_frozenset_repr",
        code: "result = frozenset([1, 2, 3])",
        group: Group::Default,
        expect: &[Exit(0), ResultType("string"), ResultContains("frozenset")],
    },
    Case {
        name: "result_set_inside_list_repr",
        code: "result = [1, {2}]",
        group: Group::Default,
        expect: &[Exit(0), ResultType("string"), Result(r#""[1, {2}]""#)],
    },
    Case {
        name: "result_nan_repr",
        code: "result = float(\"nan\")",
        group: Group::Default,
        expect: &[Exit(0), ResultType("string"), Result(r#""nan""#)],
    },
    Case {
        name: "syntax_error",
        code: "def : pass",
        group: Group::Default,
        expect: &[
            Exit(1),
            TimedOut(false),
            StderrAnyCi(&["syntax", "invalid"]),
        ],
    },
    Case {
        name: "zero_division",
        code: "result = 1 / 0",
        group: Group::Default,
        expect: &[Exit(1), TimedOut(false), StderrHas("ZeroDivisionError")],
    },
    Case {
        name: "traceback_names_user_line_not_host",
        code: "x = 1\ny = 2\nraise ValueError(\"boom\")",
        group: Group::Default,
        expect: &[
            Exit(1),
            StderrHas("ValueError: boom"),
            StderrHas("line 3"),
            StderrLacks("/src/"),
            StderrLacks("/home/"),
            StderrLacks("/root/"),
            StderrLacks(".rs"),
        ],
    },
    Case {
        name: "stdout_kept_on_exception",
        code: "print(\"before\")\nraise RuntimeError(\"x\")",
        group: Group::Default,
        expect: &[Exit(1), Stdout("before\n"), StderrHas("RuntimeError: x")],
    },
    Case {
        name: "system_exit_int",
        code: "raise SystemExit(2)",
        group: Group::Default,
        expect: &[Exit(2), TimedOut(false), Stderr("")],
    },
    Case {
        name: "system_exit_none",
        code: "raise SystemExit()",
        group: Group::Default,
        expect: &[Exit(0)],
    },
    Case {
        name: "system_exit_str",
        code: "raise SystemExit(\"explicit error\")",
        group: Group::Default,
        expect: &[Exit(1), StderrHas("SystemExit: explicit error")],
    },
    Case {
        name: "import_math",
        code: "import math\nresult = math.sqrt(16)",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"4.0"#)],
    },
    Case {
        name: "import_submodule_top_level",
        code: "import json.decoder\nresult = 1",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"1"#)],
    },
    Case {
        name: "import_os_blocked",
        code: "import os\nresult = os.getcwd()",
        group: Group::Default,
        expect: &[Exit(1), StderrHas("not allowed")],
    },
    Case {
        name: "import_sys_blocked",
        code: "import sys",
        group: Group::Default,
        expect: &[Exit(1), StderrHas("Import of 'sys' is not allowed")],
    },
    Case {
        name: "import_subprocess_blocked",
        code: "import subprocess",
        group: Group::Default,
        expect: &[Exit(1), StderrHas("not allowed")],
    },
    Case {
        name: "dunder_import_blocked",
        code: "__import__(\"os\")",
        group: Group::Default,
        expect: &[Exit(1), StderrHas("not allowed")],
    },
    Case {
        name: "extra_module_allowed_by_config",
        code: "import html\nresult = html.escape(\"<a>\")",
        group: Group::Html,
        expect: &[Exit(0), Result(r#""&lt;a&gt;""#)],
    },
    Case {
        name: "extra_module_not_allowed_by_default",
        code: "import html",
        group: Group::Default,
        expect: &[Exit(1), StderrHas("not allowed")],
    },
    Case {
        name: "print_inside_function_is_captured",
        code: "def f():\n    print(\"inner\")\nf()",
        group: Group::Default,
        expect: &[Exit(0), Stdout("inner\n")],
    },
    Case {
        name: "class_attribute_assignment_works",
        code: "class A:\n    def __init__(self):\n        self.x = 1\nresult = A().x",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"1"#)],
    },
    Case {
        name: "sorted_zip_tuple_available",
        code: "result = [sorted([3, 1, 2]), list(zip([1, 2], \"ab\")), tuple([1])]",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"[[1, 2, 3], [[1, "a"], [2, "b"]], [1]]"#)],
    },
    Case {
        name: "augmented_item_assignment",
        code: "g = {\"n\": 0}\ng[\"n\"] += 5\nresult = g",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"{"n": 5}"#)],
    },
    Case {
        name: "fresh_state_per_call_a",
        code: "counter = 41\nresult = counter + 1",
        group: Group::Default,
        expect: &[Result(r#"42"#)],
    },
    Case {
        name: "fresh_state_per_call_b",
        code: "result = \"counter\" in dir()",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"false"#)],
    },
    Case {
        name: "timeout_one_second",
        code: "total = 0\nfor i in range(100_000_000):\n    total += i\nresult = total",
        group: Group::Timeout(1),
        expect: &[
            Exit(-1),
            TimedOut(true),
            Stderr("[Execution timed out after 1s]"),
            MaxWall(2.5),
        ],
    },
    Case {
        name: "timeout_uncatchable",
        code: "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass",
        group: Group::Timeout(1),
        expect: &[Exit(-1), TimedOut(true), MaxWall(2.5)],
    },
    Case {
        name: "timeout_in_native_builtin",
        code: "result = sum(range(10**13))",
        group: Group::Timeout(1),
        expect: &[Exit(-1), TimedOut(true), MaxWall(2.5)],
    },
    Case {
        name: "timeout_regex_backtracking",
        code: "import re\nresult = bool(re.match(r\"(a+)+$\", \"a\" * 64 + \"b\"))",
        group: Group::Timeout(1),
        expect: &[Exit(-1), TimedOut(true), MaxWall(2.5)],
    },
    Case {
        name: "timeout_keeps_partial_stdout",
        code: "print(\"started\")\nwhile True:\n    pass",
        group: Group::Timeout(1),
        expect: &[Exit(-1), TimedOut(true), Stdout("started\n")],
    },
    Case {
        name: "stdout_truncated_head_tail",
        code: "print(\"a\" * 60000)",
        group: Group::Default,
        expect: &[
            Exit(0),
            StdoutLen(51200),
            StdoutHas("\n\n... [truncated — 60001 chars total, limit 51200] ...\n\n"),
            StdoutMarkerAt(25572),
        ],
    },
    Case {
        name: "stdout_exact_limit",
        code: "print(\"b\" * 51199)",
        group: Group::Default,
        expect: &[Exit(0), StdoutLen(51200), StdoutLacks("truncated")],
    },
    Case {
        name: "stderr_truncated_too",
        code: "raise ValueError(\"e\" * 60000)",
        group: Group::Default,
        expect: &[Exit(1), StderrLen(51200), StderrHas("[truncated —")],
    },
    Case {
        name: "endless_print_stays_bounded",
        code: "while True:\n    print(\"x\" * 1000)",
        group: Group::Timeout(2),
        expect: &[Exit(-1), TimedOut(true), StdoutLenMax(51200), MaxWall(3.5)],
    },
    Case {
        name: "memory_bomb_string",
        code: "x = \"a\" * (10 ** 11)",
        group: Group::Default,
        expect: &[
            ExitIn(&[1, -1]),
            StderrAnyCi(&["memoryerror", "memory"]),
            MaxWall(20.0),
        ],
    },
    Case {
        name: "memory_bomb_growth",
        code: "l = []\nwhile True:\n    l.append(\"x\" * 100000)",
        group: Group::Default,
        expect: &[
            ExitIn(&[1, -1]),
            StderrAnyCi(&["memoryerror", "memory"]),
            MaxWall(20.0),
        ],
    },
    Case {
        name: "recursion_is_catchable",
        code: "def f(n):\n    return f(n + 1)\ntry:\n    f(0)\nexcept RecursionError:\n    result = \"caught\"",
        group: Group::Default,
        expect: &[Exit(0), Result(r#""caught""#)],
    },
    Case {
        name: "next_call_works_after_bombs",
        code: "result = 6 * 7",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"42"#)],
    },
    Case {
        name: "open_fails",
        code: "open(\"/etc/passwd\").read()",
        group: Group::Default,
        expect: &[Exit(1), Stdout("")],
    },
    Case {
        name: "subclasses_walk_reaches_no_host",
        code: "names = [c.__name__ for c in ().__class__.__base__.__subclasses__()]\nresult = [n for n in names if n in (\"Popen\", \"FileIO\", \"socket\", \"catch_warnings\")]",
        group: Group::Default,
        // The walk itself works; it finds no host class.
        expect: &[Exit(0), ResultNotContains(&["Popen", "FileIO", "socket"])],
    },
    Case {
        name: "module_attribute_leak_reaches_no_os",
        code: "import typing\nm = typing.sys.modules\nresult = m[\"os\"].getcwd()",
        group: Group::Default,
        expect: &[Exit(1)],
    },
    Case {
        name: "module_math",
        code: "import math\nresult = math.gcd(12, 18)",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"6"#)],
    },
    Case {
        name: "module_cmath",
        code: "import cmath\nresult = abs(cmath.sqrt(-4))",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"2.0"#)],
    },
    Case {
        name: "module_decimal",
        code: "import decimal\nresult = str(decimal.Decimal('1.10') + decimal.Decimal('2.20'))",
        group: Group::Default,
        expect: &[Exit(0), Result(r#""3.30""#)],
    },
    Case {
        name: "module_fractions",
        code: "import fractions\nresult = str(fractions.Fraction(1, 3) + fractions.Fraction(1, 6))",
        group: Group::Default,
        expect: &[Exit(0), Result(r#""1/2""#)],
    },
    Case {
        name: "module_statistics",
        code: "import statistics\nresult = statistics.median([3, 1, 2])",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"2"#)],
    },
    Case {
        name: "module_random",
        // CPython 3.13's sequence for this seed.
        code: "import random\nrandom.seed(7)\nresult = [random.randint(1, 6) for _ in range(5)] + [random.random(), random.choice('abcdef')]",
        group: Group::Default,
        expect: &[
            Exit(0),
            Result(r#"[3, 2, 4, 6, 1, 0.07243628666754276, "e"]"#),
        ],
    },
    Case {
        name: "module_string",
        code: "import string\nresult = string.ascii_lowercase[:3]",
        group: Group::Default,
        expect: &[Exit(0), Result(r#""abc""#)],
    },
    Case {
        name: "module_textwrap",
        code: "import textwrap\nresult = textwrap.wrap('aaa bbb ccc', 7)",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"["aaa bbb", "ccc"]"#)],
    },
    Case {
        name: "module_re",
        code: "import re\nresult = re.findall(r'\\d+', 'a1b22c333')",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"["1", "22", "333"]"#)],
    },
    Case {
        name: "module_json",
        code: "import json\nresult = json.loads(json.dumps({'k': [1, 2]}))",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"{"k": [1, 2]}"#)],
    },
    Case {
        name: "module_csv",
        code: "import csv\nrows = list(csv.reader(['a,b', '1,\"x,y\"']))\nresult = rows",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"[["a", "b"], ["1", "x,y"]]"#)],
    },
    Case {
        name: "module_collections",
        code: "import collections\nresult = collections.Counter('abca').most_common(1)[0][0]",
        group: Group::Default,
        expect: &[Exit(0), Result(r#""a""#)],
    },
    Case {
        name: "module_itertools",
        code: "import itertools\nresult = list(itertools.islice(itertools.count(5), 3))",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"[5, 6, 7]"#)],
    },
    Case {
        name: "module_functools",
        code: "import functools\nresult = functools.reduce(lambda a, b: a * b, [1, 2, 3, 4])",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"24"#)],
    },
    Case {
        name: "module_operator",
        code: "import operator\nresult = operator.add(2, 3)",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"5"#)],
    },
    Case {
        name: "module_copy",
        code: "import copy\na = [[1]]\nb = copy.deepcopy(a)\nb[0].append(2)\nresult = a",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"[[1]]"#)],
    },
    Case {
        name: "module_dataclasses",
        code: "import dataclasses\n@dataclasses.dataclass\nclass P:\n    x: int\n    y: int = 2\nresult = dataclasses.asdict(P(1))",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"{"x": 1, "y": 2}"#)],
    },
    Case {
        name: "module_enum",
        code: "import enum\nclass C(enum.Enum):\n    RED = 1\nresult = C.RED.name",
        group: Group::Default,
        expect: &[Exit(0), Result(r#""RED""#)],
    },
    Case {
        name: "module_typing",
        code: "import typing\nresult = typing.get_origin(typing.List[int]) is list",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"true"#)],
    },
    Case {
        name: "module_datetime",
        code: "import datetime\nresult = (datetime.date(2026, 3, 1) - datetime.date(2026, 2, 1)).days",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"28"#)],
    },
    Case {
        name: "module_time",
        code: "import time\nresult = time.gmtime(0).tm_year",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"1970"#)],
    },
    Case {
        name: "module_calendar",
        code: "import calendar\nresult = calendar.isleap(2024)",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"true"#)],
    },
    Case {
        name: "module_base64",
        code: "import base64\nresult = base64.b64encode(b'hi').decode()",
        group: Group::Default,
        expect: &[Exit(0), Result(r#""aGk=""#)],
    },
    Case {
        name: "module_hashlib",
        code: "import hashlib\nresult = hashlib.sha256(b'abc').hexdigest()[:8]",
        group: Group::Default,
        expect: &[Exit(0), Result(r#""ba7816bf""#)],
    },
    Case {
        name: "module_hmac",
        code: "import hmac, hashlib\nresult = hmac.new(b'k', b'm', hashlib.sha256).hexdigest()[:8]",
        group: Group::Default,
        // CPython 3.13's value.
        expect: &[Exit(0), Result(r#""b60090e3""#)],
    },
    Case {
        name: "module_struct",
        code: "import struct\nresult = struct.unpack('>H', b'\\x01\\x02')[0]",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"258"#)],
    },
    Case {
        name: "module_difflib",
        code: "import difflib\nresult = round(difflib.SequenceMatcher(None, 'abcd', 'abce').ratio(), 2)",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"0.75"#)],
    },
    Case {
        name: "module_pprint",
        code: "import pprint\nresult = pprint.pformat({'a': 1})",
        group: Group::Default,
        expect: &[Exit(0), Result(r#""{'a': 1}""#)],
    },
    Case {
        name: "module_bisect",
        code: "import bisect\nresult = bisect.bisect([1, 3, 5], 4)",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"2"#)],
    },
    Case {
        name: "module_heapq",
        code: "import heapq\nresult = heapq.nsmallest(2, [5, 1, 4, 2])",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"[1, 2]"#)],
    },
    Case {
        name: "module_array",
        code: "import array\nresult = array.array('i', [1, 2, 3]).tolist()",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"[1, 2, 3]"#)],
    },
    Case {
        name: "module_numbers",
        code: "import numbers\nresult = isinstance(3, numbers.Integral)",
        group: Group::Default,
        expect: &[Exit(0), Result(r#"true"#)],
    },
    Case {
        name: "module_unicodedata",
        code: "import unicodedata\nresult = unicodedata.name('A')",
        group: Group::Default,
        expect: &[Exit(0), Result(r#""LATIN CAPITAL LETTER A""#)],
    },
];

fn chars(v: &Value, k: &str) -> String {
    v[k].as_str()
        .unwrap_or_else(|| panic!("{k} is not a string in {v}"))
        .to_owned()
}

pub fn check(case: &Case, out: &Value, wall: f64) -> Vec<String> {
    let mut errs = Vec::new();
    let stdout = chars(out, "stdout");
    let stderr = chars(out, "stderr");
    let mut fail = |m: String| errs.push(m);
    for e in case.expect {
        match e {
            Exit(c) => {
                if out["exit_code"] != json!(c) {
                    fail(format!("exit_code {} != {c}", out["exit_code"]))
                }
            }
            ExitIn(cs) => {
                if !cs.iter().any(|c| out["exit_code"] == json!(c)) {
                    fail(format!("exit_code {} not in {cs:?}", out["exit_code"]))
                }
            }
            TimedOut(t) => {
                if out["timed_out"] != json!(t) {
                    fail(format!("timed_out {} != {t}", out["timed_out"]))
                }
            }
            Stdout(s) => {
                if stdout != *s {
                    fail(format!("stdout {stdout:?} != {s:?}"))
                }
            }
            Stderr(s) => {
                if stderr != *s {
                    fail(format!("stderr {stderr:?} != {s:?}"))
                }
            }
            StdoutHas(s) => {
                if !stdout.contains(s) {
                    fail(format!("stdout lacks {s:?}"))
                }
            }
            StderrHas(s) => {
                if !stderr.contains(s) {
                    fail(format!("stderr lacks {s:?}: {stderr:?}"))
                }
            }
            StderrAnyCi(ss) => {
                let low = stderr.to_lowercase();
                if !ss.iter().any(|s| low.contains(&s.to_lowercase())) {
                    fail(format!("stderr has none of {ss:?}: {stderr:?}"))
                }
            }
            StdoutLacks(s) => {
                if stdout.contains(s) {
                    fail(format!("stdout contains {s:?}"))
                }
            }
            StderrLacks(s) => {
                if stderr.contains(s) {
                    fail(format!("stderr contains {s:?}: {stderr:?}"))
                }
            }
            StdoutLen(n) => {
                if stdout.chars().count() != *n {
                    fail(format!("stdout length {} != {n}", stdout.chars().count()))
                }
            }
            StderrLen(n) => {
                if stderr.chars().count() != *n {
                    fail(format!("stderr length {} != {n}", stderr.chars().count()))
                }
            }
            StdoutLenMax(n) => {
                if stdout.chars().count() > *n {
                    fail(format!("stdout length {} > {n}", stdout.chars().count()))
                }
            }
            StdoutMarkerAt(n) => {
                let at = stdout
                    .find("\n\n... [truncated")
                    .map(|b| stdout[..b].chars().count());
                if at != Some(*n) {
                    fail(format!("marker at {at:?}, expected {n}"))
                }
            }
            Result(j) => {
                let want: Value = serde_json::from_str(j).expect("case JSON");
                if out.get("result") != Some(&want) {
                    fail(format!("result {:?} != {want}", out.get("result")))
                }
            }
            ResultAbsent => {
                if out.get("result").is_some() {
                    fail(format!("result present: {}", out["result"]))
                }
            }
            ResultType(t) => {
                let ok = match *t {
                    "string" => out["result"].is_string(),
                    other => panic!("unknown result type {other}"),
                };
                if !ok {
                    fail(format!("result {} is not a {t}", out["result"]))
                }
            }
            ResultContains(s) => {
                if !out["result"].to_string().contains(s) {
                    fail(format!("result {} lacks {s:?}", out["result"]))
                }
            }
            ResultNotContains(ss) => {
                let r = out.get("result").map(|r| r.to_string()).unwrap_or_default();
                for s in *ss {
                    if r.contains(s) {
                        fail(format!("result {r} contains {s:?}"))
                    }
                }
            }
            MaxWall(m) => {
                if wall > *m {
                    fail(format!("took {wall:.2}s, over {m}s"))
                }
            }
        }
    }
    errs
}

/// Runs every case of `group` under both tool names through `post` (path,
/// arguments) and returns how many ran and what failed, judged by `judge`
/// (`check`, or a runtime's variant of it).
pub fn run_group(
    group: Group,
    post: impl Fn(&str, &Value) -> Response,
    judge: impl Fn(&Case, &Value, f64) -> Vec<String>,
) -> (usize, Vec<String>) {
    let cases: Vec<&Case> = CASES.iter().filter(|c| c.group == group).collect();
    run_cases(cases.iter().copied(), post, judge)
}

/// Runs `cases` under both tool names, as [`run_group`] does.
pub fn run_cases<'a>(
    cases: impl IntoIterator<Item = &'a Case> + Clone,
    post: impl Fn(&str, &Value) -> Response,
    judge: impl Fn(&Case, &Value, f64) -> Vec<String>,
) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut ran = 0;
    for name in ["python.execute", "python__execute"] {
        for case in cases.clone() {
            let started = Instant::now();
            let r = post(&format!("/tools/{name}"), &json!({"code": case.code}));
            let wall = started.elapsed().as_secs_f64();
            ran += 1;
            if r.status != 200 {
                failures.push(format!(
                    "{} via {name}: HTTP {} {}",
                    case.name,
                    r.status,
                    String::from_utf8_lossy(&r.body)
                ));
                continue;
            }
            for e in judge(case, &r.json(), wall) {
                failures.push(format!("{} via {name}: {e}", case.name));
            }
        }
    }
    (ran, failures)
}

/// Fails the test with every failure `run_group` collected, one per line.
pub fn assert_no_failures(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

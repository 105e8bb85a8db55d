//! The warm interpreter run as a script sees it.
use super::*;
use crate::result;
use std::sync::{Arc, Mutex};

/// Runs `code` in a fresh warm VM; exit code, stdout and stderr.
fn run(code: &str) -> (i64, String, String) {
    let allowed: Vec<String> = toolgate_core::allowlist::DEFAULT_MODULES
        .map(String::from)
        .to_vec();
    let vm = WarmVm::new(&allowed).expect("warm");
    let out = Arc::new(Mutex::new((String::new(), String::new())));
    let sink = out.clone();
    let o = vm.run(code, &Files::new(), 0, None, move |s, t| {
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

/// Runs each script in a fresh warm VM (as each call is a fresh process),
/// the state saved by one given to the next; (exit, stdout, stderr) each.
fn session(codes: &[&str], cap: u64) -> Vec<Out> {
    session_states(codes, cap).0
}

/// A call's exit code, stdout and stderr.
type Out = (i64, String, String);

/// As [`session`], with the size of the state after each call and each
/// call's `result`.
fn session_states(codes: &[&str], cap: u64) -> (Vec<Out>, Vec<usize>, Vec<Option<String>>) {
    let allowed: Vec<String> = toolgate_core::allowlist::DEFAULT_MODULES
        .map(String::from)
        .to_vec();
    let mut state = Vec::new();
    let mut outs = Vec::new();
    let (mut sizes, mut results) = (Vec::new(), Vec::new());
    for code in codes {
        let vm = WarmVm::new(&allowed).expect("warm");
        let out = Arc::new(Mutex::new((String::new(), String::new())));
        let sink = out.clone();
        let session = Session { state: &state, cap };
        let o = vm.run(code, &Files::new(), 0, Some(session), move |s, t| {
            let mut o = sink.lock().unwrap();
            match s {
                Stream::Stdout => o.0.push_str(t),
                Stream::Stderr => o.1.push_str(t),
            }
        });
        if let Some(s) = o.state {
            state = s;
        }
        sizes.push(state.len());
        results.push(o.result_json);
        let (so, se) = out.lock().unwrap().clone();
        outs.push((o.exit_code, so, se));
    }
    (outs, sizes, results)
}

#[test]
fn a_session_carries_globals_as_one_interpreter_would() {
    let first = r#"
import collections, dataclasses, datetime, decimal, enum, fractions, json
n, s, b, f = 42, "text", b"\x00\xff", 1.5
shared = [1, 2]
pair = {"a": shared, "b": shared}
when = datetime.datetime(2026, 12, 1, 20, 0, tzinfo=datetime.timezone.utc)
money = decimal.Decimal("1.10")
third = fractions.Fraction(1, 3)
counts = collections.Counter("hello")
dq = collections.deque([1, 2], maxlen=5)
dd = collections.defaultdict(list, {"k": [1]})
Point = collections.namedtuple("Point", "x y")
p = Point(1, 2)

@dataclasses.dataclass
class Row:
    name: str
    tags: list = dataclasses.field(default_factory=list)
    def label(self):
        return self.name.upper()

class Color(enum.Enum):
    RED = 1
    GREEN = enum.auto()
    def shout(self):
        return self.name + "!"

class Node:
    count = 0
    def __init__(self, v):
        self.v = v
        Node.count += 1
    @property
    def double(self):
        return self.v * 2
    @classmethod
    def make(cls, v):
        return cls(v)

def add(x, y=10):
    return x + y

def counter():
    c = 0
    def step():
        nonlocal c
        c += 1
        return c
    return step

tick = counter()
tick()
row = Row("a", ["t"])
color = Color.GREEN
node = Node.make(3)
square = lambda v: v * v
gen = (i for i in range(3))
"#;
    let second = r#"
shared.append(3)
print(pair["b"], n, s, b, f)
print(when.isoformat(), money + 1, third * 3, counts.most_common(1), dq, dd["k"])
print(p, p._replace(x=5), p.x)
print(row, row.label(), Row("b"), dataclasses.asdict(row), dataclasses.fields(Row)[1].name)
print(color, color is Color.GREEN, Color(1), color.shout(), list(Color))
print(node.double, Node.count, isinstance(node, Node), Node.make(1).v)
print(add(1), tick(), tick(), square(4), json.dumps([1]))
print("gen" in globals())
"#;
    let out = session(&[first, second], 1 << 20);
    assert_eq!(out[0].0, 0, "{:?}", out[0]);
    assert!(
        out[0].2.contains("[session: \"gen\" was not kept:"),
        "{}",
        out[0].2
    );
    assert_eq!(out[1].0, 0, "{:?}", out[1]);
    assert_eq!(
        out[1].1,
        "[1, 2, 3] 42 text b'\\x00\\xff' 1.5\n\
         2026-12-01T20:00:00+00:00 2.10 1 [('l', 2)] deque([1, 2], maxlen=5) [1]\n\
         Point(x=1, y=2) Point(x=5, y=2) 1\n\
         Row(name='a', tags=['t']) A Row(name='b', tags=[]) {'name': 'a', 'tags': ['t']} tags\n\
         Color.GREEN True Color.RED GREEN! [<Color.RED: 1>, <Color.GREEN: 2>]\n\
         6 1 True 1\n\
         11 2 3 16 [1]\n\
         False\n"
    );
    assert_eq!(out[1].2, "");
}

/// A function an earlier call defined fails with that call's line in the
/// traceback (the running script's line there would be a lie).
#[test]
fn a_traceback_shows_the_line_of_the_call_that_defined_the_function() {
    let out = session(
        &[
            "x = 1\n\ndef half(v):\n    return v / 0\n",
            "y = 2\nhalf(y)\n",
        ],
        1 << 20,
    );
    assert_eq!(
        out[1].2,
        "Traceback (most recent call last):\n  File \"<agent_script>\", line 2, in <module>\n    \
         half(y)\n  File \"<agent_script>\", line 4, in half\n    return v / 0\n\
         ZeroDivisionError: division by zero\n"
    );
}

/// The table of module objects a state names (`_toolgate_state`, which a
/// script can reach) holds only what the walls left: each entry is still
/// its module's attribute, and no host or interpreter module is in it.
#[test]
fn the_state_module_holds_nothing_the_walls_removed() {
    let (exit, out, err) = run(
        "st = __import__('_toolgate_state')\nimport typing\nmods = typing.sys.modules\n\
         stale = [w for v in st._keep for w in [st._well_known.get(id(v))] if w and getattr(mods.get(w[0]), w[1], None) is not v]\n\
         hidden = {'sys', 'marshal', '_imp', 'gc', 'os', 'posix', '_io', 'io', 'builtins', '_thread'}\n\
         print(stale[:5], sorted({m for m, a in st._well_known.values()} & hidden), len(st._well_known) > 100)",
    );
    assert_eq!((exit, out.as_str()), (0, "[] [] True\n"), "{err}");
}

/// The warm image is out of the cycle collector's reach (`warm` freezes
/// it), so a script's collections walk only what the script made: after
/// warm-up nearly every tracked object is frozen, and a script that makes
/// 50,000 objects leaves the frozen count as it was.
#[test]
fn the_warm_image_is_frozen_out_of_the_collector() {
    use rustpython_vm::gc_state::gc_state;
    let allowed: Vec<String> = toolgate_core::allowlist::DEFAULT_MODULES
        .map(String::from)
        .to_vec();
    let vm = WarmVm::new(&allowed).expect("warm");
    let frozen = gc_state().get_freeze_count();
    let (g0, g1, g2) = gc_state().get_count();
    assert!(frozen > 10_000, "only {frozen} objects frozen");
    assert!(
        g0 + g1 + g2 < frozen / 20,
        "{frozen} frozen, but ({g0}, {g1}, {g2}) still in the generations"
    );
    let o = vm.run(
        "rows = [{'id': i, 'tags': [i]} for i in range(25_000)]\nresult = len(rows)",
        &Files::new(),
        0,
        None,
        |_, _| {},
    );
    assert_eq!(o.exit_code, 0);
    assert_eq!(gc_state().get_freeze_count(), frozen);
}

/// What the review of sessions found: code exec'd from bytes is carried,
/// code compiled with `optimize` comes back the same, and a module no
/// script may import is dropped at save (so what shares objects with it
/// is not mangled on restore).
#[test]
fn a_session_keeps_exec_bytes_optimized_code_and_drops_host_modules() {
    let out = session(
        &[
            "important = [1, 2]\nexec(b'def g():\\n    return 7\\n')\n\
             exec(compile('def outer():\\n    assert (lambda: \"from assert\")()\\n    def a():\\n        return \"a\"\\n    return a\\n', 'm', 'exec', optimize=1))\n\
             a = outer()\nimport typing\nb = 'B'\nmixed = ['A', typing.sys]\nc = [b, b]\nd = {'k': b}",
            "print(important, g(), a(), c, d, 'mixed' in dir())",
        ],
        1 << 20,
    );
    assert_eq!(out[0].0, 0, "{:?}", out[0]);
    assert_eq!(
        out[0].2,
        "[session: \"mixed\" was not kept: module 'sys' is not one a script may import]\n"
    );
    assert_eq!(
        (out[1].0, out[1].1.as_str(), out[1].2.as_str()),
        (0, "[1, 2] 7 a ['B', 'B'] {'k': 'B'} False\n", "")
    );
}

/// The Worker zeroes the frozen code of the modules its warm image imported
/// (`retire_imported`): afterwards no route may read that code (the module
/// wall answers as for a missing module), and the modules still import.
#[test]
fn retired_frozen_code_is_unreachable_and_its_modules_still_import() {
    let allowed: Vec<String> = toolgate_core::allowlist::DEFAULT_MODULES
        .map(String::from)
        .to_vec();
    let vm = WarmVm::new(&allowed).expect("warm");
    let probe = "import json, csv\n\
                 try:\n    kind = type(json.__spec__.loader.get_code('json')).__name__\n\
                 except Exception as e:\n    kind = type(e).__name__\n\
                 result = [kind, json.dumps([1]), csv.QUOTE_ALL]";
    let run = |code: &str| {
        let out = Arc::new(Mutex::new(String::new()));
        let sink = out.clone();
        let o = vm.run(code, &Files::new(), 0, None, move |_, t| {
            sink.lock().unwrap().push_str(t)
        });
        let err = out.lock().unwrap().clone();
        (o.exit_code, o.result_json, err)
    };
    // The route exists: before, the loader hands out the frozen code.
    let (code, before, err) = run(probe);
    assert_eq!(code, 0, "{err}");
    assert_eq!(before.as_deref(), Some(r#"["code", "[1]", 1]"#), "{err}");

    let retired = vm
        .retire_imported(["json", "csv", "not.imported.module"])
        .expect("retire");
    assert_eq!(
        retired.into_iter().collect::<Vec<_>>(),
        ["csv", "json"],
        "only what is imported is retired"
    );
    let (code, after, err) = run(probe);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        after.as_deref(),
        // importlib's frozen loader finds no such frozen module.
        Some(r#"["ImportError", "[1]", 1]"#),
        "{err}"
    );
    assert!(vm.retire_imported(["re"]).is_err(), "retired twice");
}

/// A call restores the state only when the script first needs it; calls
/// that never do carry it on unchanged, and every way of reading the
/// namespace sees it whole, in its order, with what two names share still
/// shared: as one interpreter would.
#[test]
fn a_state_is_restored_when_first_needed_and_carried_unchanged_until_then() {
    let first = "shared = [1]\nn = 5\npair = {'a': shared, 'b': shared}\ngone = 1\nredone = 1\n\
                 def twice():\n    return n * 2\nresult = [n]\n";
    let untouched = [
        "x = 1\n",
        "del gone\nredone = 'new'\nx = 2\ndef later():\n    return n + x\n",
        "y = [i for i in range(3)]\n",
    ];
    let readers = [
        "print(pair['a'] is pair['b'] is shared, twice(), later())",
        "print([k for k in globals() if not k.startswith('__')])",
        "print(sorted(k for k in vars() if not k.startswith('__')) == sorted(k for k in dir() if not k.startswith('__')))",
        "print(locals()['n'], eval('n + 1'))",
        "exec('print(n * 3)')",
        "print(later.__globals__['n'])",
        "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    print(e.__traceback__.tb_frame.f_globals['n'], e.__traceback__.tb_frame.f_locals['n'])",
        "class K:\n    v = n\nprint(K.v)",
        "def f():\n    global n\n    n += 1\n    return n\nprint(f(), n)",
        "print(type(globals()['n']).__name__, repr(twice)[:18])",
        "print(redone, 'gone' in globals())",
        "try:\n    twice.__globals__ = {}\nexcept AttributeError as e:\n    print(e)",
        "try:\n    gone\nexcept NameError as e:\n    print(e)",
        "o = __builtins__.__import__\ndef imp(name, g=None, *a):\n    print(g['n'])\n    return o(name, g, *a)\n__builtins__.__import__ = imp\nimport json\n__builtins__.__import__ = o\ndel o, imp",
    ];
    for reader in readers {
        let mut codes = vec![first];
        codes.extend(untouched);
        codes.push(reader);
        let (out, _, results) = session_states(&codes, 1 << 20);
        for (i, o) in out.iter().enumerate() {
            assert_eq!(o.0, 0, "{reader}: call {i}: {o:?}");
            assert_eq!(o.2, "", "{reader}: call {i}");
        }
        let last = &out.last().unwrap().1;
        let want = match reader {
            r if r.starts_with("print(pair") => "True 10 7\n",
            r if r.contains("globals() if") => {
                "['shared', 'n', 'pair', 'redone', 'twice', 'result', 'x', 'later', 'y']\n"
            }
            r if r.contains("vars()") => "True\n",
            r if r.contains("locals()") => "5 6\n",
            r if r.starts_with("exec") => "15\n",
            r if r.contains("= {}") => "readonly attribute\n",
            r if r.contains("__globals__") => "5\n",
            r if r.contains("tb_frame") => "5 5\n",
            r if r.starts_with("class K") => "5\n",
            r if r.starts_with("def f") => "6 6\n",
            r if r.contains("type(") => "int <function twice at\n",
            r if r.starts_with("print(redone") => "new False\n",
            r if r.contains("def imp") => "5\n",
            _ => "name 'gone' is not defined\n",
        };
        assert_eq!(last, want, "{reader}");
        // A `result` no call since has set is still the script's `result`.
        assert_eq!(results[1].as_deref(), Some("[5]"), "{reader}");
        assert_eq!(results.last().unwrap().as_deref(), Some("[5]"), "{reader}");
    }
}

/// Calls that never restore the state but rebind a name keep the old
/// pickle unbound (the memo needs it) only until it outweighs the rest:
/// then the state is restored and saved whole, so it stays bounded.
#[test]
fn rebinding_without_restoring_keeps_the_state_bounded() {
    let sizes = stays_bounded(
        "keep = list(range(50))\nbig = 'a' * 20000\n",
        "big = 'b' * 20000\n",
        12,
        ("print(len(keep), big[:1], len(big))", "50 b 20000\n"),
        5 * 20000,
    );
    // The rebinding calls did keep the old pickle for a while (else this
    // test would not test the bound).
    assert!(sizes[2] > sizes[0] + 15000, "{sizes:?}");
}

/// A value that fails to restore is named, and the rest is there: its
/// restore runs the script's code (`__setstate__`), so the state is
/// restored before the script, as it always was.
#[test]
fn a_value_that_fails_to_restore_is_named_and_the_rest_kept() {
    let out = session(
        &[
            "ok = 5\nclass Bad:\n    def __setstate__(self, s):\n        raise ValueError('no')\nbad = Bad()\nbad.x = 1\n",
            "other = 1\n",
            "print(ok, other, 'bad' in globals())",
        ],
        1 << 20,
    );
    assert_eq!(
        out[1],
        (
            0,
            String::new(),
            "[session: \"bad\" could not be restored, and is gone: no]\n".into()
        )
    );
    assert_eq!(out[2], (0, "5 1 False\n".into(), String::new()), "{out:?}");
}

/// Code a restore runs (here `__setstate__`) reading a global sees what one
/// interpreter would: a name a later call rebound has its new value.
#[test]
fn code_a_restore_runs_sees_names_rebound_since() {
    let first = "VERSION = 1\nclass Rec:\n    def __setstate__(self, s):\n        self.__dict__.update(s)\n        self.v = VERSION\nr = Rec()\nr.x = 1\ndata = [1, 2]\n";
    let out = session(&[first, "VERSION = 2\n", "print(r.v, r.x, data)"], 1 << 20);
    assert_eq!(out[2], (0, "2 1 [1, 2]\n".into(), String::new()), "{out:?}");
    // A rebound value whose restore runs the script's code is not kept
    // unbound: that code would run again.
    let out = session(
        &[first, "del r\n", "print(data, 'r' in globals())"],
        1 << 20,
    );
    assert_eq!(
        out[2],
        (0, "[1, 2] False\n".into(), String::new()),
        "{out:?}"
    );
}

/// A script deep in a recursion when it first needs the state still gets
/// it: the restore does not spend the script's frame budget.
#[test]
fn a_restore_deep_in_a_recursion_restores() {
    let out = session(
        &[
            "def f():\n    return 1\n",
            "def probe(n):\n    try:\n        return probe(n + 1)\n    except RecursionError:\n        return f\nprint(probe(0)())",
        ],
        1 << 20,
    );
    assert_eq!(out[1], (0, "1\n".into(), String::new()), "{out:?}");
}

/// Calls that define functions again without reading the state add their
/// source each time; the sources added since the last full save count
/// towards restoring and saving all, so the state stays bounded.
#[test]
fn sources_added_without_restoring_stay_bounded() {
    let script = format!("# {}\ndef helper():\n    return 7\n", "x".repeat(30_000));
    stays_bounded(
        "keep = 1\n",
        &script,
        10,
        ("print(helper(), keep)", "7 1\n"),
        4 * 30_000,
    );
}

/// Runs `first`, `again` `times` over, then `last.0`, which must print
/// `last.1`; every call clean, and the state never `bound` bytes or more.
/// The state's size after each call.
fn stays_bounded(
    first: &str,
    again: &str,
    times: usize,
    last: (&str, &str),
    bound: usize,
) -> Vec<usize> {
    let mut codes = vec![first];
    codes.extend(std::iter::repeat_n(again, times));
    codes.push(last.0);
    let (out, sizes, _) = session_states(&codes, 1 << 20);
    assert!(out.iter().all(|o| o.0 == 0 && o.2.is_empty()), "{out:?}");
    assert_eq!(out.last().unwrap().1, last.1);
    let most = *sizes.iter().max().unwrap();
    assert!(most < bound, "the state grew to {most} bytes: {sizes:?}");
    sizes
}

/// A `__getstate__` that reads a name no call has restored, while the
/// state is saved, gets its value: the save restores the state then.
#[test]
fn code_a_save_runs_reads_names_not_restored() {
    let out = session(
        &[
            "CFG = {'v': 1}\n",
            "class D:\n    def __getstate__(self):\n        return {'cfg': CFG}\n    def __setstate__(self, s):\n        self.__dict__.update(s)\nd = D()\n",
            "print(d.cfg, CFG)",
        ],
        1 << 20,
    );
    assert_eq!(
        out[2],
        (0, "{'v': 1} {'v': 1}\n".into(), String::new()),
        "{out:?}"
    );
}

/// A state whose restore runs the script's code (a `__setstate__`) is
/// restored before the script, as it always was: what that code sees and
/// does cannot depend on what the script did first.
#[test]
fn a_state_whose_restore_runs_script_code_is_restored_first() {
    let first = "n = 0\nclass C:\n    def __setstate__(self, s):\n        global n\n        n += 1\n        self.__dict__.update(s)\nc = C()\nc.v = 1\ndef helper(s):\n    return s\ndata = [1, 2, 3]\n";
    let out = session(
        &[
            first,
            "n = 100\nc = None\ndel helper\n",
            "print(n, c, data)",
        ],
        1 << 20,
    );
    assert_eq!(out[1], (0, String::new(), String::new()), "{out:?}");
    assert_eq!(
        out[2],
        (0, "100 None [1, 2, 3]\n".into(), String::new()),
        "{out:?}"
    );
}

/// Frozen code keeps no table of locations (vendored rustpython-vm, PATCHES.md
/// 13): an instruction's location, decoded when asked for, is the one
/// marshal decoded for it before, in every code object of every frozen module.
#[test]
fn frozen_code_decodes_each_location_as_marshal_did() {
    use rustpython_vm::builtins::{PyCode, PyTuple};
    use rustpython_vm::bytecode::{BasicBag, CodeObject, ConstantData};
    use rustpython_vm::{AsObject, Py};

    fn compare(
        vm: &rustpython_vm::VirtualMachine,
        eager: &CodeObject,
        lazy: &Py<PyCode>,
        name: &str,
        counts: &mut (usize, usize),
    ) {
        assert!(lazy.code.locations.is_empty(), "{name}: a table was kept");
        let n = eager.locations.len();
        assert_eq!(n, lazy.instructions.len(), "{name}");
        // One index at a time decodes from the start: a sample, and the ends;
        // then the whole table, which is kept once decoded.
        for i in (0..n).step_by(37).chain(n.checked_sub(1)) {
            assert_eq!(lazy.location(i), Some(eager.locations[i]), "{name} @{i}");
        }
        assert_eq!(lazy.location(n), None, "{name}: past the end");
        assert_eq!(lazy.locations(), &*eager.locations, "{name}");
        let last = n.checked_sub(1);
        assert_eq!(
            last.and_then(|i| lazy.location(i)),
            last.map(|i| eager.locations[i])
        );
        *counts = (counts.0 + 1, counts.1 + n);
        let consts = lazy.as_object().get_attr("co_consts", vm).unwrap();
        let consts = consts.downcast_ref::<PyTuple>().unwrap();
        let lazy_nested = consts.iter().filter_map(|c| c.downcast_ref::<PyCode>());
        let eager_nested = eager.constants.iter().filter_map(|c| match c {
            ConstantData::Code { code } => Some(&**code),
            _ => None,
        });
        let mut pairs = 0;
        for (e, l) in eager_nested.zip(lazy_nested) {
            compare(vm, e, l, &format!("{name}.{}", e.obj_name), counts);
            pairs += 1;
        }
        let nested = eager.constants.iter();
        let want = nested
            .filter(|c| matches!(c, ConstantData::Code { .. }))
            .count();
        assert_eq!(pairs, want, "{name}: nested code objects");
    }

    let warm = WarmVm::new(&[]).expect("warm");
    warm.interp.enter(|vm| {
        let mut counts = (0, 0);
        for (name, module) in frozen_stdlib() {
            let eager: CodeObject = module.code.decode(BasicBag);
            let lazy = PyCode::new_ref_from_frozen(vm, module.code);
            compare(vm, &eager, &lazy, name, &mut counts);
        }
        // The whole frozen stdlib, not a few modules.
        eprintln!("frozen code objects and instructions: {counts:?}");
        assert!(counts.0 > 5_000 && counts.1 > 500_000, "{counts:?}");
    });
}

/// `result`'s JSON without the json module is `json.dumps(v, allow_nan=False)`
/// byte for byte for every plain value, and leaves every other value to it.
#[test]
fn plain_results_are_encoded_as_json_dumps_encodes_them() {
    const CASES: &str = r#"
text = ['', 'a', 'quote " backslash \\ slash /', '\x00\x01\x1f\x7f\x80', '\b\f\n\r\t',
        'é ü ß', '€', '\u2028\u2029', '😀 astral', '\ud800 lone', '\udfff', 'mixed é\n😀"']
ints = [0, 1, -1, 7, 2**31, 2**53 + 1, 2**63 - 1, -2**63, 2**64 - 1]
floats = [0.0, -0.0, 0.1, 1.5, -2.75, 1e16, 1e22, 1e-7, 5e-324, 1.7976931348623157e308,
          123456789.123, 3.141592653589793]
plain = [None, True, False, [], (), {}, [[]], {'': {}}] + text + ints + floats
plain += [text, tuple(ints), floats, {'a': 1, 'b': [1, 2.5, None], 'c': {'d': (True,)}},
          {1: 'int key', 2.5: 'float key', True: 'bool key', None: 'none key', -0.0: 'z'},
          {'1': 'a', 1: 'b'}, [[[[[[[[[[1]]]]]]]]]], list(range(1000)),
          {str(i): [i, i / 3, str(i)] for i in range(200)}]
deep = []
for _ in range(60):
    deep = [deep]
plain.append(deep)

class I(int): pass
class S(str): pass
class D(dict): pass
cyclic = []
cyclic.append(cyclic)
deeper = []
for _ in range(70):
    deeper = [deeper]
other = [float('nan'), float('inf'), -float('inf'), 2**64, -2**63 - 1, 10**40, I(3), S('s'),
         D(a=1), {1, 2}, b'bytes', 1j, object(), cyclic, deeper, [1, {2, 3}],
         {(1, 2): 'tuple key'}, {2**70: 'big key'}, {float('nan'): 1}, [float('inf')],
         {'k': S('v')}, (x for x in ())]
"#;
    let allowed: Vec<String> = toolgate_core::allowlist::DEFAULT_MODULES
        .map(String::from)
        .to_vec();
    let warm = WarmVm::new(&allowed).expect("warm");
    warm.interp.enter(|vm| {
        let scope = vm.new_scope_with_builtins();
        vm.run_string(scope.clone(), CASES, "<cases>")
            .map_err(|e| describe(vm, &e))
            .expect("cases");
        let list = |name: &str| {
            let v = scope.globals.get_item(name, vm).expect(name);
            v.downcast_ref::<rustpython_vm::builtins::PyList>()
                .expect("a list")
                .borrow_vec()
                .to_vec()
        };
        let kwargs = || {
            rustpython_vm::function::KwArgs::from_iter([(
                "allow_nan".to_owned(),
                vm.ctx.new_bool(false).into(),
            )])
        };
        let plain = list("plain");
        assert!(plain.len() > 40, "{}", plain.len());
        for v in &plain {
            let dumped = warm
                .dumps
                .call(
                    rustpython_vm::function::FuncArgs::new(vec![v.clone()], kwargs()),
                    vm,
                )
                .map_err(|e| describe(vm, &e))
                .expect("json.dumps");
            let want = dumped
                .downcast_ref::<rustpython_vm::builtins::PyStr>()
                .unwrap()
                .to_str()
                .unwrap();
            let got = result::plain_json(vm, v);
            assert_eq!(
                got.as_deref(),
                Some(want),
                "{:?}",
                v.repr(vm).unwrap().as_wtf8()
            );
        }
        for v in &list("other") {
            let got = result::plain_json(vm, v);
            assert_eq!(got, None, "{:?}", v.repr(vm).unwrap().as_wtf8());
        }
    });
}

/// `sys.stdout` (reachable through `pprint`) writes as CPython's does: str
/// only, returning its length in characters; tracebacks show no frame of it.
#[test]
fn the_output_streams_write_as_cpythons_do() {
    let code = r#"
import pprint
s = pprint.PrettyPrinter()._stream
print(s.write("héllo😀\n"))
try:
    s.write(1)
except TypeError as e:
    print(e)
s.writelines(["a", "b\n"])
pprint.pprint({"k": [1, 2]})
print(1, 2, sep="-", end="!\n")
print("via file=", file=pprint.PrettyPrinter(stream=None)._stream)
s.write(b"x")
"#;
    let (exit, out, err) = run(code);
    assert_eq!(exit, 1, "{out} {err}");
    assert_eq!(
        out,
        "héllo😀\n7\nwrite() argument must be str, not int\nab\n{'k': [1, 2]}\n1-2!\nvia file=\n"
    );
    assert!(
        err.ends_with(
            "  File \"<agent_script>\", line 13, in <module>\n    s.write(b\"x\")\nTypeError: write() argument must be str, not bytes\n"
        ),
        "{err}"
    );
}

/// The issue's chain (#51): a module made again after its `sys.modules`
/// entry is deleted is the warm one, wrapped and scrubbed; through it no
/// module outside the set is reached.
#[test]
fn recreating_a_module_gives_the_warm_one() {
    let code = r#"
import typing
s = typing.sys
imp = s.modules['_imp']
class Spec:
    def __init__(self, name):
        self.name = name
        self.origin = 'built-in'
reached = []
del s.modules['_imp']
try:
    fresh = imp.create_builtin(Spec('_imp'))
    left = s.modules.get('_imp', imp)
finally:
    s.modules['_imp'] = imp
if fresh is not imp or left is not imp:
    reached.append('a second _imp')
for name in ('_testinternalcapi', 'pyexpat', '_interpreters', '_asyncio'):
    try:
        if getattr(fresh.create_builtin(Spec(name)), '__name__', None) == name:
            reached.append(name)
    except BaseException:
        pass
for name, attrs in (('gc', ('get_objects', 'get_referrers')), ('marshal', ('loads',)),
                    ('time', ('clock_settime',)), ('sys', ('settrace', '_getframe'))):
    old = s.modules.pop(name)
    try:
        m = imp.create_builtin(Spec(name))
        left = s.modules.get(name, old)
    finally:
        s.modules[name] = old
    if (m is not old and m is not None) or left is not old:
        reached.append('a second ' + name)
    reached += [name + '.' + a for a in attrs if hasattr(m, a)]
print(reached)
"#;
    let (exit, out, err) = run(code);
    assert_eq!((exit, out.as_str()), (0, "[]\n"), "{err}");
}

/// `create_builtin` without `sys.modules` (deleted, or not a dict) answers
/// with the warm module or an exception, never the engine's panic.
#[test]
fn create_builtin_without_sys_modules_does_not_panic() {
    let code = r#"
import typing
s = typing.sys
imp, saved = s.modules['_imp'], s.modules
spec = lambda n: type('S', (), {'name': n})()
for how in ('del', 'int'):
    for name in ('gc', 'atexit', 'nope'):
        if how == 'del':
            del s.modules
        else:
            s.modules = 5
        try:
            m = imp.create_builtin(spec(name))
            print(type(m).__name__, m is saved.get(name))
        except Exception as e:
            print(type(e).__name__)
        finally:
            s.modules = saved
"#;
    let (exit, out, err) = run(code);
    assert_eq!(exit, 0, "{out} {err}");
    assert!(!err.contains("InternalError"), "{err}");
    assert_eq!(
        out,
        "module True\nRuntimeError\nModuleNotFoundError\n\
         module True\nTypeError\nModuleNotFoundError\n",
        "{err}"
    );
}

/// Every module the scrub or the wall changes is made during warm-up, so
/// the one instance the wall keeps is the changed one.
#[test]
fn every_scrubbed_module_is_made_at_warm_up() {
    let names: Vec<&str> = scrub::REMOVED
        .iter()
        .map(|(m, _)| *m)
        .chain(["_imp", "time"])
        .collect();
    let code = format!(
        "import typing\ns = typing.sys\nimp = s.modules['_imp']\nout = []\n\
         for n in {names:?}:\n    old = s.modules.pop(n)\n    \
         try:\n        m = imp.create_builtin(type('S', (), {{'name': n}})())\n    \
         finally:\n        s.modules[n] = old\n    out.append(m is old)\nprint(all(out), len(out))"
    );
    let (exit, out, err) = run(&code);
    assert_eq!(
        (exit, out.as_str()),
        (0, format!("True {}\n", names.len()).as_str()),
        "{err}"
    );
}

/// `time.sleep` converts its argument once, by `__index__`, as CPython
/// does: 2**63 seconds is CPython's OverflowError, not the engine's panic.
#[test]
fn sleep_converts_its_argument_once() {
    let code = r#"
import time
class Index:
    calls = 0
    def __init__(self, v): self.v = v
    def __index__(self):
        Index.calls += 1
        return self.v
for s in (Index(2**63), Index(2**64), 2**63, -2**100, Index(-1), Index(0)):
    try:
        time.sleep(s)
        print('slept')
    except (OverflowError, ValueError) as e:
        print(type(e).__name__, e)
print(Index.calls)
"#;
    let (exit, out, err) = run(code);
    let too_large = "OverflowError timestamp too large to convert to C PyTime_t\n";
    assert_eq!(exit, 0, "{err}");
    assert_eq!(
        out,
        format!(
            "{}ValueError sleep length must be non-negative\nslept\n4\n",
            too_large.repeat(4)
        )
    );
}

//! The vendored interpreter's own walls (#51), on a bare interpreter: no
//! module wall, scrub or engine fixes of Toolgate's, so each test shows the
//! patch in the vendored crates (vendor/rustpython-vm/PATCHES.md 16-22,
//! vendor/rustpython-stdlib/PATCHES.md 8-9) holding on
//! its own, whatever the layers above it do.

use rustpython_vm::{Interpreter, InterpreterBuilder, Settings};

fn bare() -> Interpreter {
    let builder = InterpreterBuilder::new().settings(Settings::default());
    let defs = rustpython_stdlib::stdlib_module_defs(&builder.ctx);
    builder
        .add_native_modules(&defs)
        .add_frozen_modules(toolgate_pyvm::vm::frozen_stdlib())
        .build()
}

/// Runs `code` on a bare interpreter and returns `str(result)`, or the
/// exception's type and message.
fn result_of(code: &str) -> String {
    bare().enter(|vm| {
        let scope = vm.new_scope_with_builtins();
        let ran = vm
            .run_string(scope.clone(), code, "<test>")
            .and_then(|_| scope.globals.get_item("result", vm))
            .and_then(|r| r.str(vm));
        match ran {
            Ok(s) => s.to_string(),
            Err(e) => {
                let e: rustpython_vm::PyObjectRef = e.into();
                let msg = e.str(vm).map(|s| s.to_string()).unwrap_or_default();
                format!("{}: {msg}", e.class().name())
            }
        }
    })
}

/// PATCHES.md 16: deleting or emptying `sys.modules` and creating a native
/// module again hands back the instance made first; `create_builtin` without
/// `sys.modules` at all does too (it panicked); one not made yet is an
/// AttributeError (PATCHES.md 22: it overflowed the native stack).
#[test]
fn a_native_module_is_made_once_whatever_sys_modules_holds() {
    let got = result_of(
        r#"
import sys, _imp, gc
class Spec:
    def __init__(self, name):
        self.name = name
        self.origin = 'built-in'
found = []
mods = sys.modules
del mods['gc']
if _imp.create_builtin(Spec('gc')) is not gc:
    found.append('a second gc')
mods['gc'] = gc
saved = dict(mods)
mods.clear()
if _imp.create_builtin(Spec('_imp')) is not _imp:
    found.append('a second _imp')
mods.update(saved)
del sys.modules
try:
    if _imp.create_builtin(Spec('gc')) is not gc:
        found.append('a second gc without sys.modules')
    if _imp.create_builtin(Spec('sys')) is not sys:
        found.append('not sys')
    # A missing attribute of `sys` without `sys.modules`: AttributeError
    # (it recursed until the native stack ran out: PATCHES.md 22).
    try:
        sys.nothing
    except AttributeError:
        pass
    # A module not made yet needs `sys.modules`: an error, not a panic.
    try:
        _imp.create_builtin(Spec('_bisect'))
        found.append('_bisect made without sys.modules')
    except AttributeError:
        pass
finally:
    sys.modules = mods
result = found
"#,
    );
    assert_eq!(got, "[]");
}

/// PATCHES.md 17: `get_frozen_object` turns no caller bytes into code.
#[test]
fn frozen_object_data_never_becomes_code() {
    let got = result_of(
        r#"
import _imp, marshal
data = marshal.dumps((lambda: 42).__code__)
try:
    code = _imp.get_frozen_object('anything', data)
    result = 'code: %r' % (code,)
except ImportError as e:
    result = str(e)
"#,
    );
    assert_eq!(got, "Frozen object named 'anything' is invalid");
}

/// PATCHES.md 18: `time.sleep` converts as CPython 3.13 does (its range,
/// whatever `__index__` returns; the range before the sign), and never
/// reaches the clock's overflow (it panicked at `Instant + Duration`).
#[test]
fn sleep_takes_cpythons_range_and_never_overflows_the_clock() {
    let got = result_of(
        r#"
import time
class Index:
    def __init__(self, v): self.v = v
    def __index__(self): return self.v
out = []
for s in (Index(2**63), Index(2**64), Index(2**62), 2**63, -2**63, 1e300, -1e300, Index(-1), -1):
    try:
        time.sleep(s)
        out.append('slept')
    except (OverflowError, ValueError) as e:
        out.append(f'{type(e).__name__}: {e}')
result = '\n'.join(out)
"#,
    );
    let big = "OverflowError: timestamp too large to convert to C PyTime_t";
    let float = "OverflowError: timestamp out of range for platform time_t";
    let negative = "ValueError: sleep length must be non-negative";
    let want = [big, big, big, big, big, float, float, negative, negative].join("\n");
    assert_eq!(got, want);
}

/// PATCHES.md 19: static types refuse new attributes and `__class__`
/// moves between them, as CPython's do; `_ast`'s stay open, as in CPython.
#[test]
fn static_types_are_immutable() {
    let got = result_of(
        r#"
import itertools, operator
out = []
try:
    type(None).__bool__ = lambda self: True
    out.append('NoneType took __bool__')
except TypeError as e:
    out.append(str(e))
found, seen, todo = [], set(), [object]
while todo:
    t = todo.pop()
    if t in seen:
        continue
    seen.add(t)
    try:
        todo.extend(type.__subclasses__(t))
    except TypeError:
        pass
    if t.__flags__ & (1 << 9) or t.__module__ in ('ast', '_ast'):
        continue
    try:
        setattr(t, '_tg_probe', 1)
    except TypeError:
        continue
    found.append(t.__name__)
    delattr(t, '_tg_probe')
out.append(repr(sorted(found)))
o = slice(1, 2, 3)
try:
    o.__class__ = itertools.count
    out.append('slice became count')
except TypeError as e:
    out.append(str(e))
import ast
ast.AST._tg_probe = 1
result = '\n'.join(out)
"#,
    );
    assert_eq!(
        got,
        "cannot set '__bool__' attribute of immutable type 'NoneType'\n[]\n\
         __class__ assignment only supported for mutable types or ModuleType subclasses"
    );
}

/// PATCHES.md 19, the other side: every native module still initialises
/// with its types immutable (a module that set an attribute on its own type
/// with `setattr` at init, as `_contextvars` did, now fails to import).
#[test]
fn every_native_module_initialises_with_immutable_types() {
    let got = result_of(
        r#"
import sys
failed = []
for name in sorted(sys.builtin_module_names):
    try:
        __import__(name)
    except Exception as e:
        if 'immutable type' in str(e):
            failed.append(f'{name}: {e}')
result = failed
"#,
    );
    assert_eq!(got, "[]");
}

/// rustpython-stdlib PATCHES.md 9: `stack_effect`'s `oparg` past `i32`
/// is an exception, never a panic.
#[test]
fn stack_effect_takes_any_oparg_without_panicking() {
    let got = result_of(
        r#"
import _opcode, dis
op = dis.opmap['POP_JUMP_IF_TRUE']
out = []
for a in (2**31, 2**63, -1, 2**32 + 1, 1):
    try:
        out.append(type(_opcode.stack_effect(op, a)).__name__)
    except (OverflowError, ValueError) as e:
        out.append(f'{type(e).__name__}: {e}')
result = out
"#,
    );
    // CPython 3.13 computes with the truncated oparg where this refuses
    // it (ValueError); either way an exception or a number, not a panic.
    assert_eq!(
        got,
        "['ValueError: invalid opcode or oparg', \
         'OverflowError: Python int too large to convert to C long', \
         'ValueError: invalid opcode or oparg', 'int', 'int']"
    );
}

//! The escape suite's routes and scripts, run on every runtime
//! (`tests/escapes.rs` on `toolgate serve`, `tests/worker.rs` on the
//! Worker): routes out of the sandbox, each of which then tries to create a
//! marker file, read a canary file and read a canary environment variable;
//! and the scripts that look for what the scrub and the capability gap
//! removed. None may find anything, whatever the runtime.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The variable a route must not read.
pub const ENV_NAME: &str = "TOOLGATE_ESCAPE_CANARY";

/// A canary file, a marker path and a canary variable's value, unique to
/// this run; the folder goes on drop.
pub struct Canaries {
    dir: PathBuf,
    pub canary: PathBuf,
    pub canary_text: String,
    pub marker: PathBuf,
    /// Give the runtime `ENV_NAME` with this value.
    pub env_value: String,
}

impl Canaries {
    pub fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("toolgate-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let canary = dir.join("canary.txt");
        let canary_text = format!("CANARY-FILE-{}", std::process::id());
        std::fs::write(&canary, &canary_text).unwrap();
        Self {
            marker: dir.join("marker"),
            canary,
            canary_text,
            env_value: format!("CANARY-ENV-{}", std::process::id()),
            dir,
        }
    }

    /// Runs every route with `post` (a script → the raw answer's status,
    /// body and JSON); what leaked, or stopped silently.
    pub fn run_routes(&self, post: impl Fn(&str) -> (u16, String, Value)) -> Vec<String> {
        let mut found = Vec::new();
        for (name, code) in ROUTES {
            let (status, body, out) =
                post(&route_script(code, &self.marker, &self.canary, ENV_NAME));
            assert_eq!(status, 200, "{name}: {body}");
            found.extend(leaks(
                name,
                &body,
                &out,
                &self.canary_text,
                &self.env_value,
                &self.marker,
            ));
        }
        found
    }
}

impl Drop for Canaries {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Helpers every route shares. `use_os` and `use_open` try the three actions
/// with whatever the route obtained; every attempt is caught and printed.
pub const PRELUDE: &str = r#"
def attempt(label, fn):
    try:
        v = fn()
        print(label, "->", repr(v)[:300])
    except BaseException as e:
        print(label, "blocked:", type(e).__name__, str(e)[:120])

def use_os(os):
    attempt("write", lambda: os.close(os.open(MARK, os.O_CREAT | os.O_WRONLY)))
    attempt("system", lambda: os.system("touch " + MARK))
    attempt("env", lambda: os.environ[ENV])
    attempt("getenv", lambda: os.getenv(ENV))
    attempt("read", lambda: os.read(os.open(CANARY, 0), 200))

def use_open(op):
    attempt("write", lambda: op(MARK, "w").write("x"))
    attempt("read", lambda: op(CANARY).read())

def use_import(imp):
    for name in ("os", "posix", "_io", "io", "subprocess", "_posixsubprocess", "socket", "_socket", "ctypes", "_ctypes", "pathlib"):
        mod = None
        try:
            mod = imp(name)
            print("imported", name)
        except BaseException as e:
            print("import", name, "blocked:", type(e).__name__)
        if mod is None:
            continue
        if hasattr(mod, "open") and name in ("_io", "io"):
            use_open(mod.open)
        elif name in ("os", "posix"):
            use_os(mod)
        elif name == "pathlib":
            attempt("pathlib-read", lambda: mod.Path(CANARY).read_text())
            attempt("pathlib-write", lambda: mod.Path(MARK).write_text("x"))
        elif name in ("subprocess",):
            attempt("popen", lambda: mod.run(["touch", MARK]))
        elif name in ("socket", "_socket"):
            attempt("socket", lambda: mod.socket())

def sub(name):
    return [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == name]
"#;

/// (route name, code). Each route ends by handing what it found to the helpers.
pub const ROUTES: &[(&str, &str)] = &[
    ("open_builtin", "use_open(open)"),
    (
        "builtins_dict_open",
        "b = __builtins__ if isinstance(__builtins__, dict) else vars(__builtins__)\nuse_open(b.get('open', open))",
    ),
    ("dunder_import_os", "use_import(__import__)"),
    ("import_statement_os", "import os\nuse_os(os)"),
    (
        "subclasses_walk",
        "for n in ('Popen', 'FileIO', '_wrap_close', 'socket', 'BufferedReader', 'TextIOWrapper'):\n    for c in sub(n):\n        print('found', n)\n        attempt(n, lambda: c(CANARY))",
    ),
    (
        "catch_warnings_module",
        "for c in sub('catch_warnings'):\n    m = c()._module\n    use_import(m.__builtins__['__import__'] if isinstance(m.__builtins__, dict) else m.__builtins__.__import__)",
    ),
    (
        "builtin_importer",
        "for c in sub('BuiltinImporter'):\n    for n in ('posix', '_io', '_socket', 'nt'):\n        attempt('load ' + n, lambda: c.load_module(n))",
    ),
    (
        "frozen_importer",
        "for c in sub('FrozenImporter'):\n    for n in ('os', 'subprocess', 'pathlib', 'io'):\n        attempt('load ' + n, lambda: use_os(c.load_module(n)))",
    ),
    (
        "function_globals",
        "import json\ng = json.dumps.__globals__\nuse_import(g['__builtins__']['__import__'] if isinstance(g['__builtins__'], dict) else g['__builtins__'].__import__)",
    ),
    (
        "method_globals_walk",
        "import random\nfor k, v in random.Random.seed.__globals__.items():\n    if k in ('_os', 'os', '_sys'):\n        attempt(k, lambda: use_os(v))",
    ),
    (
        "generator_frame",
        "g = (x for x in [1])\nf = g.gi_frame\nattempt('f_back', lambda: f.f_back.f_globals)\nattempt('builtins', lambda: use_import(f.f_builtins['__import__']))",
    ),
    (
        "coroutine_frame",
        "async def co():\n    pass\nc = co()\nattempt('frame', lambda: use_import(c.cr_frame.f_builtins['__import__']))\nc.close()",
    ),
    (
        "traceback_frame",
        "try:\n    1 / 0\nexcept Exception as e:\n    f = e.__traceback__.tb_frame\n    attempt('globals', lambda: f.f_globals.keys())\n    attempt('back', lambda: f.f_back)\n    attempt('import', lambda: use_import(f.f_builtins['__import__']))",
    ),
    (
        "format_string_attrs",
        "import json\nattempt('fmt', lambda: '{0.__init__.__globals__}'.format(json.JSONDecoder)[:200])\nattempt('fmt2', lambda: '{0.__class__.__base__.__subclasses__}'.format(()))",
    ),
    (
        "typing_sys_modules",
        "import typing\nm = typing.sys.modules\nattempt('os', lambda: use_os(m['os']))\nattempt('posix', lambda: use_os(m['posix']))\nattempt('io', lambda: use_open(m['_io'].open))",
    ),
    (
        "random_os",
        "import random\nuse_os(random._os) if hasattr(random, '_os') else attempt('urandom', lambda: random._urandom(8))",
    ),
    (
        "dataclasses_inspect_importlib",
        "import dataclasses\nins = dataclasses.inspect\nattempt('os', lambda: use_os(ins.os))\nattempt('importlib', lambda: use_import(ins.importlib.import_module))",
    ),
    (
        "exec_in_module_namespace",
        "import json\nexec('import os as _o', vars(json))\nuse_os(vars(json)['_o'])",
    ),
    (
        "exec_imports_in_json_namespace",
        "import json\nns = vars(json)\nfor n in ('posix', '_io', 'pathlib', 'subprocess', 'socket', 'ctypes', '_thread', 'gc', 'marshal'):\n    attempt('exec import ' + n, lambda: exec('import ' + n + ' as _m', ns))\nif '_m' in ns:\n    print('last module', ns['_m'])",
    ),
    (
        "importlib_bootstrap",
        "import typing\nb = typing.sys.modules.get('_frozen_importlib')\nattempt('find_and_load', lambda: use_os(b._find_and_load('posix', b.__import__)))\nattempt('import_module', lambda: use_import(lambda n: b._gcd_import(n)))",
    ),
    (
        "gc_objects",
        "import json\nexec('import gc as _gc', vars(json))\ngc = vars(json)['_gc']\nattempt('get_objects', lambda: len(gc.get_objects()))\nattempt('get_referrers', lambda: gc.get_referrers(open))",
    ),
    (
        "marshal_loads",
        "import json\nexec('import marshal as _mm', vars(json))\nmm = vars(json)['_mm']\nattempt('loads', lambda: mm.loads(b'\\xe3' + b'\\x00' * 64))",
    ),
    (
        "crafted_code_constructor",
        "def f():\n    pass\nC = type(f.__code__)\nattempt('new', lambda: C(0, 0, 0, 0, 0, 0, b'\\x00\\x00', (), (), (), 'x', 'x', 'x', 1, b'', b''))\nattempt('__new__', lambda: C.__new__(C))\nattempt('object_new', lambda: object.__new__(C))",
    ),
    (
        "code_replace",
        "def f():\n    return 1\nattempt('replace', lambda: f.__code__.replace(co_code=b'\\xff\\xff\\xff\\xff'))\nattempt('__replace__', lambda: f.__code__.__replace__(co_consts=()))\nimport copy\nattempt('copy.replace', lambda: copy.replace(f.__code__, co_code=b'\\x00'))",
    ),
    (
        "function_type_crafted",
        "def f():\n    return 1\nFT = type(f)\nattempt('FunctionType', lambda: FT(f.__code__, {'__builtins__': {}})())\nattempt('bad code', lambda: FT(b'\\x00', {}))",
    ),
    (
        "thread_module",
        "import typing\nattempt('_thread', lambda: typing.sys.modules['_thread'].start_new_thread(print, ()))\nimport json\nattempt('exec _thread', lambda: exec('import _thread', vars(json)))",
    ),
    (
        "clock_settime",
        "import time\nattempt('clock_settime', lambda: time.clock_settime(0, 0.0))\nattempt('clock_settime_ns', lambda: time.clock_settime_ns(0, 0))\nimport typing\nattempt('via sys', lambda: typing.sys.modules['time'].clock_settime(0, 0.0))",
    ),
    (
        "sys_frames_and_tracing",
        "import typing\ns = typing.sys\nfor n in ('_getframe', 'settrace', 'setprofile', 'setrecursionlimit', '_current_frames'):\n    attempt(n, lambda: getattr(s, n))",
    ),
    (
        "ctypes",
        "import json\nexec('import ctypes as _ct', vars(json))\nct = vars(json).get('_ct')\nattempt('cdll', lambda: ct.CDLL(None).system(b'touch ' + MARK.encode()))",
    ),
    (
        "socket",
        "import json\nexec('import socket as _so', vars(json))\nso = vars(json).get('_so')\nattempt('connect', lambda: so.create_connection(('127.0.0.1', 22), 1))",
    ),
    (
        "pathlib",
        "import json\nexec('import pathlib as _pl', vars(json))\npl = vars(json).get('_pl')\nattempt('read', lambda: pl.Path(CANARY).read_text())\nattempt('write', lambda: pl.Path(MARK).write_text('x'))",
    ),
    (
        "dummy_os_functions",
        "import inspect\nos = inspect.os\nfor n in ('getcwd', 'listdir', 'system', 'popen', 'getenv', 'environ', 'open', 'fork', 'execv', 'kill'):\n    attempt(n, lambda: getattr(os, n))\nuse_os(os)",
    ),
    (
        "builtins_module_via_print",
        "m = print.__self__\nattempt('open', lambda: use_open(m.open))\nattempt('import', lambda: use_import(m.__import__))",
    ),
    (
        "stdin_and_input",
        "attempt('input', lambda: input())\nimport typing\nattempt('stdin', lambda: typing.sys.stdin.read())\nattempt('breakpoint', lambda: breakpoint())",
    ),
    (
        "linecache_and_codecs",
        "import json\nns = vars(json)\nattempt('linecache', lambda: exec('import linecache as _lc', ns) or ns['_lc'].getlines(CANARY))\nattempt('codecs', lambda: exec('import codecs as _cd', ns) or ns['_cd'].open(CANARY).read())\nattempt('tokenize', lambda: exec('import tokenize as _tk', ns) or ns['_tk'].open(CANARY).read())",
    ),
    (
        "io_module_open",
        "import json\nns = vars(json)\nattempt('io', lambda: exec('import io as _io2', ns) or ns['_io2'].open(CANARY).read())\nattempt('_io.FileIO', lambda: exec('import _io as _io3', ns) or ns['_io3'].FileIO(CANARY))\nattempt('_pyio', lambda: exec('import _pyio as _py', ns) or ns['_py'].open(CANARY).read())",
    ),
    (
        "compile_and_eval",
        "attempt('eval', lambda: eval(\"__import__('os').system('touch ' + MARK)\"))\nattempt('exec', lambda: exec(compile(\"open(CANARY).read()\", 'json/decoder.py', 'exec'), {'CANARY': CANARY, '__name__': 'json.decoder'}))",
    ),
    (
        "fake_globals_import",
        "attempt('fake', lambda: use_os(__import__('os', {'__name__': 'json'})))\nattempt('fake2', lambda: __import__('posix', {'__name__': 'typing', '__dict__': {}}, None, (), 0))",
    ),
];

/// The whole script for route `code`, with its marker and canary paths.
fn route_script(code: &str, marker: &Path, canary: &Path, env_name: &str) -> String {
    format!(
        "MARK = {:?}\nCANARY = {:?}\nENV = {env_name:?}\n{PRELUDE}\n{code}\nprint('route done')\n",
        marker.display().to_string(),
        canary.display().to_string()
    )
}

/// What route `name` leaked, from its answer (`body`, the raw response) and
/// the marker's existence; it also fails a route that stopped silently (a
/// crash must not pass for a block).
fn leaks(
    name: &str,
    body: &str,
    out: &Value,
    canary_text: &str,
    env_value: &str,
    marker: &Path,
) -> Vec<String> {
    let mut found = Vec::new();
    if body.contains(canary_text) {
        found.push(format!("{name}: read the canary file"));
    }
    if body.contains(env_value) {
        found.push(format!("{name}: read the canary environment variable"));
    }
    if marker.exists() {
        found.push(format!("{name}: created the marker file"));
        let _ = std::fs::remove_file(marker);
    }
    let printed = out["stdout"].as_str().unwrap_or_default();
    let raised = out["stderr"].as_str().unwrap_or_default();
    if !printed.contains("route done") && raised.is_empty() {
        found.push(format!("{name} stopped silently: {out}"));
    }
    found
}

/// Looks for what the scrub removed, by every route; `result` lists what it
/// found (must be empty).
pub const SCRUBBED: &str = r#"
import typing, json, random, dataclasses
found = []
sysmods = [typing.sys]
exec("import sys as _s", vars(json))
sysmods.append(vars(json)["_s"])
for s in sysmods:
    for n in ("settrace", "setprofile", "setrecursionlimit", "_getframe", "monitoring"):
        if hasattr(s, n):
            found.append("sys." + n)
exec("import time as _t, gc as _g, marshal as _m", vars(json))
for mod, names in ((vars(json)["_t"], ("clock_settime", "clock_settime_ns")),
                   (vars(json)["_g"], ("get_objects", "get_referrers")),
                   (vars(json)["_m"], ("loads",))):
    for n in names:
        if hasattr(mod, n):
            found.append(mod.__name__ + "." + n)
code_type = type((lambda: 0).__code__)
if hasattr(code_type, "replace"):
    found.append("code.replace")
try:
    code_type(*([0] * 16))
    found.append("code()")
except TypeError as e:
    if "cannot create" not in str(e):
        found.append("code() said: " + str(e))
result = found
"#;

/// The capability gap: the host-facing native modules are not in the
/// binary, so even library code (which the import guard lets through)
/// cannot load them; `result` lists the ones present (must be empty).
pub const HOST_MODULES: &str = r#"
import json
ns = vars(json)
present = []
for name in ("posix", "nt", "_socket", "socket", "_ctypes", "ctypes", "_posixsubprocess",
             "subprocess", "fcntl", "mmap", "select", "_signal", "signal", "resource",
             "termios", "pwd", "grp", "_multiprocessing", "_thread", "faulthandler", "_ssl"):
    try:
        exec("import " + name, ns)
        present.append(name)
    except Exception:
        # ImportError, or the module's own import failing for lack of os
        pass
io = None
exec("import _io as io_mod", ns)
if hasattr(ns["io_mod"], "FileIO"):
    present.append("_io.FileIO")
try:
    open("/etc/hostname")
    present.append("open")
except BaseException:
    pass
# Two names resolve, to stand-ins with no host code: `posix` is the `os` shim
# (`_dummy_os`), and `_thread` is RustPython's pure-Python dummy that runs a
# "thread" inline, in the calling thread.
if "posix" in present:
    exec("import posix as _px", ns)
    if ns["_px"].__name__ == "_dummy_os":
        present.remove("posix")
if "_thread" in present:
    exec("import _thread as _th", ns)
    seen = []
    ns["_th"].start_new_thread(lambda: seen.append(ns["_th"].get_ident()), ())
    if seen == [ns["_th"].get_ident()]:
        present.remove("_thread")
result = present
"#;

/// The routes an outside attack found (issue 17), each as it was found:
/// any compiled-in module through a library's globals, and a spec that
/// changes its name between the check and the creation; `result` lists what
/// was reached (must be empty).
pub const COMPILED_IN: &str = r#"
import typing, json
imp = typing.sys.modules["_imp"]
class Spec:
    def __init__(self, first, then):
        self.names = [first, then]
    @property
    def name(self):
        return self.names.pop(0) if len(self.names) > 1 else self.names[0]
reached = []
for name in ("_testinternalcapi", "_testcapi", "_interpreters", "_interpchannels", "pyexpat", "_elementtree", "unittest", "pdb"):
    routes = {
        "library globals": lambda: __import__(name, vars(json)),
        "exec in a library": lambda: exec("import " + name + " as _m", vars(json)) or vars(json).pop("_m"),
        "sys.modules": lambda: typing.sys.modules[name],
        "create_builtin": lambda: imp.create_builtin(type("S", (), {"name": name})()),
        "spec that changes its name": lambda: imp.create_builtin(Spec("json", name)),
        "frozen": lambda: imp.get_frozen_object(name),
    }
    for label, route in routes.items():
        try:
            m = route()
        except BaseException:
            continue
        if getattr(m, "__name__", None) == name or type(m).__name__ == "code":
            reached.append(name + " by " + label)
try:
    typing.sys.modules["_testinternalcapi"].assemble_code_object
    reached.append("assemble_code_object")
except BaseException:
    pass
result = reached
"#;

/// `_sre.compile` with crafted code (RustPython does not check it, as
/// CPython does): prints `kept`, then must fail the call only.
pub const CRAFTED_REGEX: &str = "import re\nprint('kept')\np = re._compiler._sre.compile('abc', 0, [48, 2**31, 7, 1, 99], 3, {}, (None,) * 4)\np.match('abc' * 5)\nprint('unreachable?')";

/// The issue's chain (#51) over every module: every `sys.modules` entry
/// (and every native module, and the ones no set holds) deleted, every
/// entry cleared, `sys.modules` replaced, the entry set to None (and, for
/// `create_builtin`, `sys.modules` itself deleted), then each creation
/// route. A native module a route hands back must be the warm one, with
/// the scrub's removals still gone; no module outside the set may come
/// back. `result` lists what was found (must be empty). Controls: the
/// check flags a planted second `gc`, and every route hands back a module
/// at least once (a route that always failed would find nothing).
pub const RECREATED: &str = r#"
import typing, json
sys_ = typing.sys
mods = sys_.modules
orig = dict(mods)
imp, boot, importlib = orig['_imp'], orig['_frozen_importlib'], orig['importlib']
BI, FI = boot.BuiltinImporter, boot.FrozenImporter
native = set(sys_.builtin_module_names)
class Spec:
    def __init__(self, name):
        self.name = name
        self.origin = 'built-in'
SCRUBBED = {'sys': ('settrace', '_getframe', 'setrecursionlimit', 'monitoring'),
            'gc': ('get_objects', 'get_referrers', 'get_referents'),
            'marshal': ('loads', 'load'), 'time': ('clock_settime', 'pthread_getcpuclockid')}
NEVER = ('_testinternalcapi', '_interpreters', '_interpchannels', '_interpqueues', 'pyexpat',
         '_asyncio', '_remote_debugging', '_elementtree', '_queue', 'faulthandler', '_symtable',
         '_testcapi', 'unittest', 'pdb')
found = []
worked = {}
def routes(n):
    yield 'create_builtin', lambda: imp.create_builtin(Spec(n))
    yield '_builtin_from_name', lambda: boot._builtin_from_name(n)
    yield 'create_module', lambda: BI.create_module(BI.find_spec(n))
    yield 'module_from_spec', lambda: boot.module_from_spec(BI.find_spec(n) or FI.find_spec(n))
    yield 'BuiltinImporter.load_module', lambda: BI.load_module(n)
    yield 'FrozenImporter.load_module', lambda: FI.load_module(n)
    yield 'init_frozen', lambda: imp.init_frozen(n)
    yield 'library import', lambda: __import__(n, vars(json))
    yield 'import_module', lambda: importlib.import_module(n)
    if n in native:
        # Reloading a Python module runs its code again in place (the
        # import system's own too); a native one is the point here.
        yield 'reload', lambda: importlib.reload(orig[n])
def second(n, m):
    # A second native instance: not the warm one, and it carries the def's
    # functions (type(sys)(n) makes an empty module, which is harmless).
    return (type(m).__name__ == 'module' and n in native and n in orig and m is not orig[n]
            and any(not a.startswith('__') for a in vars(m)))
def check(label, n, m):
    if type(m).__name__ != 'module':
        return
    worked[label.split('/')[1]] = True
    if second(n, m):
        found.append(f'{label}: a second {n}')
    found.extend(f'{label}: {n}.{a}' for a in SCRUBBED.get(n, ()) if hasattr(m, a))
    if getattr(m, '__name__', None) in NEVER:
        found.append(f'{label}: {m.__name__}')
def left_behind(label):
    # What the route left in sys.modules (whichever dict it is now).
    # (From sys's dict: reading a deleted sys.modules by attribute ends
    # the call, see below.)
    now = vars(sys_).get('modules')
    if isinstance(now, dict):
        found.extend(f'{label}: a second {k} in sys.modules' for k, v in list(now.items()) if second(k, v))
def restore():
    sys_.modules = mods
    mods.clear()
    mods.update(orig)
names = sorted(set(orig) | native | set(NEVER))
for n in names:
    for how in ('del', 'clear', 'replace', 'none', 'unset'):
        for label, route in routes(n):
            if how == 'unset' and label != 'create_builtin':
                # Python code reading a deleted sys.modules ends the call:
                # the engine's AttributeError path for a module reads
                # sys.modules again, without end (a vendored fix).
                continue
            m = None
            try:
                if how == 'del':
                    mods.pop(n, None)
                elif how == 'clear':
                    mods.clear()
                elif how == 'replace':
                    sys_.modules = {}
                elif how == 'none':
                    mods[n] = None
                else:
                    del sys_.modules
                m = route()
            except BaseException:
                pass
            finally:
                left_behind(f'{how}/{label}')
                restore()
            check(f'{how}/{label}', n, m)
# Controls: the check sees a planted second gc; each route worked once.
planted = type(sys_)('gc')
planted.get_objects = None
before = len(found)
check('control/create_builtin', 'gc', planted)
mods['gc'] = planted
left_behind('control/create_builtin')
restore()
if len(found) != before + 3:
    found.append('control: a planted second gc was not seen')
else:
    del found[before:]
found.extend('control: ' + label + ' never handed back a module'
             for label, _ in routes('json') if label not in worked)
result = found
"#;

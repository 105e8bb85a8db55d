// The stdlib's import graph, read from source, and the closure of a set of
// roots over it: every module the allowlisted modules can import, at import
// time or lazily inside a function. That closure is the sandbox's module
// set: no other module exists in the interpreter (see `module_set` and
// `module_wall`), and the Worker freezes exactly it.
//
// Plain `std` only, and plain comments here: the build scripts of `shared`
// (which records the graph) and of the Worker's sandbox (which freezes the
// closure) `include!` this file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Packages and modules no allowlisted module's working paths need, that
/// cannot work without the host anyway, or that exist only to test or
/// debug CPython.
/// Neither they nor anything only they import join the closure.
pub const EXCLUDED: &[&str] = &[
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "lib2to3",
    "ensurepip",
    "venv",
    "pydoc_data",
    "distutils",
    "unittest",
    "asyncio",
    "multiprocessing",
    "concurrent",
    "email",
    "http",
    "urllib",
    "xml",
    "xmlrpc",
    "wsgiref",
    "sqlite3",
    "dbm",
    "curses",
    "ctypes",
    "pydoc",
    "doctest",
    "pdb",
    // Modules that need a network, a terminal, a window or a browser, none
    // of which a sandboxed script ever has.
    "_pyrepl",
    "turtle",
    "mailbox",
    "imaplib",
    "smtplib",
    "ftplib",
    "poplib",
    "socketserver",
    "ssl",
    "webbrowser",
    "antigravity",
    "pty",
    "tty",
    "getpass",
];

/// Modules the runner or the interpreter itself imports, besides the
/// allowlist: the `os` stand-in, the result encoder, `random`'s reseed, and
/// every codec (the codec registry imports `encodings.<name>` by name at
/// run time, which no import statement shows).
pub const RUNTIME_ROOTS: &[&str] = &[
    "_dummy_os",
    "json",
    "random",
    "codecs",
    "encodings",
    "builtins",
];

/// The modules the interpreter creates for itself, whatever the allowlist:
/// when it starts (`sys`, `builtins`, the import machinery, the first
/// codecs, `_io`), and for the sandbox's own code (`_toolgate_state` and
/// what it imports, the scrub's and the engine fixes' modules). The
/// interpreter's tables of modules are cut to the module set when it is
/// built (`module_set::keep_only`), so a name missing here fails to warm;
/// `module_set`'s tests pin the list.
pub const INTERPRETER_OWN: &[&str] = &[
    "sys",
    "builtins",
    "_imp",
    "_frozen_importlib",
    "_thread",
    "_warnings",
    "_weakref",
    "_typing",
    "_ast",
    "_io",
    "_codecs",
    "codecs",
    "encodings",
    "_toolgate_state",
    "toolgate",
    "_pickle",
    "copyreg",
    "types",
    "gc",
    "marshal",
    "time",
];

/// Imports the engine's native code makes (`vm.import("...")` in
/// rustpython-vm and rustpython-stdlib 0.6), which no Python source shows:
/// native module, then what it loads. Listed by hand from a grep of those
/// crates (re-check when RustPython is upgraded); the engine's imports for
/// what the sandbox refuses anyway (threads, sub-interpreters, sockets,
/// pickle, `runpy`, `zipimport`) are left out on purpose. `builtins` stands
/// for the interpreter core (`object.__reduce_ex__` loads `copyreg`,
/// generic aliases `typing`, a `Union` `annotationlib`, a t-string
/// `string.templatelib`, printing a traceback `traceback`).
pub const NATIVE_IMPORTS: &[(&str, &[&str])] = &[
    (
        "builtins",
        &[
            "copyreg",
            "typing",
            "annotationlib",
            "string.templatelib",
            "traceback",
            "linecache",
            "warnings",
        ],
    ),
    ("time", &["_strptime"]),
    ("_datetime", &["_strptime", "time"]),
    ("array", &["collections.abc"]),
    ("_codecs", &["_pycodecs", "encodings"]),
    ("codecs", &["_codecs"]),
    ("_operator", &["functools"]),
    ("_sre", &["re"]),
    ("_typing", &["typing"]),
    ("_warnings", &["_contextvars", "warnings"]),
    ("_io", &["locale"]),
];

/// Whether `name` or a package above it is excluded.
pub fn is_excluded(name: &str) -> bool {
    EXCLUDED.contains(&name.split('.').next().unwrap_or(""))
}

/// Every module an import statement in `source` may load, as absolute names.
/// `package` is the package the source belongs to (itself, for an
/// `__init__`), for relative imports. A line-based reading that
/// over-approximates: an import in a branch never taken is still counted.
pub fn imports_of(source: &str, package: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = source.lines();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix("import ") {
            for part in rest.split(',') {
                let m = part.split(" as ").next().unwrap_or("").trim();
                if is_dotted(m) {
                    out.push(m.to_string());
                }
            }
        } else if let Some(rest) = t.strip_prefix("from ") {
            let Some((module, names)) = rest.split_once(" import ") else {
                continue;
            };
            let module = module.trim();
            let dots = module.len() - module.trim_start_matches('.').len();
            let base = if dots == 0 {
                module.to_string()
            } else {
                let mut parts: Vec<&str> = if package.is_empty() {
                    vec![]
                } else {
                    package.split('.').collect()
                };
                for _ in 1..dots {
                    parts.pop();
                }
                let rest = &module[dots..];
                if !rest.is_empty() {
                    parts.push(rest);
                }
                parts.join(".")
            };
            if !is_dotted(&base) {
                continue;
            }
            let mut names = names.to_string();
            if names.trim_start().starts_with('(') {
                while !names.contains(')') {
                    match lines.next() {
                        Some(l) => names.push_str(l),
                        None => break,
                    }
                }
            }
            for n in names
                .trim()
                .trim_start_matches('(')
                .split(')')
                .next()
                .unwrap_or("")
                .split(',')
            {
                let n = n
                    .split('#')
                    .next()
                    .unwrap_or("")
                    .split(" as ")
                    .next()
                    .unwrap_or("")
                    .trim()
                    .trim_end_matches('\\')
                    .trim();
                // `from p import x` may import the submodule `p.x`.
                if !n.is_empty() && n != "*" && is_dotted(n) {
                    out.push(format!("{base}.{n}"));
                }
            }
            out.push(base);
        }
    }
    out
}

/// One Python module of a `Lib` directory: its file, whether it is a
/// package (an `__init__.py`), and the modules it imports.
pub struct LibModule {
    /// The module's source file.
    pub file: PathBuf,
    /// Whether it is a package (its file is an `__init__.py`).
    pub package: bool,
    /// The modules its source imports anywhere, as absolute dotted names.
    pub imports: Vec<String>,
}

/// RustPython's `Lib` with Toolgate's own versions of some modules
/// (`crates/pyvm/python`, README there) in place of RustPython's: what the
/// sandbox freezes, and whose imports make the module set.
pub fn read_lib_with_overrides(
    lib: &Path,
    overrides: &Path,
) -> std::io::Result<BTreeMap<String, LibModule>> {
    let mut all = read_lib(lib)?;
    all.extend(read_lib(overrides)?);
    Ok(all)
}

/// Every Python module under `lib` (a CPython-style `Lib` directory), by
/// dotted name, with its imports; excluded packages are left out.
pub fn read_lib(lib: &Path) -> std::io::Result<BTreeMap<String, LibModule>> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![(lib.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            let name = if prefix.is_empty() {
                stem.to_string()
            } else {
                format!("{prefix}.{stem}")
            };
            if path.is_dir() {
                if is_dotted(stem) && path.join("__init__.py").is_file() && !is_excluded(&name) {
                    dirs.push((path, name));
                }
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("py") {
                continue;
            }
            let (name, package) = if stem == "__init__" {
                (prefix.clone(), true)
            } else {
                (name, false)
            };
            if name.is_empty() || !is_dotted(&name) || is_excluded(&name) {
                continue;
            }
            // A module that is not UTF-8 (a test fixture) imports nothing we read.
            let source = std::fs::read_to_string(&path).unwrap_or_default();
            let own_package = if package {
                name.clone()
            } else {
                name.rsplit_once('.')
                    .map(|(p, _)| p.to_string())
                    .unwrap_or_default()
            };
            let imports = imports_of(&source, &own_package);
            out.insert(
                name,
                LibModule {
                    file: path,
                    package,
                    imports,
                },
            );
        }
    }
    Ok(out)
}

fn is_dotted(s: &str) -> bool {
    !s.is_empty()
        && s.split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_alphanumeric() || c == '_'))
}

/// The modules reachable from `roots`: each root, the packages above every
/// module (importing `a.b` runs `a` first), every submodule of a root that
/// is a package (`import json.tool` is an import of `json`'s), and whatever
/// they import, transitively. `graph` maps each Python module of the stdlib
/// to its imports; a name it lacks is a native module (or none at all) and
/// joins the closure without edges. Excluded packages never join.
pub fn closure<'a>(
    roots: impl IntoIterator<Item = &'a str>,
    graph: &BTreeMap<&str, Vec<&str>>,
) -> BTreeSet<String> {
    let mut todo: Vec<String> = Vec::new();
    for root in roots {
        todo.push(root.to_string());
        let prefix = format!("{root}.");
        todo.extend(
            graph
                .keys()
                .filter(|m| m.starts_with(&prefix))
                .map(|m| m.to_string()),
        );
    }
    let mut seen = BTreeSet::new();
    while let Some(name) = todo.pop() {
        if is_excluded(&name) || !seen.insert(name.clone()) {
            continue;
        }
        if let Some((parent, _)) = name.rsplit_once('.') {
            todo.push(parent.to_string());
        }
        if let Some(deps) = graph.get(name.as_str()) {
            todo.extend(deps.iter().map(|d| d.to_string()));
        }
        if let Some((_, deps)) = NATIVE_IMPORTS.iter().find(|(m, _)| *m == name) {
            todo.extend(deps.iter().map(|d| d.to_string()));
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_import_form() {
        let src = "import a, b.c as d\nfrom . import x\nfrom ..y import (z,\n  w)\n    import lazy\nfrom q import *\n";
        let got = imports_of(src, "p.k");
        for want in [
            "a", "b.c", "p.k.x", "p.k", "p.y.z", "p.y.w", "p.y", "lazy", "q",
        ] {
            assert!(got.iter().any(|g| g == want), "{want} missing from {got:?}");
        }
        assert!(!got.iter().any(|g| g.contains('*')));
    }

    #[test]
    fn closure_follows_edges_parents_and_submodules_and_skips_excluded() {
        let graph: BTreeMap<&str, Vec<&str>> = [
            ("a", vec!["b", "email.parser"]),
            ("b", vec!["_native"]),
            ("p", vec![]),
            ("p.sub", vec!["c.d"]),
            ("c", vec![]),
            ("c.d", vec![]),
            ("unused", vec![]),
        ]
        .into_iter()
        .collect();
        let got = closure(["a", "p"], &graph);
        let want: BTreeSet<String> = ["a", "b", "_native", "p", "p.sub", "c", "c.d"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(got, want);
    }
}

//! Freezes the part of the stdlib that the allowlist needs: the allowlisted
//! modules and, transitively, every stdlib module their source imports
//! (including imports inside functions, which run lazily). The whole frozen
//! stdlib is over the Workers size limit; this is about half.
//!
//! Only for wasm32: a native build of this crate is empty.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod allowlist {
    include!("../../../shared/src/allowlist.rs");
}

/// Imported by the runner itself, or by the interpreter while it starts.
const RUNTIME_ROOTS: &[&str] = &[
    "_dummy_os",
    "json",
    "random",
    "codecs",
    "encodings",
    "encodings.ascii",
    "encodings.latin_1",
    "encodings.utf_8",
];

/// Never needed by an allowlisted module's working paths, large, and
/// unable to work without the host anyway.
const EXCLUDED: &[&str] = &[
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
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../../../shared/src/allowlist.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let target = out.join("stdlib.bin");
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() != Ok("wasm32") {
        std::fs::write(&target, []).expect("write stdlib.bin");
        return;
    }
    let lib = Path::new(rustpython_pylib::LIB_PATH);
    let mut todo: Vec<String> = allowlist::DEFAULT_MODULES
        .iter()
        .chain(RUNTIME_ROOTS)
        .map(|s| s.to_string())
        .collect();
    let mut found: BTreeMap<String, (PathBuf, bool)> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) || EXCLUDED.contains(&name.split('.').next().unwrap_or("")) {
            continue;
        }
        let Some((file, package)) = locate(lib, &name) else {
            continue; // a native module, or one that does not exist here
        };
        // Parents run first when a submodule is imported.
        if let Some((parent, _)) = name.rsplit_once('.') {
            todo.push(parent.to_string());
        }
        let source = std::fs::read_to_string(&file).expect("read stdlib source");
        let pkg = if package {
            name.clone()
        } else {
            name.rsplit_once('.')
                .map(|(p, _)| p.to_string())
                .unwrap_or_default()
        };
        todo.extend(imports(&source, &pkg));
        found.insert(name, (file, package));
    }
    let mut compiled = Vec::new();
    for (name, (file, package)) in &found {
        let source = std::fs::read_to_string(file).expect("read stdlib source");
        // Compiled as rustpython-pylib's py_freeze! does: the module name is
        // the code's file name.
        let code = rustpython_compiler::compile(
            &source,
            rustpython_compiler::Mode::Exec,
            name,
            rustpython_compiler::CompileOpts::default(),
        )
        .unwrap_or_else(|e| panic!("compiling {name}: {e}"));
        compiled.push((
            name.as_str(),
            rustpython_compiler_core::frozen::FrozenModule {
                code: rustpython_compiler_core::frozen::FrozenCodeObject::encode(&code),
                package: *package,
            },
        ));
    }
    let lib_bytes = rustpython_compiler_core::frozen::FrozenLib::encode(
        compiled.iter().map(|(n, m)| (*n, m.clone())),
    );
    std::fs::write(&target, &lib_bytes.bytes).expect("write stdlib.bin");
    std::fs::write(
        out.join("stdlib-modules.txt"),
        found.keys().cloned().collect::<Vec<_>>().join("\n"),
    )
    .expect("write list");
}

/// The module's file, and whether it is a package.
fn locate(lib: &Path, name: &str) -> Option<(PathBuf, bool)> {
    let rel: PathBuf = name.split('.').collect();
    let init = lib.join(&rel).join("__init__.py");
    if init.is_file() {
        return Some((init, true));
    }
    let file = lib.join(rel).with_extension("py");
    file.is_file().then_some((file, false))
}

/// Every module an import statement in `source` may load, absolute.
fn imports(source: &str, package: &str) -> Vec<String> {
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
                if !n.is_empty() && n != "*" && is_dotted(n) {
                    out.push(format!("{base}.{n}"));
                }
            }
            out.push(base);
        }
    }
    out
}

fn is_dotted(s: &str) -> bool {
    !s.is_empty()
        && s.split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_alphanumeric() || c == '_'))
}

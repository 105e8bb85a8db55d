//! Records the stdlib's import graph (`sandbox::imports`) for the sandbox's
//! module set: the binary holds only compiled code, so the graph is read
//! from RustPython's `Lib` sources here, once, with Toolgate's own versions
//! of some modules (`python/`) in place of RustPython's. Those versions are
//! compiled here too, and frozen over RustPython's (`sandbox::overrides`).

use std::fmt::Write;
use std::path::{Path, PathBuf};

// Only the reader is needed here.
#[allow(dead_code)]
mod imports {
    include!("src/sandbox/imports.rs");
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/sandbox/imports.rs");
    println!("cargo:rerun-if-changed=python");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let overrides = Path::new(env!("CARGO_MANIFEST_DIR")).join("python");
    let mut code = String::from("pub static GRAPH: &[(&str, &[&str])] = &[\n");
    let mut frozen = Vec::new();
    if std::env::var_os("CARGO_FEATURE_PYTHON_VM").is_some() {
        let lib =
            imports::read_lib_with_overrides(Path::new(rustpython_pylib::LIB_PATH), &overrides)
                .expect("read the stdlib");
        for (name, m) in &lib {
            let mut deps: Vec<&str> = m.imports.iter().map(String::as_str).collect();
            deps.sort_unstable();
            deps.dedup();
            let _ = writeln!(code, "    ({name:?}, &{deps:?}),");
        }
        // The overrides, as the overlay above read them.
        for (name, m) in lib.iter().filter(|(_, m)| m.file.starts_with(&overrides)) {
            let source = std::fs::read_to_string(&m.file).expect("read an override");
            // Compiled as rustpython-pylib's py_freeze! does: the module
            // name is the code's file name.
            let compiled = rustpython_compiler::compile(
                &source,
                rustpython_compiler::Mode::Exec,
                name,
                rustpython_compiler::CompileOpts::default(),
            )
            .unwrap_or_else(|e| panic!("compiling shared/python/{name}: {e}"));
            frozen.push((
                name.clone(),
                rustpython_compiler_core::frozen::FrozenModule {
                    code: rustpython_compiler_core::frozen::FrozenCodeObject::encode(&compiled),
                    package: m.package,
                },
            ));
        }
    }
    code.push_str("];\n");
    std::fs::write(out_dir.join("stdlib_graph.rs"), code).expect("write the stdlib graph");
    let lib = rustpython_compiler_core::frozen::FrozenLib::encode(
        frozen.iter().map(|(n, m)| (n.as_str(), m.clone())),
    );
    std::fs::write(out_dir.join("overrides.bin"), &lib.bytes).expect("write the overrides");
}

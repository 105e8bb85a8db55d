//! Records the stdlib's import graph (`imports`) for the sandbox's
//! module set: the binary holds only compiled code, so the graph is read
//! from RustPython's `Lib` sources here, once, with Toolgate's own versions
//! of some modules (`python/`) in place of RustPython's.
//!
//! For the process sandbox (feature `process`) it also freezes that `Lib`:
//! every module but the excluded packages (`imports::EXCLUDED`), which no
//! module set can hold whatever the allowlist, with the overrides in place.
//! RustPython's own frozen stdlib is all of `Lib` (42% of it excluded
//! packages: idlelib, asyncio, email, …), which only made the binary larger.

use std::fmt::Write;
use std::path::{Path, PathBuf};

// Only the reader is needed here.
#[allow(dead_code)]
mod imports {
    include!("src/imports.rs");
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/imports.rs");
    println!("cargo:rerun-if-changed=python");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let overrides = Path::new(env!("CARGO_MANIFEST_DIR")).join("python");
    let mut code = String::from("pub static GRAPH: &[(&str, &[&str])] = &[\n");
    let mut frozen = Vec::new();
    let lib = imports::read_lib_with_overrides(Path::new(rustpython_pylib::LIB_PATH), &overrides)
        .expect("read the stdlib");
    for (name, m) in &lib {
        let mut deps: Vec<&str> = m.imports.iter().map(String::as_str).collect();
        deps.sort_unstable();
        deps.dedup();
        let _ = writeln!(code, "    ({name:?}, &{deps:?}),");
    }
    let freeze_all = std::env::var_os("CARGO_FEATURE_PROCESS").is_some();
    // Everything the overlay above read (the Worker freezes its own set,
    // in its build.rs).
    for (name, m) in lib
        .iter()
        .filter(|(_, m)| freeze_all || m.file.starts_with(&overrides))
    {
        let source = std::fs::read_to_string(&m.file).expect("read a module");
        // Compiled as rustpython-pylib's py_freeze! does: the module
        // name is the code's file name.
        let compiled = rustpython_compiler::compile(
            &source,
            rustpython_compiler::Mode::Exec,
            name,
            rustpython_compiler::CompileOpts::default(),
        )
        .unwrap_or_else(|e| panic!("compiling {}: {e}", m.file.display()));
        frozen.push((
            name.clone(),
            rustpython_compiler_core::frozen::FrozenModule {
                code: rustpython_compiler_core::frozen::FrozenCodeObject::encode(&compiled),
                package: m.package,
            },
        ));
    }
    code.push_str("];\n");
    std::fs::write(out_dir.join("stdlib_graph.rs"), code).expect("write the stdlib graph");
    let lib = rustpython_compiler_core::frozen::FrozenLib::encode(
        frozen.iter().map(|(n, m)| (n.as_str(), m.clone())),
    );
    std::fs::write(out_dir.join("stdlib.bin"), &lib.bytes).expect("write the frozen stdlib");
}

//! Records the stdlib's import graph (`sandbox::imports`) for the sandbox's
//! module set: the binary holds only compiled code, so the graph is read
//! from RustPython's `Lib` sources here, once.

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
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("stdlib_graph.rs");
    let mut code = String::from("pub static GRAPH: &[(&str, &[&str])] = &[\n");
    if std::env::var_os("CARGO_FEATURE_PYTHON_VM").is_some() {
        let lib =
            imports::read_lib(Path::new(rustpython_pylib::LIB_PATH)).expect("read the stdlib");
        for (name, m) in &lib {
            let mut deps: Vec<&str> = m.imports.iter().map(String::as_str).collect();
            deps.sort_unstable();
            deps.dedup();
            let _ = writeln!(code, "    ({name:?}, &{deps:?}),");
        }
    }
    code.push_str("];\n");
    std::fs::write(&out, code).expect("write the stdlib graph");
}

//! Freezes the part of the stdlib that the allowlist needs: the allowlisted
//! modules and, transitively, every stdlib module their source imports
//! (including imports inside functions, which run lazily), as
//! `crates/pyvm/src/imports.rs` computes it; the native sandbox allows
//! exactly the same set. The whole frozen stdlib is over the Workers size
//! limit; this is about half.
//!
//! Only for wasm32: a native build of this crate is empty.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

// Included whole; the build uses part of each.
#[allow(dead_code)]
mod allowlist {
    include!("../../../crates/core/src/allowlist.rs");
}
#[allow(dead_code)]
mod imports {
    include!("../../../crates/pyvm/src/imports.rs");
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../../../crates/core/src/allowlist.rs");
    println!("cargo:rerun-if-changed=../../../crates/pyvm/src/imports.rs");
    println!("cargo:rerun-if-changed=../../../crates/pyvm/python");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let target = out.join("stdlib.bin");
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() != Ok("wasm32") {
        std::fs::write(&target, []).expect("write stdlib.bin");
        return;
    }
    // With Toolgate's own versions of some modules (crates/pyvm/python).
    let lib = imports::read_lib_with_overrides(
        Path::new(rustpython_pylib::LIB_PATH),
        Path::new("../../../crates/pyvm/python"),
    )
    .expect("read the stdlib");
    let graph: BTreeMap<&str, Vec<&str>> = lib
        .iter()
        .map(|(name, m)| {
            (
                name.as_str(),
                m.imports.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    let set = imports::closure(
        allowlist::DEFAULT_MODULES
            .iter()
            .chain(imports::RUNTIME_ROOTS)
            .copied(),
        &graph,
    );
    let mut compiled = Vec::new();
    // Native modules in the set have no source here: they are in the binary.
    for (name, m) in set.iter().filter_map(|n| lib.get(n).map(|m| (n, m))) {
        let source = std::fs::read_to_string(&m.file).expect("read stdlib source");
        // Compiled as rustpython-pylib's py_freeze! does: the module name is
        // the code's file name.
        let code = rustpython_compiler::compile(
            &source,
            rustpython_compiler::Mode::Exec,
            name,
            rustpython_compiler::CompileOpts::default(),
        )
        .unwrap_or_else(|e| panic!("compiling {name}: {e}"));
        let mut marshalled = Vec::new();
        rustpython_compiler_core::marshal::serialize_code(&mut marshalled, &code);
        compiled.push((
            name.as_str(),
            rustpython_compiler_core::frozen::FrozenModule {
                code: rustpython_compiler_core::frozen::FrozenCodeObject {
                    bytes: stored(&marshalled),
                },
                package: m.package,
            },
        ));
    }
    let lib_bytes = rustpython_compiler_core::frozen::FrozenLib::encode(
        compiled.iter().map(|(n, m)| (*n, m.clone())),
    );
    std::fs::write(&target, &lib_bytes.bytes).expect("write stdlib.bin");
    std::fs::write(
        out.join("stdlib-modules.txt"),
        compiled
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .expect("write list");
}

/// `data` as an LZ4 block (size-prepended, as the frozen-code reader takes
/// it) of literals only, i.e. not compressed: the bundle is gzipped, and
/// gzip makes 1.6 MB of the marshalled code where it made 1.9 MB of its LZ4.
fn stored(data: &[u8]) -> Vec<u8> {
    let len = u32::try_from(data.len()).expect("a module's code is under 4 GiB");
    let mut out = len.to_le_bytes().to_vec();
    // The token's high nibble is the literal count; 15 means "plus the
    // bytes that follow, each 255 but the last".
    if data.len() < 15 {
        out.push((data.len() as u8) << 4);
    } else {
        out.push(0xF0);
        let mut rest = data.len() - 15;
        while rest >= 255 {
            out.push(255);
            rest -= 255;
        }
        out.push(rest as u8);
    }
    out.extend_from_slice(data);
    out
}

//! Each crate's modules import each other without cycles: each file has one
//! job, and a module that two others need is a leaf they both import
//! (`http::body`, `envelope`, `outcome`), not one of them. Between crates
//! Cargo forbids a cycle itself.
//!
//! Edges are the `crate::a::b` paths a file names outside its unit tests,
//! resolved to the longest module that exists. Declaring a child module
//! (`mod x;`) and re-exporting it is not an edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `sandbox/pool.rs` → `sandbox::pool`; `http/mod.rs` → `http`.
fn module_of(root: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(root).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts.join("::")
}

/// The `crate::` paths in `src`, up to its unit tests.
fn crate_paths(src: &str) -> Vec<String> {
    let body = src.split("#[cfg(test)]\nmod tests").next().unwrap_or(src);
    let mut paths = Vec::new();
    for (at, _) in body.match_indices("crate::") {
        let rest = &body[at + "crate::".len()..];
        let path: String = rest
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_' || *c == ':')
            .collect();
        paths.push(path.trim_end_matches(':').to_owned());
    }
    paths
}

/// The modules on a cycle, each cycle once (Tarjan's strongly connected
/// components of more than one module).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        for w in &s.graph[v] {
            if !s.index.contains_key(w.as_str()) {
                visit(s, w);
                let lw = s.low[w.as_str()];
                s.low.entry(v).and_modify(|l| *l = (*l).min(lw));
            } else if s.stack.contains(&w.as_str()) {
                let iw = s.index[w.as_str()];
                s.low.entry(v).and_modify(|l| *l = (*l).min(iw));
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                component.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.found
}

/// A file that holds a module's unit tests (`x/tests.rs`, `x_tests.rs`),
/// declared `#[cfg(test)] mod tests;`.
fn is_unit_tests(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n == "tests.rs" || n.ends_with("_tests.rs"))
}

fn graph_of(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut all = Vec::new();
    files(root, &mut all);
    all.retain(|f| !is_unit_tests(f));
    let modules: BTreeMap<String, PathBuf> = all
        .iter()
        .map(|f| (module_of(root, f), f.clone()))
        .collect();
    let resolve = |path: &str| -> Option<String> {
        let mut parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
        while !parts.is_empty() {
            let name = parts.join("::");
            if modules.contains_key(&name) {
                return Some(name);
            }
            parts.pop();
        }
        None
    };
    let mut graph = BTreeMap::new();
    for (module, file) in &modules {
        let src = std::fs::read_to_string(file).unwrap();
        let edges: BTreeSet<String> = crate_paths(&src)
            .iter()
            .filter_map(|p| resolve(p))
            .filter(|t| t != module && !t.is_empty())
            .collect();
        graph.insert(module.clone(), edges);
    }
    graph
}

/// Every crate of the workspace (the folders holding a `Cargo.toml` and a
/// `src`), with the least number of modules the walk must find in each.
const CRATES: [(&str, usize); 17] = [
    ("crates/core", 7),
    ("crates/pyvm", 12),
    ("crates/sandbox", 25),
    ("shared", 40),
    ("crates/aws", 8),
    ("crates/lambda", 3),
    ("crates/python", 2),
    ("crates/ssh", 5),
    ("functions/local", 2),
    ("functions/python-execute", 1),
    ("functions/cloud", 1),
    ("functions/ssh", 1),
    ("functions/gateway", 1),
    ("functions/clarify", 1),
    ("functions/worker", 3),
    ("functions/worker/sandbox", 3),
    ("tests", 10),
];

#[test]
fn no_crate_has_an_import_cycle() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (krate, least) in CRATES {
        let graph = graph_of(&workspace.join(krate).join("src"));
        assert!(
            graph.len() >= least,
            "{krate}: the walk found {} modules",
            graph.len()
        );
        let found = cycles(&graph);
        assert!(found.is_empty(), "{krate}: modules on a cycle: {found:?}");
    }
    // Every crate is walked: a new one must be added above.
    let manifest = std::fs::read_to_string(workspace.join("Cargo.toml")).unwrap();
    for (krate, _) in CRATES {
        assert!(
            manifest.contains(&format!("\"{krate}\"")),
            "{krate} is not a member"
        );
    }
    let members = manifest
        .split("members = [")
        .nth(1)
        .and_then(|m| m.split(']').next())
        .unwrap();
    for member in members.split(',').map(|m| m.trim().trim_matches('"')) {
        assert!(
            CRATES.iter().any(|(k, _)| *k == member),
            "the member {member} is not walked"
        );
    }
}

/// The check itself finds a cycle when there is one.
#[test]
fn a_cycle_is_found() {
    let edge = |a: &str, b: &[&str]| (a.to_owned(), b.iter().map(|s| s.to_string()).collect());
    let graph: BTreeMap<String, BTreeSet<String>> = [
        edge("http", &["clarify::http", "error"]),
        edge("clarify::http", &["mcp"]),
        edge("mcp", &["http"]),
        edge("error", &[]),
    ]
    .into_iter()
    .collect();
    assert_eq!(cycles(&graph), vec![vec!["clarify::http", "http", "mcp"]]);
}

/// The `cfg`s of `src` outside its unit tests that choose something other
/// than the platform (`target_os`, `target_arch`): features, mostly.
fn feature_cfgs(src: &str) -> Vec<String> {
    let body = src.split("#[cfg(test)]\nmod tests").next().unwrap_or(src);
    body.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("#[cfg(") || l.contains("cfg!("))
        .filter(|l| !l.contains("test") && !l.contains("target_os") && !l.contains("target_arch"))
        .map(str::to_owned)
        .collect()
}

/// A crate per concern, platform code split by target: what is left to
/// choose by feature stays small (the house's budget is 30).
#[test]
fn few_cfgs_choose_by_feature() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for (krate, _) in CRATES {
        let mut paths = Vec::new();
        files(&workspace.join(krate).join("src"), &mut paths);
        for path in paths.into_iter().filter(|p| !is_unit_tests(p)) {
            let text = std::fs::read_to_string(&path).unwrap();
            for cfg in feature_cfgs(&text) {
                found.push(format!("{}: {cfg}", path.display()));
            }
        }
    }
    assert!(found.len() >= 5, "the walk found too few: {found:#?}");
    assert!(
        found.len() <= 12,
        "{} cfgs choose by feature: {found:#?}",
        found.len()
    );
}

/// No production file passes 500 lines: a longer one holds more than one
/// job (a module's unit tests live beside it, in `x/tests.rs`).
#[test]
fn production_files_stay_short() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let (mut over, mut walked) = (Vec::new(), 0);
    for (krate, _) in CRATES {
        if krate == "tests" {
            continue;
        }
        let mut paths = Vec::new();
        files(&workspace.join(krate).join("src"), &mut paths);
        for path in paths.into_iter().filter(|p| !is_unit_tests(p)) {
            walked += 1;
            let lines = std::fs::read_to_string(&path).unwrap().lines().count();
            let rel = path
                .strip_prefix(&workspace)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if lines > 500 {
                over.push(format!("{rel}: {lines} lines"));
            }
        }
    }
    assert!(walked > 150, "the walk found {walked} files");
    assert!(over.is_empty(), "split these: {over:#?}");
}

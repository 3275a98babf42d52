//! In every crate of the workspace the modules form no import cycle, and
//! lro-core's `metric` is a leaf: a reader can take a crate in from the
//! bottom up.
//!
//! The graph is read from the source: an edge `a -> b` for every `crate::b`
//! path in module `a`'s code (comments left out). Submodules count as their
//! top-level module (`metric/label.rs` is `metric`).

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/metric/label.rs` -> `metric`; `src/event.rs` -> `event`.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib").then(|| name.to_owned())
}

/// Every `crate::name` in the code of `text`, comments excluded.
fn crate_refs(text: &str) -> BTreeSet<String> {
    let mut refs = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or_default();
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let tail = &rest[at + "crate::".len()..];
            let name: String = tail
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                refs.insert(name);
            }
            rest = tail;
        }
        // `use crate::{a::X, b}` spreads names over the braces.
        if let Some(at) = code.find("crate::{") {
            let inner = &code[at + "crate::{".len()..];
            for part in inner.split(',') {
                let name: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    refs.insert(name);
                }
            }
        }
    }
    refs
}

/// The repository root.
fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `src` folder of every crate and example.
fn crate_sources() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for group in ["crates", "examples"] {
        for entry in std::fs::read_dir(repo().join(group)).unwrap() {
            let src = entry.unwrap().path().join("src");
            if src.is_dir() {
                out.push(src);
            }
        }
    }
    out.sort();
    out
}

fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<String> = files.iter().filter_map(|f| module_of(src, f)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let Some(module) = module_of(src, file) else {
            continue;
        };
        // Multi-line `use crate::{...}` blocks: join lines so braces stay whole.
        let text = std::fs::read_to_string(file).unwrap();
        let joined = join_use_blocks(without_tests(&text));
        let edges = graph.entry(module.clone()).or_default();
        for target in crate_refs(&joined) {
            if target != module && modules.contains(&target) {
                edges.insert(target);
            }
        }
    }
    graph
}

/// The code before the unit tests, which stand at the bottom of a file and
/// may reach any module they test from.
fn without_tests(text: &str) -> &str {
    text.find("#[cfg(test)]\nmod tests")
        .map_or(text, |at| &text[..at])
}

/// Puts each `use crate::{ ... };` on one line.
fn join_use_blocks(text: &str) -> String {
    let mut out = String::new();
    let mut in_use = false;
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or_default();
        if code.trim_start().starts_with("use crate::{") || code.contains("use crate::{") {
            in_use = !code.contains("};");
        } else if in_use {
            out.push(' ');
            out.push_str(code.trim());
            if code.contains("};") {
                in_use = false;
                out.push('\n');
            }
            continue;
        }
        out.push_str(code);
        if !in_use {
            out.push('\n');
        }
    }
    out
}

fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_crate_has_a_module_cycle() {
    let sources = crate_sources();
    assert!(sources.len() >= 12, "every crate is read: {sources:?}");
    let cycles: Vec<String> = sources
        .iter()
        .filter_map(|src| {
            let cycle = find_cycle(&graph(src))?;
            let name = src.parent()?.file_name()?.to_string_lossy();
            Some(format!("{name}: {}", cycle.join(" -> ")))
        })
        .collect();
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn lro_core_metric_is_a_leaf() {
    let graph = graph(&repo().join("crates/lro-core/src"));
    assert!(
        graph.len() >= 10,
        "every module is read: {:?}",
        graph.keys()
    );
    assert!(
        graph["event"].contains("metric"),
        "the reader sees edges: {graph:?}"
    );
    assert!(
        graph["metric"].is_empty(),
        "metric must depend on no other module: {:?}",
        graph["metric"]
    );
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let edges = |pairs: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in pairs {
            g.entry((*a).into()).or_default().insert((*b).into());
            g.entry((*b).into()).or_default();
        }
        g
    };
    let cyclic = edges(&[("event", "metric"), ("metric", "event")]);
    assert_eq!(find_cycle(&cyclic).unwrap(), ["event", "metric", "event"]);
    assert!(find_cycle(&edges(&[("a", "b"), ("b", "c"), ("a", "c")])).is_none());
    let refs = crate_refs(&join_use_blocks(
        "use crate::{\n    config::X,\n    file::{a, b},\n};\nlet y = crate::tokens::f(); // crate::nope\n",
    ));
    assert!(refs.contains("config") && refs.contains("file") && refs.contains("tokens"));
    assert!(!refs.contains("nope"));
    assert_eq!(
        without_tests("a\n#[cfg(test)]\nfn b() {}\n#[cfg(test)]\nmod tests;"),
        "a\n#[cfg(test)]\nfn b() {}\n"
    );
}

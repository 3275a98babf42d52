//! In every crate of the workspace the modules form no import cycle, and
//! lro-core's `metric` is a leaf: a reader can take a crate in from the
//! bottom up.
//!
//! The graphs are read from the source, one per module with submodules:
//! between the children of `jq`, an edge `emit -> job` for every
//! `crate::jq::job`, `super::job` or `self::…` path in the code under
//! `jq::emit` (comments and unit tests left out), so siblings at any depth
//! are held to the rule the crate's top-level modules are.

mod support;

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

use support::rust_files;

/// A module's path in its crate: `src/jq/emit.rs` is `jq::emit`,
/// `src/jq/mod.rs` is `jq`, `src/lib.rs` and `src/main.rs` the root. Files of
/// `src/bin/` are crates of their own, read as nothing here.
fn module_path(src: &Path, file: &Path) -> Option<Vec<String>> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return None;
    }
    let last = parts.pop()?;
    let stem = last.strip_suffix(".rs")?;
    if !(stem == "mod" || parts.is_empty() && (stem == "lib" || stem == "main")) {
        parts.push(stem.to_owned());
    }
    Some(parts)
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The paths a use tree names, written after its root: `a::b` is
/// `[[a, b]]`, `{a::X, b::{c, d}}` is `[[a, X], [b, c], [b, d]]`.
fn expand(tree: &str) -> Vec<Vec<String>> {
    let tree = tree.trim_start();
    if let Some(inner) = tree.strip_prefix('{') {
        let mut out = Vec::new();
        let (mut depth, mut from) = (0usize, 0usize);
        for (at, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    out.extend(expand(&inner[from..at]));
                    return out;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    out.extend(expand(&inner[from..at]));
                    from = at + 1;
                }
                _ => {}
            }
        }
        out.extend(expand(&inner[from..]));
        return out;
    }
    let name: String = tree.chars().take_while(|&c| is_ident(c)).collect();
    if name.is_empty() {
        return Vec::new();
    }
    match tree[name.len()..].trim_start().strip_prefix("::") {
        Some(rest) => {
            let mut subs = expand(rest);
            if subs.is_empty() {
                subs.push(Vec::new());
            }
            for sub in &mut subs {
                sub.insert(0, name.clone());
            }
            subs
        }
        None => vec![vec![name]],
    }
}

/// Every path that module `module`'s code names through `crate::`,
/// `super::` or `self::`, made absolute (comments excluded).
fn module_refs(module: &[String], text: &str) -> BTreeSet<Vec<String>> {
    let code: String = text
        .lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    let mut refs = BTreeSet::new();
    for root in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(found) = code[from..].find(root) {
            let at = from + found;
            from = at + root.len();
            if code[..at].chars().next_back().is_some_and(is_ident) || code[..at].ends_with("::") {
                continue;
            }
            let base: Vec<String> = match root {
                "crate::" => Vec::new(),
                "self::" => module.to_vec(),
                _ => module[..module.len().saturating_sub(1)].to_vec(),
            };
            for path in expand(&code[from..]) {
                let mut abs = base.clone();
                for part in path {
                    if part == "super" {
                        abs.pop();
                    } else if part != "self" {
                        abs.push(part);
                    }
                }
                refs.insert(abs);
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

/// A graph of modules by name: an edge `a -> b` when `a` names `b`.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// For every module with submodules (the root is `""`), the graph between
/// its children: `a -> b` when anything under `a` names anything under `b`.
/// A module naming its own parent or its own children adds no edge there:
/// a `mod.rs` and its parts are one unit.
fn sibling_graphs(src: &Path) -> BTreeMap<String, Graph> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let sources: Vec<(Vec<String>, PathBuf)> = files
        .into_iter()
        .filter_map(|f| Some((module_path(src, &f)?, f)))
        .collect();
    let modules: BTreeSet<Vec<String>> = sources.iter().map(|(m, _)| m.clone()).collect();
    let mut graphs: BTreeMap<String, Graph> = BTreeMap::new();
    for module in &modules {
        if let Some((_, parent)) = module.split_last() {
            graphs
                .entry(parent.join("::"))
                .or_default()
                .entry(module.last().unwrap().clone())
                .or_default();
        }
    }
    for (module, file) in &sources {
        let text = std::fs::read_to_string(file).unwrap();
        for path in module_refs(module, without_tests(&text)) {
            // The deepest module the path names.
            let Some(target) = (0..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|p| modules.contains(p))
            else {
                continue;
            };
            let common = module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            if common < module.len() && common < target.len() {
                graphs
                    .entry(module[..common].join("::"))
                    .or_default()
                    .entry(module[common].clone())
                    .or_default()
                    .insert(target[common].clone());
            }
        }
    }
    graphs
}

/// The code before the unit tests, which stand at the bottom of a file and
/// may reach any module they test from.
fn without_tests(text: &str) -> &str {
    text.find("#[cfg(test)]\nmod tests")
        .map_or(text, |at| &text[..at])
}

fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &Graph,
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
    let mut cycles = Vec::new();
    for src in &sources {
        let name = src.parent().unwrap().file_name().unwrap().to_string_lossy();
        for (parent, graph) in sibling_graphs(src) {
            if let Some(cycle) = find_cycle(&graph) {
                let at = if parent.is_empty() {
                    String::new()
                } else {
                    format!("{parent}::")
                };
                let cycle: Vec<String> = cycle.iter().map(|m| format!("{at}{m}")).collect();
                cycles.push(format!("{name}: {}", cycle.join(" -> ")));
            }
        }
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn lro_core_metric_is_a_leaf() {
    let graphs = sibling_graphs(&repo().join("crates/lro-core/src"));
    let graph = &graphs[""];
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
fn submodules_are_read_at_every_depth() {
    let graphs = sibling_graphs(&repo().join("crates/lro-extract/src"));
    let jq = &graphs["jq"];
    assert!(
        jq.len() >= 5 && jq.values().any(|edges| !edges.is_empty()),
        "jq's submodules and their edges: {jq:?}"
    );
}

#[test]
fn the_reader_resolves_paths_and_finds_cycles() {
    let edges = |pairs: &[(&str, &str)]| {
        let mut g = Graph::new();
        for (a, b) in pairs {
            g.entry((*a).into()).or_default().insert((*b).into());
            g.entry((*b).into()).or_default();
        }
        g
    };
    let cyclic = edges(&[("event", "metric"), ("metric", "event")]);
    assert_eq!(find_cycle(&cyclic).unwrap(), ["event", "metric", "event"]);
    assert!(find_cycle(&edges(&[("a", "b"), ("b", "c"), ("a", "c")])).is_none());
    let path = |s: &str| s.split("::").map(str::to_owned).collect::<Vec<_>>();
    let module = path("jq::emit");
    let refs = module_refs(
        &module,
        "use crate::{\n    config::X,\n    file::{a, b},\n};\nuse super::{job::Render, super::render};\nlet y = crate::tokens::f(); // crate::nope\nself::inner::g();\n",
    );
    for want in [
        "config::X",
        "file::a",
        "file::b",
        "jq::job::Render",
        "render",
        "tokens::f",
        "jq::emit::inner::g",
    ] {
        assert!(refs.contains(&path(want)), "{want} in {refs:?}");
    }
    assert!(!refs.iter().any(|r| r.contains(&"nope".to_owned())));
    assert_eq!(
        without_tests("a\n#[cfg(test)]\nfn b() {}\n#[cfg(test)]\nmod tests;"),
        "a\n#[cfg(test)]\nfn b() {}\n"
    );
}

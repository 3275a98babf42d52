//! ARCHITECTURE.md stays true to the tree: its code map names every crate
//! and example, it links only to files inside the repository, and every
//! name it cites in a code span (a file, a `Type::item` or `module::item`
//! path, an identifier) exists in the code.

use std::{
    collections::BTreeSet,
    path::{Component, Path, PathBuf},
};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn architecture() -> String {
    std::fs::read_to_string(repo().join("ARCHITECTURE.md")).unwrap()
}

/// The targets of every Markdown link `[text](target)`.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        let tail = &rest[at + 2..];
        if let Some(end) = tail.find(')') {
            out.push(tail[..end].to_owned());
        }
        rest = tail;
    }
    out
}

/// A path reference that leaves the repository: any `..` component.
fn leaves_repo(target: &str) -> bool {
    Path::new(target)
        .components()
        .any(|c| matches!(c, Component::ParentDir))
}

#[test]
fn links_stay_inside_the_repository_and_resolve() {
    let text = architecture();
    for target in links(&text) {
        if target.starts_with("http://") || target.starts_with("https://") {
            continue;
        }
        let file = target.split('#').next().unwrap_or_default();
        assert!(
            !leaves_repo(file),
            "ARCHITECTURE.md links outside: {target}"
        );
        if !file.is_empty() {
            assert!(repo().join(file).exists(), "broken link: {target}");
        }
    }
    // No code span points outside either (`../shared/...`).
    for span in text.split('`').skip(1).step_by(2) {
        assert!(
            !span.starts_with("../"),
            "ARCHITECTURE.md refers outside the repository: {span}"
        );
    }
}

#[test]
fn the_code_map_names_every_crate_and_example() {
    let text = architecture();
    for dir in ["crates", "examples"] {
        for entry in std::fs::read_dir(repo().join(dir)).unwrap() {
            let entry = entry.unwrap();
            if entry.path().join("Cargo.toml").exists() {
                let row = format!("| `{dir}/{}` |", entry.file_name().to_string_lossy());
                assert!(text.contains(&row), "ARCHITECTURE.md has no row {row}");
            }
        }
    }
}

/// What a name is checked against: every file and folder of the
/// repository (relative paths), and every word of its code (comments, and
/// this crate, which names them to check them, left out).
struct Tree {
    paths: BTreeSet<String>,
    top: BTreeSet<String>,
    words: BTreeSet<String>,
}

/// Where the code is: not the build output, installed packages or git.
fn skipped(name: &str) -> bool {
    matches!(
        name,
        "target" | "node_modules" | ".git" | "__pycache__" | ".venv"
    )
}

/// The extensions of the files whose words are code.
const CODE: [&str; 10] = [
    "rs", "py", "toml", "json", "yml", "yaml", "sh", "ts", "mjs", "js",
];

impl Tree {
    fn read() -> Self {
        let root = repo();
        let mut tree = Self {
            paths: BTreeSet::new(),
            top: BTreeSet::new(),
            words: BTreeSet::new(),
        };
        for entry in std::fs::read_dir(&root).unwrap() {
            tree.top
                .insert(entry.unwrap().file_name().to_string_lossy().into_owned());
        }
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if skipped(&name) {
                    continue;
                }
                let rel = path
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                let ours = !rel.starts_with("crates/lro-tidy/");
                tree.paths.insert(rel);
                if path.is_dir() {
                    stack.push(path);
                } else if ours
                    && path
                        .extension()
                        .is_some_and(|e| CODE.contains(&e.to_string_lossy().as_ref()))
                {
                    let text = std::fs::read_to_string(&path).unwrap_or_default();
                    let comment = if name.ends_with(".rs") { "//" } else { "#" };
                    for line in text.lines() {
                        let code = match name.rsplit('.').next() {
                            Some("rs" | "py" | "sh" | "toml" | "yml" | "yaml") => {
                                line.split(comment).next().unwrap_or_default()
                            }
                            _ => line,
                        };
                        tree.words.extend(words(code));
                    }
                }
            }
        }
        tree
    }

    /// A file or folder that exists, named from the root or by its last
    /// components (`lro/service.rs`, `jq/`).
    fn has_path(&self, name: &str) -> bool {
        let name = name.trim_end_matches('/');
        self.paths.contains(name)
            || self
                .paths
                .iter()
                .any(|p| p.ends_with(name) && p[..p.len() - name.len()].ends_with('/'))
    }
}

fn words(code: &str) -> impl Iterator<Item = String> + '_ {
    code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
}

/// What a code span names, when it names something this test can check.
#[derive(Debug, PartialEq)]
enum Cited {
    /// A file or folder of the repository.
    File(String),
    /// Names that must each be a word of the code: a path's segments, or
    /// one identifier.
    Names(Vec<String>),
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Reads a code span. A file is a span ending in a source extension or a
/// `/`, or a path whose first folder is one of the repository's; a name is
/// a `Type::item` or `module::item` path (`()` and generics left out), a
/// snake_case or CONSTANT_CASE identifier with an underscore, or a
/// CamelCase one. Anything else (commands, values, user files) is not a
/// name here.
fn cite(span: &str, top: &BTreeSet<String>) -> Option<Cited> {
    let span = span.trim();
    let path_chars = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-/".contains(c))
    };
    if path_chars(span) && span.contains(['/', '.']) {
        let source = [".rs", ".py", ".sh", ".ts", ".mjs", ".toml", ".yml", ".yaml"]
            .iter()
            .any(|e| span.ends_with(e));
        let ours = span
            .split('/')
            .next()
            .is_some_and(|first| span.contains('/') && top.contains(first));
        let folder = span.ends_with('/') && !span.contains('.');
        return (source || ours || folder).then(|| Cited::File(span.to_owned()));
    }
    let bare = span.strip_suffix("()").unwrap_or(span);
    let bare = match bare.find('<') {
        Some(at) if bare.ends_with('>') => &bare[..at],
        _ => bare,
    };
    if bare.contains("::") {
        let parts: Vec<String> = bare.split("::").map(str::to_owned).collect();
        return parts
            .iter()
            .all(|p| is_ident(p))
            .then_some(Cited::Names(parts));
    }
    let camel = bare.starts_with(|c: char| c.is_ascii_uppercase())
        && bare.chars().any(|c| c.is_ascii_lowercase())
        && !bare.contains('_');
    (is_ident(bare) && (bare.contains('_') || camel) && !bare.starts_with('_'))
        .then(|| Cited::Names(vec![bare.to_owned()]))
}

/// What the Decisions cite as deliberately not in the code: the
/// middleware folder has no `future.rs`, no `resource_link` points at a
/// file, and neither `pre_exec` nor `PR_SET_PDEATHSIG` (for an upstream) is
/// used. Each must stay absent, or the text is no longer true.
const ABSENT: [&str; 4] = ["future.rs", "resource_link", "pre_exec", "PR_SET_PDEATHSIG"];

#[test]
fn every_name_it_cites_exists() {
    let text = architecture();
    let tree = Tree::read();
    let mut missing = BTreeSet::new();
    for name in ABSENT {
        assert!(
            !tree.words.contains(name) && !tree.has_path(name),
            "ARCHITECTURE.md says the code has no `{name}`, but it does"
        );
    }
    for span in text.split('`').skip(1).step_by(2) {
        if ABSENT.contains(&span) {
            continue;
        }
        match cite(span, &tree.top) {
            Some(Cited::File(name)) if !tree.has_path(&name) => {
                missing.insert(format!("file `{name}`"));
            }
            Some(Cited::Names(names)) => {
                for name in names.iter().filter(|n| !tree.words.contains(*n)) {
                    missing.insert(format!("`{name}` (in `{span}`)"));
                }
            }
            _ => {}
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md cites what the code does not have:\n{}",
        missing.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn spans_are_read_as_files_names_or_neither() {
    let top: BTreeSet<String> = ["crates", "deploy"].map(str::to_owned).into();
    let file = |s: &str| Some(Cited::File(s.to_owned()));
    let names = |s: &[&str]| Some(Cited::Names(s.iter().map(|n| (*n).to_owned()).collect()));
    assert_eq!(cite("lro/service.rs", &top), file("lro/service.rs"));
    assert_eq!(cite("jq/", &top), file("jq/"));
    assert_eq!(
        cite("deploy/metrics.json", &top),
        file("deploy/metrics.json")
    );
    assert_eq!(cite(".mcp.json", &top), None);
    assert_eq!(cite("io.modelcontextprotocol/", &top), None);
    assert_eq!(
        cite("Lro::intercept_call", &top),
        names(&["Lro", "intercept_call"])
    );
    assert_eq!(cite("lro_core::wire", &top), names(&["lro_core", "wire"]));
    assert_eq!(cite("Lro<H>", &top), names(&["Lro"]));
    assert_eq!(cite("run_if_worker()", &top), names(&["run_if_worker"]));
    assert_eq!(cite("ObjectSink", &top), names(&["ObjectSink"]));
    assert_eq!(cite("lro proxy --http", &top), None);
    assert_eq!(cite("initialize", &top), None);
    assert_eq!(cite("p-{digest}", &top), None);
}

#[test]
fn the_link_reader_reads_links() {
    assert_eq!(
        links("see [a](crates/x.rs) and [b](../y.md#z)"),
        ["crates/x.rs", "../y.md#z"]
    );
    assert!(leaves_repo("../shared/DESIGN.md"));
    assert!(!leaves_repo("crates/lro-core/src/lib.rs"));
}

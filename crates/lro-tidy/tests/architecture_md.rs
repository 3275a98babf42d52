//! ARCHITECTURE.md stays true to the tree: its code map names every crate
//! and example, and it links only to files inside the repository.

use std::path::{Component, Path, PathBuf};

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

#[test]
fn the_link_reader_reads_links() {
    assert_eq!(
        links("see [a](crates/x.rs) and [b](../y.md#z)"),
        ["crates/x.rs", "../y.md#z"]
    );
    assert!(leaves_repo("../shared/DESIGN.md"));
    assert!(!leaves_repo("crates/lro-core/src/lib.rs"));
}

//! Every path guard against an attack input: a clear error, nothing read.
//!
//! The outside targets are FIFOs: opening one for reading blocks until a
//! writer comes, so if a guard let the path through, the call would hang
//! and end in a timeout instead of the guard error asserted here.

mod support;

use std::{fs, os::unix::fs::symlink, path::Path, process::Command, time::Duration};

use lro_core::descriptor::Detail;
use lro_extract::{ExtractConfig, ExtractError, ExtractRequest, Extractor};
use support::*;

const VALID_NAME: &str = "atlatl-list-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl";

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

struct World {
    _top: tempfile::TempDir,
    root: std::path::PathBuf,
    outside: std::path::PathBuf,
    ex: Extractor,
}

fn world() -> World {
    let top = tempfile::tempdir().unwrap();
    let root = top.path().join("offload");
    let outside = top.path().join("secrets");
    fs::create_dir(&root).unwrap();
    fs::create_dir(&outside).unwrap();
    // A perfectly named offload file, but outside the root, as a FIFO.
    mkfifo(&outside.join(VALID_NAME));
    mkfifo(&outside.join("passwd"));
    let ex = Extractor::new(ExtractConfig::new(&root).timeout(Duration::from_millis(1500)));
    World {
        _top: top,
        root,
        outside,
        ex,
    }
}

fn attempt(w: &World, path: &str) -> ExtractError {
    let req = ExtractRequest::new(path).lines(Default::default());
    let err = w.ex.run(&req).unwrap_err();
    assert!(
        !matches!(err, ExtractError::Timeout { .. }),
        "{path}: the guard let it through (the FIFO blocked)"
    );
    err
}

#[test]
fn dot_dot_escapes_are_outside_the_root() {
    let w = world();
    for path in [
        format!("../secrets/{VALID_NAME}"),
        format!("{}/../secrets/{VALID_NAME}", w.root.display()),
        "../secrets/passwd".to_owned(),
        "..".to_owned(),
    ] {
        let e = attempt(&w, &path);
        assert!(matches!(e, ExtractError::OutsideRoot { .. }), "{path}: {e}");
        assert!(e.to_string().contains("outside the offload directory"));
    }
}

#[test]
fn absolute_paths_elsewhere_are_outside_the_root() {
    let w = world();
    let e = attempt(&w, "/etc/passwd");
    assert!(matches!(e, ExtractError::OutsideRoot { .. }), "{e}");
    let e = attempt(&w, &w.outside.join(VALID_NAME).to_string_lossy());
    assert!(matches!(e, ExtractError::OutsideRoot { .. }), "{e}");
}

#[test]
fn symlinks_out_of_the_root_are_refused() {
    let w = world();
    // Named like an offload file, pointing outside.
    let link = w.root.join("atlatl-list-01BX5ZZKBKACTAV9WEVGEMMVRZ.jsonl");
    symlink(w.outside.join(VALID_NAME), &link).unwrap();
    let e = attempt(&w, &link.to_string_lossy());
    assert!(matches!(e, ExtractError::SymlinkEscape { .. }), "{e}");
    assert!(e.to_string().contains("symlink"), "{e}");
    // Not named like one, pointing outside.
    let plain = w.root.join("passwd");
    symlink("/etc/passwd", &plain).unwrap();
    let e = attempt(&w, "passwd");
    assert!(matches!(e, ExtractError::NotOffloadFile { .. }), "{e}");
    // A symlinked directory inside the root does not make its files inside.
    symlink(&w.outside, w.root.join("sub")).unwrap();
    let e = attempt(&w, &format!("sub/{VALID_NAME}"));
    assert!(matches!(e, ExtractError::OutsideRoot { .. }), "{e}");
}

#[test]
fn other_files_and_directories_are_not_offload_files() {
    let w = world();
    fs::write(w.root.join("notes.txt"), "hello\n").unwrap();
    fs::write(w.root.join("atlatl-list-notaulid.jsonl"), "{}\n").unwrap();
    fs::write(
        w.root
            .join(".atlatl-list-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl.tmp"),
        "{}\n",
    )
    .unwrap();
    fs::create_dir(w.root.join("atlatl-list-01BX5ZZKBKACTAV9WEVGEMMVRZ.jsonl")).unwrap();
    mkfifo(&w.root.join("atlatl-list-01C0000000000000000000000A.jsonl"));
    for name in [
        "notes.txt",
        "atlatl-list-notaulid.jsonl",
        ".atlatl-list-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl.tmp",
        "atlatl-list-01BX5ZZKBKACTAV9WEVGEMMVRZ.jsonl",
        "atlatl-list-01C0000000000000000000000A.jsonl",
        "",
    ] {
        let e = attempt(&w, name);
        assert!(
            matches!(e, ExtractError::NotOffloadFile { .. }),
            "{name:?}: {e}"
        );
    }
}

#[test]
fn missing_files_say_they_may_have_expired() {
    let w = world();
    let e = attempt(&w, VALID_NAME);
    assert!(matches!(e, ExtractError::NotFound { .. }), "{e}");
    assert!(e.to_string().contains("expire"), "{e}");
}

#[test]
fn real_offload_files_pass_by_name_path_and_inner_symlink() {
    let w = world();
    let file = offload_memories(&w.root, "list", 5, 1, Detail::Light);
    let name = file
        .path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let link = w.root.join("atlatl-list-01BX5ZZKBKACTAV9WEVGEMMVRZ.jsonl");
    symlink(&file.path, &link).unwrap();
    for path in [
        file.path.to_string_lossy().into_owned(),
        name.clone(),
        format!("./{name}"),
        link.to_string_lossy().into_owned(),
    ] {
        let req = ExtractRequest::new(&path).count(true);
        let out = w.ex.run(&req).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(out.values[0]["count"], 5, "{path}");
    }
}

#[test]
fn a_file_without_a_valid_header_is_rejected() {
    let w = world();
    fs::write(w.root.join(VALID_NAME), "{\"id\": 1}\n{\"id\": 2}\n").unwrap();
    let req = ExtractRequest::new(VALID_NAME).count(true);
    let e = w.ex.run(&req).unwrap_err();
    assert!(matches!(e, ExtractError::BadHeader(_)), "{e}");
}

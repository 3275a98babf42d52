//! The store under attack: a directory swapped for a symlink to the outside
//! while 400 writes and 600 reads run, a FIFO and a directory where a file
//! is expected, and two principals who must not see each other's entries.

use std::{
    fs,
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use lro_context::{ContextError, ContextOffloader, FileContents, Roots};
use lro_core::principal::Principal;
use serde_json::{Value, json};

fn history(id: &str) -> Value {
    json!({
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
                "function": {"name": "fetch", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": id, "content": format!("needle {id} ").repeat(2_000)},
            {"role": "assistant", "content": "done"}
        ],
        "context_manage_mode": "compact",
        "max_total_tokens": 100,
        "max_tool_message_tokens": 100,
        "keep_recent_count": 0,
    })
}

fn offloader(root: &Path) -> ContextOffloader {
    ContextOffloader::new().roots(Roots::new([root]).unwrap())
}

/// Flips `root/d` between a real directory and a symlink to `outside`
/// until told to stop; every rename may fail against the writers, which is
/// fine: `d` is always absent, the real directory or the link.
fn flipper(root: &Path, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<usize> {
    let root = root.to_owned();
    std::thread::spawn(move || {
        let (d, real, link) = (root.join("d"), root.join("real"), root.join("link"));
        let mut flips = 0;
        while !stop.load(Ordering::Relaxed) {
            // A writer that met no `d` made a real one: clear it away.
            if real.exists() && fs::symlink_metadata(&d).is_ok_and(|m| m.is_dir()) {
                let _ = fs::remove_dir_all(&d);
            }
            // Each state held for a moment, so readers meet both.
            for (from, to) in [(&real, &d), (&d, &real), (&link, &d), (&d, &link)] {
                let _ = fs::rename(from, to);
                if to == &d {
                    for _ in 0..50 {
                        std::thread::yield_now();
                    }
                }
            }
            flips += 1;
        }
        flips
    })
}

#[test]
fn a_directory_swapped_for_a_symlink_never_leads_outside() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let outside = tmp.path().join("outside");
    fs::create_dir_all(root.join("real")).unwrap();
    fs::create_dir_all(&outside).unwrap();
    fs::write(root.join("real/secret.txt"), "inside\n").unwrap();
    fs::write(outside.join("secret.txt"), "OUTSIDE\n").unwrap();
    std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
    let root = root.canonicalize().unwrap();
    let store = offloader(&root);
    let anon = Principal::anonymous();

    let stop = Arc::new(AtomicBool::new(false));
    let flips = flipper(&root, stop.clone());
    let started = Instant::now();
    let mut read_inside = 0;
    for i in 0..600 {
        if i < 400 {
            let mut args = history(&format!("c{i}"));
            args["store_dir"] = json!(root.join("d").display().to_string());
            // Refused (outside, or a failed write with a warning) or stored
            // inside: never an error that takes anything down.
            let _ = store.offload_json(&anon, args, FileContents::Omitted);
        }
        let path = root.join("d/secret.txt").display().to_string();
        match store.read_file_json(&anon, json!({"absolute_path": path})) {
            Ok(text) => {
                assert_eq!(text, "inside\n", "read {i} came from outside the root");
                read_inside += 1;
            }
            Err(e) => assert!(
                e.is_bad_request() || matches!(e, ContextError::Io { .. }),
                "{e}"
            ),
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flips.join().unwrap();
    assert!(flips > 0 && started.elapsed() < Duration::from_secs(60));
    let escaped: Vec<_> = fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "secret.txt")
        .collect();
    assert!(escaped.is_empty(), "written outside the root: {escaped:?}");
    eprintln!("{flips} flips, {read_inside} of 600 reads inside");
}

#[test]
fn a_fifo_and_a_directory_get_clear_errors_quickly() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        root.join("pipe"),
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    fs::create_dir(root.join("folder")).unwrap();
    fs::write(root.join("notes.txt"), "a pipe is not a note\n").unwrap();
    let store = offloader(&root);
    let anon = Principal::anonymous();
    let started = Instant::now();
    for (name, says) in [("pipe", "not a regular file"), ("folder", "is a directory")] {
        let path = root.join(name).display().to_string();
        let err = store
            .read_file_json(&anon, json!({"absolute_path": path}))
            .unwrap_err();
        assert!(err.is_bad_request(), "{err}");
        assert!(err.to_string().contains(says), "{err}");
    }
    // grep walks past the FIFO without opening it for long.
    let found = store.grep_json(&anon, json!({"pattern": "pipe"})).unwrap();
    assert!(found.contains("notes.txt"), "{found}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn each_principal_sees_only_its_own_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let store = offloader(&root);
    let (alice, bob, anon) = (
        Principal::new("alice"),
        Principal::new("bob"),
        Principal::anonymous(),
    );
    let mut args = history("alice_call");
    args["store_dir"] = json!("store");
    let out = store
        .offload_json(&alice, args, FileContents::Omitted)
        .unwrap();
    let answer = out["answer"].as_str().unwrap();
    let path = answer
        .split("new file: ")
        .nth(1)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    assert!(
        path.starts_with(&alice.dir(&root).display().to_string()),
        "{path}"
    );
    // Alice reads and finds her own.
    let read = |p: &Principal, path: &str| store.read_file_json(p, json!({"absolute_path": path}));
    assert!(read(&alice, &path).unwrap().contains("needle alice_call"));
    assert!(
        store
            .grep_json(&alice, json!({"pattern": "needle"}))
            .unwrap()
            .contains("needle alice_call")
    );
    // Bob and the anonymous caller get exactly what a name that does not
    // exist gets, and grep never shows her lines.
    let unknown = path.replace("alice_call", "nobody_call");
    for p in [&bob, &anon] {
        let theirs = read(p, &path).unwrap_err().to_string();
        let missing = read(p, &unknown).unwrap_err().to_string();
        assert_eq!(theirs.replace("alice_call", "nobody_call"), missing);
        let grep = store.grep_json(p, json!({"pattern": "needle"})).unwrap();
        assert!(!grep.contains("alice_call"), "{grep}");
        let grep = store
            .grep_json(
                p,
                json!({"pattern": "needle", "path": alice.dir(&root).display().to_string()}),
            )
            .unwrap();
        assert!(!grep.contains("alice_call"), "{grep}");
    }
}

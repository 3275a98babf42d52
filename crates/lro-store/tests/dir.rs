//! The offload directory on disk: the default is private and per user, and
//! a principal's folder swapped for a symlink while 400 offloads run never
//! takes a file outside the directory.

use std::{
    fs,
    os::unix::fs::{MetadataExt as _, PermissionsExt as _},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use lro_core::{
    OffloadConfig,
    offload::{OffloadInput, Offloader},
    principal::Principal,
    records::RecordSet,
};
use lro_store::{
    DirSink, resolved_output_dir,
    root::{PrivateDir, current_uid},
};

#[test]
fn the_default_directory_is_private_ours_and_not_the_temp_dir_itself() {
    let dir = resolved_output_dir(&OffloadConfig::default());
    assert_ne!(dir, std::env::temp_dir());
    assert!(dir.starts_with(std::env::temp_dir()));
    let opened = PrivateDir::open_nofollow(&dir).unwrap();
    let meta = fs::metadata(opened.path()).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);
    assert_eq!(meta.uid(), current_uid());
}

#[test]
fn a_principal_folder_swapped_for_a_symlink_never_leads_outside() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("out");
    let outside = tmp.path().join("outside");
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(&outside).unwrap();
    let alice = Principal::new("alice");
    let folder = alice.dir(&root);
    let (real, link) = (root.join("real"), root.join("link"));
    fs::create_dir(&real).unwrap();
    std::os::unix::fs::symlink(&outside, &link).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let (stop, folder, real, link) = (stop.clone(), folder.clone(), real.clone(), link.clone());
        std::thread::spawn(move || {
            let mut flips = 0;
            while !stop.load(Ordering::Relaxed) {
                // A writer that met no folder made one: clear it away.
                if real.exists() && fs::symlink_metadata(&folder).is_ok_and(|m| m.is_dir()) {
                    let _ = fs::rename(&folder, root_sibling(&folder, flips));
                }
                for (from, to) in [
                    (&real, &folder),
                    (&folder, &real),
                    (&link, &folder),
                    (&folder, &link),
                ] {
                    let _ = fs::rename(from, to);
                    std::thread::yield_now();
                }
                flips += 1;
            }
            flips
        })
    };
    let offloader = Offloader::new(DirSink::new(&root));
    let text = serde_json::to_string(&vec![serde_json::json!({"n": 1}); 20]).unwrap();
    let records = RecordSet::from_text(&text);
    let mut written = 0;
    for _ in 0..400 {
        let input = OffloadInput::new("t", "t", &records, 100).principal(alice.clone());
        if let Ok(out) = offloader.offload(input, &|| false) {
            assert!(out.result.path.starts_with(&root));
            written += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    assert!(flipper.join().unwrap() > 0);
    assert_eq!(
        fs::read_dir(&outside).unwrap().count(),
        0,
        "written outside"
    );
    eprintln!("{written} of 400 writes inside");
}

/// A place beside the folder to move a writer-made folder out of the way.
fn root_sibling(folder: &std::path::Path, n: usize) -> std::path::PathBuf {
    folder.with_file_name(format!("moved-{n}"))
}

#[test]
fn a_directory_renamed_away_receives_no_more_files() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("out");
    let offloader = Offloader::new(DirSink::new(&root));
    let text = serde_json::to_string(&vec![serde_json::json!({"n": 1}); 5]).unwrap();
    let records = RecordSet::from_text(&text);
    let offload = || offloader.offload(OffloadInput::new("t", "t", &records, 10), &|| false);
    offload().unwrap();
    fs::rename(&root, tmp.path().join("parked")).unwrap();
    fs::write(&root, "a file where the directory was\n").unwrap();
    assert!(offload().is_err(), "the path is no directory now");
    assert_eq!(fs::read_dir(tmp.path().join("parked")).unwrap().count(), 1);
    fs::remove_file(&root).unwrap();
    let out = offload().unwrap();
    assert!(out.result.path.exists(), "a fresh directory at the path");
}

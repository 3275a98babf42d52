//! An offload file swapped for a symlink to a file outside the offload
//! directory while 600 reads run: no read returns the outside file.

use std::{
    fs,
    io::Read as _,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use lro_core::file::OffloadFileName;

#[test]
fn a_file_swapped_for_a_symlink_is_never_read_through() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("out");
    let outside = tmp.path().join("outside");
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(&outside).unwrap();
    let name = OffloadFileName::new("list").to_string();
    let (real, link, target) = (root.join(".real"), root.join(".link"), root.join(&name));
    fs::write(&real, "inside\n").unwrap();
    fs::write(outside.join(&name), "OUTSIDE\n").unwrap();
    std::os::unix::fs::symlink(outside.join(&name), &link).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let (stop, real, link, target) = (stop.clone(), real.clone(), link.clone(), target.clone());
        std::thread::spawn(move || {
            let mut flips = 0;
            while !stop.load(Ordering::Relaxed) {
                for (from, to) in [
                    (&real, &target),
                    (&target, &real),
                    (&link, &target),
                    (&target, &link),
                ] {
                    let _ = fs::rename(from, to);
                    std::thread::yield_now();
                }
                flips += 1;
            }
            flips
        })
    };
    let mut inside = 0;
    for _ in 0..600 {
        std::thread::yield_now();
        let Ok(resolved) = lro_extract::resolve(&root, &name) else {
            continue;
        };
        let Ok(mut file) = resolved.open() else {
            continue;
        };
        let mut text = String::new();
        file.read_to_string(&mut text).unwrap();
        assert_eq!(text, "inside\n", "read through a swapped symlink");
        inside += 1;
    }
    stop.store(true, Ordering::Relaxed);
    assert!(flipper.join().unwrap() > 0);
    eprintln!("{inside} of 600 reads inside");
}

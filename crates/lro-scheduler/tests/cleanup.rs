//! One cleanup pass, with an injected `now`: what is deleted, what is never
//! touched, the events and the metrics.

mod support;

use std::{fs, path::Path, time::Duration};

use lro_core::{
    event::{CleanupOutcome, ExpiryReason, LroEvent, MemorySink},
    metric,
};
use lro_scheduler::{
    CleanupPolicy,
    cleanup::{EntryKind, Removal, remove_entry, scan},
    run_once,
};
use metrics_util::debugging::DebuggingRecorder;
use support::*;

const MIN: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3600);

fn policy() -> CleanupPolicy {
    CleanupPolicy::new().ttl(HOUR)
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn expired_files_go_and_everything_else_stays() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let old_a = offload_file(dir.path(), 2 * HOUR, 100, 1);
    let old_b = offload_file(dir.path(), HOUR + MIN, 50, 2);
    let fresh = offload_file(dir.path(), 10 * MIN, 30, 3);

    // Look-alikes that must never be touched, however old their ULID.
    let ancient = name_aged("list", 48 * HOUR, 9).ulid().to_string();
    let foreign = [
        other_file(dir.path(), "notes.txt"),
        other_file(dir.path(), "atlatl-x.jsonl"),
        other_file(dir.path(), &format!("atlatl-Bad-{ancient}.jsonl")),
        other_file(dir.path(), &format!("atlatl-list-{ancient}.jsonl.bak")),
    ];
    let subdir = dir
        .path()
        .join(name_aged("list", 48 * HOUR, 10).to_string());
    fs::create_dir(&subdir).unwrap();
    let target = other_file(outside.path(), "precious.jsonl");
    let link = dir
        .path()
        .join(name_aged("list", 48 * HOUR, 11).to_string());
    std::os::unix::fs::symlink(&target, &link).unwrap();

    let sink = MemorySink::new();
    let done = run_once(dir.path(), &policy(), now(), &sink);

    assert!(!old_a.exists() && !old_b.exists(), "expired files deleted");
    assert!(fresh.exists(), "fresh file kept");
    for path in &foreign {
        assert!(path.exists(), "{} untouched", path.display());
    }
    assert!(subdir.is_dir(), "directory named like a file untouched");
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "symlink itself not removed"
    );
    assert_eq!(
        fs::read(&target).unwrap(),
        b"keep me",
        "symlink target intact"
    );

    assert_eq!(done.scanned, 3, "only matching regular files are scanned");
    assert_eq!(done.deleted, 2);
    assert_eq!(done.bytes_freed, 150);
    assert_eq!(done.files_remaining, 1);
    assert_eq!(done.bytes_remaining, 30);
    assert_eq!(done.temp_removed, 0);
    assert_eq!(done.errors, 0);

    let events = sink.events();
    let mut expired = expired(&events);
    expired.sort_by_key(|e| e.bytes);
    assert_eq!(expired.len(), 2);
    assert_eq!(expired[0].path, old_b);
    assert_eq!(expired[0].age, HOUR + MIN);
    assert_eq!(expired[1].path, old_a);
    assert_eq!(expired[1].age, 2 * HOUR);
    for e in &expired {
        assert_eq!(e.reason, ExpiryReason::Ttl);
        assert_eq!(e.ttl, HOUR);
    }
    assert_eq!(completed(&events), std::slice::from_ref(&done));
    assert!(
        matches!(events.last(), Some(LroEvent::CleanupCompleted(_))),
        "the summary comes last"
    );
}

#[test]
fn created_at_comes_from_the_name_not_the_mtime() {
    let dir = tempfile::tempdir().unwrap();
    // Written just now (fresh mtime) but named two hours ago: expired.
    let old_name = offload_file(dir.path(), 2 * HOUR, 10, 1);
    // Named a minute ago but with an ancient mtime (e.g. restored from a
    // backup with times preserved): fresh.
    let new_name = offload_file(dir.path(), MIN, 10, 2);
    fs::File::options()
        .write(true)
        .open(&new_name)
        .unwrap()
        .set_modified(now() - 100 * HOUR)
        .unwrap();

    run_once(dir.path(), &policy(), now(), &());
    assert!(!old_name.exists());
    assert!(new_name.exists());
}

#[test]
fn stale_temp_files_are_removed_and_live_writes_kept() {
    let dir = tempfile::tempdir().unwrap();
    let stale = temp_file(dir.path(), 20 * MIN, 1);
    let recent = temp_file(dir.path(), MIN, 2);
    // Named long ago but still being written (fresh mtime): a slow write of a
    // huge result, not an abandoned one.
    let slow = temp_file(dir.path(), 20 * MIN, 3);
    fs::File::options()
        .write(true)
        .open(&slow)
        .unwrap()
        .set_modified(now() - MIN)
        .unwrap();
    let offload = offload_file(dir.path(), 5 * MIN, 40, 4);

    let sink = MemorySink::new();
    let done = run_once(dir.path(), &policy().temp_grace(10 * MIN), now(), &sink);

    assert!(!stale.exists());
    assert!(recent.exists());
    assert!(slow.exists());
    assert!(offload.exists());
    assert_eq!(done.temp_removed, 1);
    assert_eq!(done.deleted, 0, "temp files are not offload files");
    assert_eq!(done.scanned, 1);
    assert_eq!(
        (done.files_remaining, done.bytes_remaining),
        (1, 40),
        "temp files are not counted in the gauges"
    );
    assert!(expired(&sink.events()).is_empty());
}

#[test]
fn quota_deletes_oldest_first_after_ttl() {
    let dir = tempfile::tempdir().unwrap();
    let expired_file = offload_file(dir.path(), 3 * HOUR, 1000, 1);
    let oldest = offload_file(dir.path(), 40 * MIN, 100, 2);
    let older = offload_file(dir.path(), 30 * MIN, 100, 3);
    let newer = offload_file(dir.path(), 20 * MIN, 100, 4);
    let newest = offload_file(dir.path(), 10 * MIN, 100, 5);

    let sink = MemorySink::new();
    let done = run_once(
        dir.path(),
        &policy().max_total_bytes(Some(250)),
        now(),
        &sink,
    );

    assert!(!expired_file.exists());
    assert!(!oldest.exists());
    assert!(!older.exists());
    assert!(newer.exists());
    assert!(newest.exists());

    let expired = expired(&sink.events());
    let got: Vec<_> = expired.iter().map(|e| (e.path.clone(), e.reason)).collect();
    assert_eq!(
        got,
        [
            (expired_file, ExpiryReason::Ttl),
            (oldest, ExpiryReason::Quota),
            (older, ExpiryReason::Quota),
        ],
        "TTL first, then quota oldest first"
    );
    assert_eq!(expired[1].age, 40 * MIN);
    assert_eq!(done.deleted, 3);
    assert_eq!(done.bytes_freed, 1200);
    assert_eq!((done.files_remaining, done.bytes_remaining), (2, 200));
}

#[test]
fn quota_under_the_limit_deletes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    offload_file(dir.path(), 10 * MIN, 100, 1);
    offload_file(dir.path(), 20 * MIN, 100, 2);
    let done = run_once(dir.path(), &policy().max_total_bytes(Some(200)), now(), &());
    assert_eq!(done.deleted, 0);
    assert_eq!(done.bytes_remaining, 200);
}

#[test]
fn metrics_count_expiries_and_set_gauges() {
    let dir = tempfile::tempdir().unwrap();
    offload_file(dir.path(), 2 * HOUR, 10, 1);
    offload_file(dir.path(), 3 * HOUR, 10, 2);
    offload_file(dir.path(), 30 * MIN, 70, 3);
    offload_file(dir.path(), 10 * MIN, 80, 4);

    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let policy = policy().max_total_bytes(Some(100));
    metrics::with_local_recorder(&recorder, || {
        metric::register_zeroed();
        run_once(dir.path(), &policy, now(), &());
    });

    let m = Metrics::take(&snapshotter);
    let expired = metric::OFFLOAD_FILES_EXPIRED_TOTAL;
    let runs = metric::CLEANUP_RUNS_TOTAL;
    assert_eq!(
        m.counter(expired, &[("reason", ExpiryReason::Ttl.as_str())]),
        2
    );
    assert_eq!(
        m.counter(expired, &[("reason", ExpiryReason::Quota.as_str())]),
        1
    );
    assert_eq!(m.gauge(metric::OFFLOAD_FILES), 1.0);
    assert_eq!(m.gauge(metric::OFFLOAD_DISK_BYTES), 80.0);
    assert_eq!(
        m.counter(runs, &[("outcome", CleanupOutcome::Success.as_str())]),
        1
    );
    assert_eq!(
        m.counter(runs, &[("outcome", CleanupOutcome::Error.as_str())]),
        0
    );
    assert_eq!(m.counter(metric::CLEANUP_BYTES_FREED_TOTAL, &[]), 90);

    // An hour later the 80-byte file has expired and a new 5-byte one exists;
    // the gauges follow (snapshots drain counters, so these are increments).
    let later = now() + HOUR;
    let path = dir
        .path()
        .join(name_created("list", later - 5 * MIN, 5).to_string());
    fs::write(&path, b"12345").unwrap();
    metrics::with_local_recorder(&recorder, || {
        run_once(dir.path(), &policy, later, &());
    });
    let m = Metrics::take(&snapshotter);
    assert_eq!(
        m.counter(expired, &[("reason", ExpiryReason::Ttl.as_str())]),
        1
    );
    assert_eq!(
        m.counter(expired, &[("reason", ExpiryReason::Quota.as_str())]),
        0
    );
    assert_eq!(m.gauge(metric::OFFLOAD_FILES), 1.0);
    assert_eq!(m.gauge(metric::OFFLOAD_DISK_BYTES), 5.0);
    assert_eq!(
        m.counter(runs, &[("outcome", CleanupOutcome::Success.as_str())]),
        1
    );
}

#[test]
fn a_file_vanishing_after_the_scan_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = offload_file(dir.path(), 2 * HOUR, 10, 1);
    let scanned = scan(dir.path());
    assert_eq!(scanned.entries.len(), 1);
    assert_eq!(scanned.entries[0].kind, EntryKind::Offload);

    // Another cleaner got there first.
    fs::remove_file(&path).unwrap();
    assert!(matches!(
        remove_entry(&scanned.entries[0]),
        Removal::Vanished
    ));
}

#[test]
fn a_file_swapped_for_a_symlink_after_the_scan_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = other_file(outside.path(), "precious");
    let path = offload_file(dir.path(), 2 * HOUR, 10, 1);
    let scanned = scan(dir.path());

    fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();
    assert!(matches!(
        remove_entry(&scanned.entries[0]),
        Removal::Vanished
    ));
    assert!(
        fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(target.exists());
}

#[test]
fn an_unreadable_directory_counts_as_an_error_run() {
    let dir = tempfile::tempdir().unwrap();
    let not_a_dir = other_file(dir.path(), "file");
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let done =
        metrics::with_local_recorder(&recorder, || run_once(&not_a_dir, &policy(), now(), &()));
    assert_eq!(done.errors, 1);
    let m = Metrics::take(&snapshotter);
    assert_eq!(
        m.counter(
            metric::CLEANUP_RUNS_TOTAL,
            &[("outcome", CleanupOutcome::Error.as_str())]
        ),
        1
    );
}

#[test]
fn a_missing_directory_is_nothing_to_clean() {
    let dir = tempfile::tempdir().unwrap();
    let sink = MemorySink::new();
    let done = run_once(&dir.path().join("never-created"), &policy(), now(), &sink);
    assert_eq!(done.errors, 0);
    assert_eq!((done.scanned, done.files_remaining), (0, 0));
    assert_eq!(completed(&sink.events()).len(), 1);
    assert_eq!(names(dir.path()), Vec::<String>::new());
}

#[test]
fn principal_folders_are_walked_one_level_and_never_through_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let folder = dir.path().join("p-0123456789abcdef");
    fs::create_dir(&folder).unwrap();
    let theirs = offload_file(&folder, 2 * HOUR, 100, 1);
    let kept = offload_file(&folder, 10 * MIN, 30, 2);
    // Deeper than one level: not an offload folder, never walked.
    let deeper = folder.join("p-deeper");
    fs::create_dir(&deeper).unwrap();
    let deep = offload_file(&deeper, 2 * HOUR, 10, 3);
    // A principal folder that is a symlink to a directory outside: skipped.
    let precious = offload_file(outside.path(), 2 * HOUR, 10, 4);
    std::os::unix::fs::symlink(outside.path(), dir.path().join("p-fedcba9876543210")).unwrap();

    let done = run_once(dir.path(), &policy(), now(), &MemorySink::new());
    assert_eq!((done.deleted, done.files_remaining), (1, 1));
    assert!(!theirs.exists() && kept.exists());
    assert!(deep.exists(), "one level only");
    assert!(
        precious.exists(),
        "nothing outside through a symlinked folder"
    );
}

#[test]
fn a_folder_swapped_for_a_symlink_after_the_scan_leads_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let folder = dir.path().join("p-0123456789abcdef");
    fs::create_dir(&folder).unwrap();
    let file = offload_file(&folder, 2 * HOUR, 100, 1);
    let entries = scan(dir.path()).entries;
    assert_eq!(entries.len(), 1);
    // The same name outside, and the folder now a symlink to it.
    let twin = outside.path().join(file.file_name().unwrap());
    fs::write(&twin, "precious").unwrap();
    fs::rename(&folder, dir.path().join("moved")).unwrap();
    std::os::unix::fs::symlink(outside.path(), &folder).unwrap();
    // The handle still names the folder that was scanned (now `moved`).
    assert!(matches!(remove_entry(&entries[0]), Removal::Removed { .. }));
    assert!(twin.exists(), "the file outside is untouched");
}

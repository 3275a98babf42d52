//! One cleanup pass over the offload directory: TTL expiry, stale temp files
//! and the disk quota.
//!
//! [`run_once`] is synchronous and takes the current time as an argument, so
//! hosts can call it from any thread (the `lro gc` command does) and tests can
//! move time instead of sleeping. [`scan`] and [`remove_entry`] are the two
//! halves it is built from, public for tools that want to list before they
//! delete.
//!
//! Safety rules, all enforced here:
//! - only names that parse as `atlatl-{operation}-{ulid}.jsonl` (or the temp
//!   form `.atlatl-{operation}-{ulid}.jsonl.tmp`) are considered;
//! - only regular files, per `symlink_metadata`: a symlink, even one named
//!   like an offload file, is never followed and never removed;
//! - the directory itself and each principal's `p-*` folder in it (one
//!   level) are walked; a folder is opened without following a symlink and
//!   every file is stat-ed and removed relative to its folder's open handle,
//!   so a folder swapped for a symlink cannot lead outside;
//! - a file's age comes from the ULID in its name, not from its mtime, which
//!   copies and backups rewrite;
//! - a file that vanishes while the pass runs (another cleaner, `lro gc`, an
//!   operator) is skipped silently; any other error is counted and the pass
//!   goes on.
//!
//! ```
//! use std::time::{Duration, SystemTime};
//! use lro_core::{descriptor::OffloadHeader, event::MemorySink, file::OffloadFileName};
//! use lro_store::dir::write_atomic;
//! use lro_scheduler::{CleanupPolicy, run_once};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let header = OffloadHeader::new("list", None, 0, 1, lro_core::Detail::Light);
//! let written = write_atomic(dir.path(), &OffloadFileName::new("list"), &header, &[] as &[&str], &|| false).unwrap();
//!
//! let policy = CleanupPolicy::new().ttl(Duration::from_secs(3600));
//! let sink = MemorySink::new();
//! // Fresh: kept.
//! let done = run_once(dir.path(), &policy, SystemTime::now(), &sink);
//! assert_eq!((done.scanned, done.deleted, done.files_remaining), (1, 0, 1));
//! // Two hours later: expired.
//! let later = SystemTime::now() + Duration::from_secs(7200);
//! let done = run_once(dir.path(), &policy, later, &sink);
//! assert_eq!((done.deleted, done.files_remaining), (1, 0));
//! assert!(!written.path.exists());
//! ```

use std::{
    io,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant, SystemTime},
};

use cap_fs_ext::DirExt as _;
use cap_std::{ambient_authority, fs::Dir};
use lro_core::{
    config::OffloadConfig,
    event::{CleanupCompleted, EventSink, ExpiryReason, LroEvent, OffloadFileExpired, emit},
    file::OffloadFileName,
    principal::{is_principal_folder, short_digest},
};
use lro_store::quota::{ledger, measure};

/// Default grace period before an orphaned temp file is considered stale.
pub const DEFAULT_TEMP_GRACE: Duration = Duration::from_secs(600);

/// What a cleanup pass deletes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CleanupPolicy {
    /// Offload files older than this (by the ULID in their name) are deleted.
    /// Defaults to one hour (the spec's `ttl_seconds` default).
    pub ttl: Duration,
    /// When set, after TTL expiry the oldest offload files are deleted until
    /// the remaining ones total at most this many bytes. Defaults to none.
    pub max_total_bytes: Option<u64>,
    /// Temp files of interrupted writes older than this are removed.
    /// Defaults to ten minutes.
    pub temp_grace: Duration,
}

impl Default for CleanupPolicy {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(lro_core::config::DEFAULT_TTL_SECONDS),
            max_total_bytes: None,
            temp_grace: DEFAULT_TEMP_GRACE,
        }
    }
}

impl CleanupPolicy {
    /// The defaults: one hour TTL, no quota, ten minutes temp grace.
    pub fn new() -> Self {
        Self::default()
    }

    /// TTL and quota from the `[prompt.offload]` section; temp grace default.
    pub fn from_config(cfg: &OffloadConfig) -> Self {
        Self {
            ttl: Duration::from_secs(cfg.ttl_seconds),
            max_total_bytes: cfg.max_total_bytes,
            ..Self::default()
        }
    }

    /// Sets the TTL. Defaults to one hour.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Sets the disk quota. Defaults to none.
    #[must_use]
    pub fn max_total_bytes(mut self, bytes: Option<u64>) -> Self {
        self.max_total_bytes = bytes;
        self
    }

    /// Sets the temp file grace period. Defaults to ten minutes.
    #[must_use]
    pub fn temp_grace(mut self, grace: Duration) -> Self {
        self.temp_grace = grace;
        self
    }
}

/// Whether an entry is a published offload file or a write's temp file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// `atlatl-{operation}-{ulid}.jsonl`.
    Offload,
    /// `.atlatl-{operation}-{ulid}.jsonl.tmp`, left by a write in progress or
    /// an interrupted one.
    Temp,
}

/// A regular file in the offload directory whose name matches the pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Entry {
    /// Full path.
    pub path: PathBuf,
    /// The parsed name.
    pub name: OffloadFileName,
    /// Offload or temp file.
    pub kind: EntryKind,
    /// Size when scanned.
    pub bytes: u64,
    /// Modification time when scanned, if the platform reports one.
    pub modified: Option<SystemTime>,
    /// The folder it was found in, open: removal is relative to it.
    folder: Folder,
}

/// An open folder of the offload directory, shared by its entries.
#[derive(Debug, Clone)]
struct Folder(Arc<Dir>);

/// Entries are compared by what they name, not by handle identity.
impl PartialEq for Folder {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Folder {}

impl Entry {
    /// When the file was created, from the ULID in its name.
    pub fn created_at(&self) -> SystemTime {
        self.name.created_at()
    }

    /// The file's name in its folder.
    fn file_name(&self) -> String {
        match self.kind {
            EntryKind::Offload => self.name.to_string(),
            EntryKind::Temp => self.name.temp_name(),
        }
    }

    /// Age at `now`; zero for a file from the future (clock skew), so such a
    /// file is kept rather than deleted early.
    pub fn age(&self, now: SystemTime) -> Duration {
        now.duration_since(self.created_at()).unwrap_or_default()
    }
}

/// The result of [`scan`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Scan {
    /// Matching regular files, in directory order.
    pub entries: Vec<Entry>,
    /// Entries that could not be read or stat-ed (vanished files excluded).
    pub errors: usize,
}

/// Lists the offload and temp files in `dir` and in each principal's
/// `p-*` folder in it (one level). A missing directory is an empty scan;
/// names that do not match the pattern, symlinks (to files or to folders),
/// other directories and files that vanish while being stat-ed are skipped.
/// Every folder is opened relative to its parent's handle without following
/// a symlink, and every entry keeps its folder's handle for
/// [`remove_entry`]: a folder swapped for a symlink cannot lead cleanup
/// outside the directory.
pub fn scan(dir: &Path) -> Scan {
    let mut out = Scan::default();
    let root = match Dir::open_ambient_dir(dir, ambient_authority()) {
        Ok(root) => root,
        // No directory yet means nothing was ever offloaded: nothing to clean.
        Err(err) if err.kind() == io::ErrorKind::NotFound => return out,
        Err(err) => {
            tracing::warn!(error = %lro_core::error::chain(&err), "cannot read offload directory");
            out.errors += 1;
            return out;
        }
    };
    scan_folder(&Folder(Arc::new(root)), dir, true, &mut out);
    out
}

fn scan_folder(folder: &Folder, path: &Path, top: bool, out: &mut Scan) {
    let read = match folder.0.entries() {
        Ok(read) => read,
        Err(err) => {
            tracing::warn!(error = %lro_core::error::chain(&err), "cannot read offload directory");
            out.errors += 1;
            return;
        }
    };
    for item in read {
        let item = match item {
            Ok(item) => item,
            Err(err) => {
                tracing::warn!(error = %lro_core::error::chain(&err), "cannot read offload directory entry");
                out.errors += 1;
                continue;
            }
        };
        let file_name = item.file_name();
        // A name that is not UTF-8 cannot match the pattern.
        let Some(file_name) = file_name.to_str() else {
            continue;
        };
        // `file_type` and `metadata` of an entry never follow a symlink.
        if top && is_principal_folder(file_name) && item.file_type().is_ok_and(|t| t.is_dir()) {
            match folder.0.open_dir_nofollow(file_name) {
                Ok(sub) => scan_folder(&Folder(Arc::new(sub)), &path.join(file_name), false, out),
                // Swapped for a symlink or removed since it was listed.
                Err(_) => continue,
            }
            continue;
        }
        let (name, kind) = if let Some(name) = OffloadFileName::parse(file_name) {
            (name, EntryKind::Offload)
        } else if let Some(name) = OffloadFileName::parse_temp(file_name) {
            (name, EntryKind::Temp)
        } else {
            continue;
        };
        let meta = match item.metadata() {
            Ok(meta) => meta,
            Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
            Err(err) => {
                tracing::warn!(file = %short_digest(file_name), error = %lro_core::error::chain(&err), "cannot stat offload file");
                out.errors += 1;
                continue;
            }
        };
        if !meta.file_type().is_file() {
            continue;
        }
        out.entries.push(Entry {
            path: path.join(file_name),
            name,
            kind,
            bytes: meta.len(),
            modified: meta.modified().ok().map(|t| t.into_std()),
            folder: folder.clone(),
        });
    }
}

/// What [`remove_entry`] did.
#[derive(Debug)]
pub enum Removal {
    /// The file was deleted; `bytes` is its size just before.
    Removed {
        /// Bytes freed.
        bytes: u64,
    },
    /// The file was already gone, or is no longer a regular file (replaced by
    /// a symlink or a directory since the scan): left alone, not an error.
    Vanished,
    /// Deleting failed; the file is still there.
    Failed(io::Error),
}

/// Deletes one scanned entry, re-checking first that it is still a regular
/// file: the scan may be seconds old, and a path swapped for a symlink in the
/// meantime must not be touched.
pub fn remove_entry(entry: &Entry) -> Removal {
    let file = entry.file_name();
    let dir = &entry.folder.0;
    let meta = match dir.symlink_metadata(&file) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Removal::Vanished,
        Err(err) => return Removal::Failed(err),
    };
    if !meta.file_type().is_file() {
        return Removal::Vanished;
    }
    match dir.remove_file(&file) {
        Ok(()) => Removal::Removed { bytes: meta.len() },
        Err(err) if err.kind() == io::ErrorKind::NotFound => Removal::Vanished,
        Err(err) => Removal::Failed(err),
    }
}

/// Runs one cleanup pass over `dir` as of `now` and reports it.
///
/// In order: offload files whose `created_at + ttl` has passed are deleted
/// (one [`LroEvent::OffloadFileExpired`] each, reason `ttl`); temp files older
/// than `temp_grace` by both name and mtime are removed; then, when a quota is
/// set and the remaining offload files exceed it, the oldest are deleted until
/// they fit (reason `quota`). Finally one [`LroEvent::CleanupCompleted`] is
/// emitted, which also sets the on-disk gauges. Every event goes through
/// [`emit`], so it reaches tracing, metrics and `sink`.
pub fn run_once(
    dir: &Path,
    policy: &CleanupPolicy,
    now: SystemTime,
    sink: &dyn EventSink,
) -> CleanupCompleted {
    let started = Instant::now();
    let ledger = ledger(dir);
    let mark = ledger.begin_pass();
    let Scan { entries, errors } = scan(dir);
    let mut report = CleanupCompleted::default();
    report.errors = errors;
    let mut remaining = Vec::new();

    for entry in entries {
        match entry.kind {
            EntryKind::Offload => {
                report.scanned += 1;
                let age = entry.age(now);
                if age < policy.ttl {
                    remaining.push(entry);
                    continue;
                }
                if let Some(kept) = expire(entry, age, policy, ExpiryReason::Ttl, sink, &mut report)
                {
                    remaining.push(kept);
                }
            }
            EntryKind::Temp => {
                if is_stale_temp(&entry, now, policy.temp_grace) {
                    remove_temp(&entry, &mut report);
                }
            }
        }
    }

    if let Some(max) = policy.max_total_bytes {
        // ULIDs sort by creation time (millisecond, then random part), so
        // sorting by ULID is oldest first with a stable tie-break.
        remaining.sort_by_key(|e| e.name.ulid());
        let mut total: u64 = remaining.iter().map(|e| e.bytes).sum();
        let mut kept = Vec::with_capacity(remaining.len());
        let mut over = remaining.into_iter();
        for entry in over.by_ref() {
            if total <= max {
                kept.push(entry);
                break;
            }
            let bytes = entry.bytes;
            let age = entry.age(now);
            match expire(entry, age, policy, ExpiryReason::Quota, sink, &mut report) {
                // Could not delete it: it still counts, try the next one.
                Some(stuck) => kept.push(stuck),
                None => total = total.saturating_sub(bytes),
            }
        }
        kept.extend(over);
        remaining = kept;
    }

    report.files_remaining = remaining.len();
    report.bytes_remaining = remaining.iter().map(|e| e.bytes).sum();
    // The writers' quota ledger never sees a deletion: this pass corrects it.
    if let Ok(root) = Dir::open_ambient_dir(dir, ambient_authority())
        && let Ok(usage) = measure(&root)
    {
        ledger.correct(mark, usage);
    }
    report.duration = started.elapsed();
    emit(sink, LroEvent::CleanupCompleted(report.clone()));
    report
}

/// Deletes an offload file and emits its event. Returns the entry when it is
/// still on disk (deletion failed), `None` when it is gone.
fn expire(
    entry: Entry,
    age: Duration,
    policy: &CleanupPolicy,
    reason: ExpiryReason,
    sink: &dyn EventSink,
    report: &mut CleanupCompleted,
) -> Option<Entry> {
    match remove_entry(&entry) {
        Removal::Removed { bytes } => {
            report.deleted += 1;
            report.bytes_freed += bytes;
            emit(
                sink,
                LroEvent::OffloadFileExpired(OffloadFileExpired::new(
                    entry.path, reason, age, policy.ttl, bytes,
                )),
            );
            None
        }
        // Someone else deleted it: neither ours to report nor on disk.
        Removal::Vanished => None,
        Removal::Failed(err) => {
            tracing::warn!(file = %short_digest(&entry.file_name()), error = %lro_core::error::chain(&err), "cannot delete offload file");
            report.errors += 1;
            Some(entry)
        }
    }
}

/// A temp file is stale when both its name and its mtime are older than the
/// grace period: the name alone could make a slow, still-running write of a
/// huge result look abandoned.
fn is_stale_temp(entry: &Entry, now: SystemTime, grace: Duration) -> bool {
    let newest = match entry.modified {
        Some(modified) => modified.max(entry.created_at()),
        None => entry.created_at(),
    };
    now.duration_since(newest).unwrap_or_default() > grace
}

fn remove_temp(entry: &Entry, report: &mut CleanupCompleted) {
    match remove_entry(entry) {
        Removal::Removed { .. } => {
            tracing::debug!(file = %short_digest(&entry.file_name()), "removed stale offload temp file");
            report.temp_removed += 1;
        }
        Removal::Vanished => {}
        Removal::Failed(err) => {
            tracing::warn!(file = %short_digest(&entry.file_name()), error = %lro_core::error::chain(&err), "cannot remove offload temp file");
            report.errors += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lro_core::event::MemorySink;
    use ulid::Ulid;

    #[test]
    fn removal_errors_other_than_not_found_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let name = OffloadFileName::new("list");
        std::fs::write(dir.path().join(name.to_string()), "x").unwrap();
        let mut entry = scan(dir.path()).entries.remove(0);
        // A "folder" handle that is a regular file: every lookup in it fails
        // with ENOTDIR, even for root.
        let blocker = dir.path().join("blocker");
        std::fs::write(&blocker, "x").unwrap();
        let file = std::fs::File::open(&blocker).unwrap();
        entry.folder = Folder(Arc::new(Dir::from_std_file(file)));
        match remove_entry(&entry) {
            Removal::Failed(err) => assert_eq!(err.kind(), io::ErrorKind::NotADirectory),
            other => panic!("expected a failure, got {other:?}"),
        }
    }

    fn at(ms: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
    }

    fn file(dir: &Path, ms: u64, bytes: usize) -> PathBuf {
        let name = OffloadFileName::with_ulid("t", Ulid::from_parts(ms, 1));
        let path = dir.join(name.to_string());
        std::fs::write(&path, vec![b'x'; bytes]).unwrap();
        path
    }

    #[test]
    fn policy_from_config_takes_ttl_and_quota() {
        let cfg = OffloadConfig::new()
            .ttl_seconds(42)
            .max_total_bytes(Some(7));
        let policy = CleanupPolicy::from_config(&cfg);
        assert_eq!(policy.ttl, Duration::from_secs(42));
        assert_eq!(policy.max_total_bytes, Some(7));
        assert_eq!(policy.temp_grace, DEFAULT_TEMP_GRACE);
    }

    #[test]
    fn future_files_have_zero_age() {
        let dir = tempfile::tempdir().unwrap();
        file(dir.path(), 10_000, 1);
        let scan = scan(dir.path());
        assert_eq!(scan.entries[0].age(at(5_000)), Duration::ZERO);
        assert_eq!(scan.entries[0].age(at(12_000)), Duration::from_secs(2));
    }

    #[test]
    fn ttl_boundary_is_inclusive() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(dir.path(), 1_000, 3);
        let policy = CleanupPolicy::new().ttl(Duration::from_secs(10));
        let sink = MemorySink::new();
        run_once(dir.path(), &policy, at(10_999), &sink);
        assert!(path.exists(), "one millisecond before expiry");
        let done = run_once(dir.path(), &policy, at(11_000), &sink);
        assert!(!path.exists());
        assert_eq!((done.deleted, done.bytes_freed), (1, 3));
    }

    #[test]
    fn quota_skips_files_that_fit() {
        let dir = tempfile::tempdir().unwrap();
        let old = file(dir.path(), 1_000, 10);
        let mid = file(dir.path(), 2_000, 10);
        let new = file(dir.path(), 3_000, 10);
        let policy = CleanupPolicy::new()
            .ttl(Duration::from_secs(3600))
            .max_total_bytes(Some(25));
        let done = run_once(dir.path(), &policy, at(4_000), &());
        assert!(!old.exists());
        assert!(mid.exists() && new.exists());
        assert_eq!((done.deleted, done.bytes_remaining), (1, 20));
    }
}

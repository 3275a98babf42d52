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
//! - a file's age comes from the ULID in its name, not from its mtime, which
//!   copies and backups rewrite;
//! - a file that vanishes while the pass runs (another cleaner, `lro gc`, an
//!   operator) is skipped silently; any other error is counted and the pass
//!   goes on.
//!
//! ```
//! use std::time::{Duration, SystemTime};
//! use lro_core::{descriptor::OffloadHeader, event::MemorySink, file::{OffloadFileName, write_atomic}};
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
    fs, io,
    path::{Path, PathBuf},
    time::{Duration, Instant, SystemTime},
};

use lro_core::{
    config::OffloadConfig,
    event::{CleanupCompleted, EventSink, ExpiryReason, LroEvent, OffloadFileExpired, emit},
    file::OffloadFileName,
    principal::short_digest,
};

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
}

impl Entry {
    /// When the file was created, from the ULID in its name.
    pub fn created_at(&self) -> SystemTime {
        self.name.created_at()
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

/// Lists the offload and temp files in `dir` (not recursive). A missing
/// directory is an empty scan; names that do not match the pattern, symlinks,
/// directories and files that vanish while being stat-ed are skipped.
pub fn scan(dir: &Path) -> Scan {
    let mut out = Scan::default();
    let read = match fs::read_dir(dir) {
        Ok(read) => read,
        // No directory yet means nothing was ever offloaded: nothing to clean.
        Err(err) if err.kind() == io::ErrorKind::NotFound => return out,
        Err(err) => {
            tracing::warn!(dir = %dir.display(), error = %err, "cannot read offload directory");
            out.errors += 1;
            return out;
        }
    };
    for item in read {
        let item = match item {
            Ok(item) => item,
            Err(err) => {
                tracing::warn!(dir = %dir.display(), error = %err, "cannot read offload directory entry");
                out.errors += 1;
                continue;
            }
        };
        let file_name = item.file_name();
        // A name that is not UTF-8 cannot match the pattern.
        let Some(file_name) = file_name.to_str() else {
            continue;
        };
        let (name, kind) = if let Some(name) = OffloadFileName::parse(file_name) {
            (name, EntryKind::Offload)
        } else if let Some(name) = OffloadFileName::parse_temp(file_name) {
            (name, EntryKind::Temp)
        } else {
            continue;
        };
        let path = item.path();
        // `symlink_metadata`, not `metadata`: a symlink must be judged as the
        // link itself, never as whatever it points at.
        let meta = match fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
            Err(err) => {
                tracing::warn!(result = %short_digest(&name.to_string()), error = %err, "cannot stat offload file");
                out.errors += 1;
                continue;
            }
        };
        if !meta.file_type().is_file() {
            continue;
        }
        out.entries.push(Entry {
            path,
            name,
            kind,
            bytes: meta.len(),
            modified: meta.modified().ok(),
        });
    }
    out
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
    let meta = match fs::symlink_metadata(&entry.path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Removal::Vanished,
        Err(err) => return Removal::Failed(err),
    };
    if !meta.file_type().is_file() {
        return Removal::Vanished;
    }
    match fs::remove_file(&entry.path) {
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
            tracing::warn!(result = %short_digest(&entry.name.to_string()), error = %err, "cannot delete offload file");
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
            tracing::debug!(path = %entry.path.display(), "removed stale offload temp file");
            report.temp_removed += 1;
        }
        Removal::Vanished => {}
        Removal::Failed(err) => {
            tracing::warn!(result = %short_digest(&entry.name.to_string()), error = %err, "cannot remove offload temp file");
            report.errors += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lro_core::event::MemorySink;
    use ulid::Ulid;

    fn at(ms: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
    }

    fn file(dir: &Path, ms: u64, bytes: usize) -> PathBuf {
        let name = OffloadFileName::with_ulid("t", Ulid::from_parts(ms, 1));
        let path = dir.join(name.to_string());
        fs::write(&path, vec![b'x'; bytes]).unwrap();
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

//! Disk quotas on an offload directory, per principal and in total, checked
//! at write time without scanning the directory on every write: the
//! limits and the ledger, as data. Measuring the directory and making room
//! in it are lro-store's (`lro_store::quota`, `lro_store::room`).
//!
//! A [`Ledger`] counts the bytes of each principal's folder (the root itself
//! for the anonymous principal, `p-{digest}` for the others). It starts from
//! one scan of the directory, the first time a write asks, and from then on
//! every write adds what it is about to write before it writes
//! ([`Ledger::reserve`]), and gives it back if the write fails. Deletions
//! are not seen: the cleanup pass, which walks the directory anyway,
//! corrects the count ([`Ledger::correct`]). Between passes the count can
//! only be too high, which refuses early, never too late.
//!
//! When a write would pass the total, the principals over their fair share
//! make room (lro-store's `make_room`): the share is the total divided by the
//! principals holding bytes (the writer counted, with the write), and the
//! principal furthest over its share loses its oldest result, then again,
//! until the write fits. A principal at or under its share never loses a
//! result this way, so a quiet tenant keeps getting offloads while floods
//! rotate their own oldest results out; when even that cannot make room the
//! write is refused as before (the truncation fallback).
//!
//! Ledgers are shared per directory inside the process ([`Ledger::for_root`],
//! given the directory's canonical path),
//! so the layer that writes and the cleanup task that deletes meet without
//! being wired together. Processes sharing a directory each count only their
//! own writes between passes: give each its own directory.
//!
//! ```
//! use lro_core::quota::{Ledger, Quota};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let ledger = Ledger::for_root(dir.path());
//! let quota = Quota::new().per_principal(Some(100)).total(Some(150));
//! let a = ledger.reserve(&quota, "", 80, || Ok(Default::default())).unwrap();
//! // 80 + 30 is over the principal's 100.
//! assert!(ledger.reserve(&quota, "", 30, || Ok(Default::default())).is_err());
//! // Another principal has its own 100, but the total is 150.
//! assert!(ledger.reserve(&quota, "p-b", 80, || Ok(Default::default())).is_err());
//! a.release();
//! assert!(ledger.reserve(&quota, "p-b", 80, || Ok(Default::default())).is_ok());
//! ```

use std::{
    collections::HashMap,
    io,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, OnceLock},
};

/// Default per-principal quota: 256 MiB.
pub const DEFAULT_MAX_PRINCIPAL_BYTES: u64 = 256 << 20;
/// Default quota of the whole directory: 1 GiB.
pub const DEFAULT_MAX_TOTAL_BYTES: u64 = 1 << 30;

/// The limits a write is checked against. `None` is no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Quota {
    /// Bytes one principal's folder may hold.
    pub per_principal: Option<u64>,
    /// Bytes the whole directory may hold.
    pub total: Option<u64>,
}

impl Quota {
    /// No limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the per-principal limit. Defaults to none.
    #[must_use]
    pub fn per_principal(self, bytes: Option<u64>) -> Self {
        Self {
            per_principal: bytes,
            ..self
        }
    }

    /// Sets the total limit. Defaults to none.
    #[must_use]
    pub fn total(self, bytes: Option<u64>) -> Self {
        Self {
            total: bytes,
            ..self
        }
    }

    /// Whether any limit is set.
    pub fn is_limited(&self) -> bool {
        self.per_principal.is_some() || self.total.is_some()
    }
}

/// Which limit a write would have passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaScope {
    /// The principal's own.
    Principal,
    /// The directory's.
    Total,
}

impl std::fmt::Display for QuotaScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            QuotaScope::Principal => "per-principal",
            QuotaScope::Total => "total",
        })
    }
}

/// A write refused by a quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the {scope} offload quota of {limit} bytes is reached ({used} bytes used, {needed} more needed)"
)]
#[non_exhaustive]
pub struct QuotaExceeded {
    /// Which limit.
    pub scope: QuotaScope,
    /// The limit.
    pub limit: u64,
    /// Bytes counted already.
    pub used: u64,
    /// Bytes the write needed.
    pub needed: u64,
}

/// Bytes per folder key (`""` for the root, `p-{digest}` for a principal).
pub type Usage = HashMap<String, u64>;

#[derive(Debug, Default)]
struct State {
    /// `None` until the first scan.
    usage: Option<Usage>,
    /// Bytes reserved since the ledger was made, per key: what a pass that
    /// was measuring meanwhile may have missed.
    reserved_ever: Usage,
}

/// The byte count of one offload directory. See the module docs.
#[derive(Debug, Default)]
pub struct Ledger {
    state: Mutex<State>,
    /// One writer makes room at a time, so two do not both delete for one
    /// write's worth of room.
    making_room: Mutex<()>,
}

/// Bytes held for a write in progress; [`Reservation::release`] gives them
/// back when the write fails. Dropping it keeps them (the file exists).
#[derive(Debug)]
#[must_use = "release the bytes when the write fails"]
pub struct Reservation {
    ledger: Arc<Ledger>,
    key: String,
    bytes: u64,
}

impl Reservation {
    /// Gives the bytes back: the write did not happen.
    pub fn release(self) {
        let mut state = self.ledger.lock();
        if let Some(usage) = state.usage.as_mut()
            && let Some(used) = usage.get_mut(&self.key)
        {
            *used = used.saturating_sub(self.bytes);
        }
    }
}

/// What a correction starts from: see [`Ledger::begin_pass`].
#[derive(Debug, Clone)]
pub struct PassMark(Usage);

impl Ledger {
    /// The process's ledger of the directory whose canonical path is
    /// `root` (one per path), made on first use. Writers and cleanup meet
    /// here only when they name the directory alike: canonicalize first
    /// (lro-store's `quota::ledger` does).
    pub fn for_root(root: &Path) -> Arc<Ledger> {
        static LEDGERS: OnceLock<Mutex<HashMap<PathBuf, Arc<Ledger>>>> = OnceLock::new();
        let mut all = LEDGERS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        all.entry(root.to_owned()).or_default().clone()
    }

    /// Held while one writer makes room (lro-store's `make_room`), so two
    /// do not both delete for one write's worth of room.
    pub fn room_lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.making_room.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere cannot leave the counts half-updated: every
        // update is a single assignment.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts `bytes` for the folder `key` when both limits allow it.
    /// `scan` measures the directory the first time (lro-store's `quota::measure`).
    ///
    /// # Errors
    ///
    /// [`QuotaExceeded`], naming the limit; nothing is counted then. A
    /// failed first scan counts as a full directory would: refused.
    pub fn reserve(
        self: &Arc<Self>,
        quota: &Quota,
        key: &str,
        bytes: u64,
        scan: impl FnOnce() -> io::Result<Usage>,
    ) -> Result<Reservation, QuotaExceeded> {
        let mut state = self.lock();
        if state.usage.is_none() {
            // Unreadable: count it as full rather than guess low.
            state.usage = Some(scan().unwrap_or_else(|_| {
                Usage::from([(String::new(), quota.total.unwrap_or(u64::MAX))])
            }));
        }
        let usage = state.usage.as_ref().expect("just set");
        let mine = usage.get(key).copied().unwrap_or(0);
        let all: u64 = usage.values().fold(0u64, |a, b| a.saturating_add(*b));
        for (scope, limit, used) in [
            (QuotaScope::Principal, quota.per_principal, mine),
            (QuotaScope::Total, quota.total, all),
        ] {
            if let Some(limit) = limit
                && used.saturating_add(bytes) > limit
            {
                return Err(QuotaExceeded {
                    scope,
                    limit,
                    used,
                    needed: bytes,
                });
            }
        }
        *state
            .usage
            .as_mut()
            .expect("just set")
            .entry(key.to_owned())
            .or_default() += bytes;
        *state.reserved_ever.entry(key.to_owned()).or_default() += bytes;
        Ok(Reservation {
            ledger: self.clone(),
            key: key.to_owned(),
            bytes,
        })
    }

    /// Marks the start of a measuring pass (cleanup's walk).
    pub fn begin_pass(&self) -> PassMark {
        PassMark(self.lock().reserved_ever.clone())
    }

    /// Replaces the count by `measured`, what a pass begun at `mark` found
    /// on disk, plus every byte reserved since `mark`: a write the pass may
    /// have missed is still counted (at worst twice, which is safe).
    pub fn correct(&self, mark: PassMark, measured: Usage) {
        let mut state = self.lock();
        let mut usage = measured;
        for (key, now) in &state.reserved_ever {
            let since = now - mark.0.get(key).copied().unwrap_or(0);
            if since > 0 {
                *usage.entry(key.clone()).or_default() += since;
            }
        }
        state.usage = Some(usage);
    }

    /// `bytes` of the folder `key` were deleted.
    pub fn forget(&self, key: &str, bytes: u64) {
        if let Some(used) = self.lock().usage.as_mut().and_then(|u| u.get_mut(key)) {
            *used = used.saturating_sub(bytes);
        }
    }

    /// The bytes counted now, per folder key (`None` before the first scan).
    pub fn usage(&self) -> Option<Usage> {
        self.lock().usage.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty() -> io::Result<Usage> {
        Ok(Usage::new())
    }

    #[test]
    fn the_first_write_scans_once_and_counts_on() {
        let ledger = Arc::new(Ledger::default());
        let quota = Quota::new().per_principal(Some(10));
        let mut scans = 0;
        let _ = ledger
            .reserve(&quota, "", 4, || {
                scans += 1;
                Ok(Usage::from([(String::new(), 5)]))
            })
            .unwrap();
        let err = ledger
            .reserve(&quota, "", 2, || {
                scans += 1;
                empty()
            })
            .unwrap_err();
        assert_eq!(scans, 1);
        assert_eq!(
            (err.scope, err.used, err.needed),
            (QuotaScope::Principal, 9, 2)
        );
    }

    #[test]
    fn a_correction_keeps_writes_made_during_the_pass() {
        let ledger = Arc::new(Ledger::default());
        let quota = Quota::new();
        let _ = ledger.reserve(&quota, "p-a", 100, empty).unwrap();
        let mark = ledger.begin_pass();
        // Written while the pass walked: maybe seen, maybe not.
        let _ = ledger.reserve(&quota, "p-a", 7, empty).unwrap();
        // The pass deleted the 100-byte file and saw nothing else.
        ledger.correct(mark, Usage::new());
        assert_eq!(ledger.usage().unwrap()["p-a"], 7);
    }

    #[test]
    fn an_unreadable_directory_counts_as_full() {
        let ledger = Arc::new(Ledger::default());
        let quota = Quota::new().total(Some(10));
        let err = ledger
            .reserve(&quota, "", 1, || Err(io::Error::other("no")))
            .unwrap_err();
        assert_eq!(err.scope, QuotaScope::Total);
    }
}

//! Results in a shared object store: how `lro_extract` reads one by its
//! handle on any replica.
//!
//! The handle names the result; the caller's principal names the folder
//! (see `lro_core::handle`), so another principal's handle resolves to a
//! key that does not exist and gets the same answer as an unknown one.
//! The object is copied, streamed, into a private scratch directory under
//! the output directory, read there by the usual extraction engine, and
//! removed when the call ends: no copy outlives the call. A line window
//! copies only the lines it shows, and one more to know whether more
//! follow.
//!
//! A copy is checked against its header as it is made
//! (`lro_core::integrity`): a whole copy by the records and bytes it
//! counted, a line window by the object's size, which the store's metadata
//! gives before the read. A damaged object is reported, never read.
//!
//! Working copies are capped as extractions are (`max_concurrent` in all,
//! `max_per_principal` each) and their slots shared by the same rule
//! (`lro_extract::fair`): a free slot goes to the waiting principal that
//! holds the fewest.

use std::{
    path::PathBuf,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use lro_core::{file::OffloadFileName, handle, principal::Principal};
use lro_extract::{
    ExtractRequest,
    access::{Access, AccessError},
    fair::FairQueue,
};
use lro_store::{ErrorKind, Key, Store, StoreError, root::PrivateDir};

/// The object store results go to, and where their copies are read.
#[derive(Debug, Clone)]
pub(crate) struct Remote {
    pub(crate) store: Arc<dyn Store>,
    /// The local output directory: scratch copies only.
    scratch: PathBuf,
    /// The most one read of the store may take.
    timeout: Duration,
    /// Working copies at once (the extraction limits), so concurrent reads
    /// cannot fill this replica's disk with copies; a call waits at most
    /// `queue`.
    copies: Arc<Copies>,
    queue: Duration,
}

/// The working-copy slots, shared between principals by `FairQueue`'s rule.
#[derive(Debug)]
struct Copies {
    queue: Mutex<FairQueue>,
    /// A slot was given back, or a waiter left.
    changed: tokio::sync::Notify,
    total: usize,
    per: usize,
}

impl Copies {
    fn lock(&self) -> std::sync::MutexGuard<'_, FairQueue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A slot for `principal`, waiting at most `wait`.
    async fn take(self: &Arc<Self>, principal: &Principal, wait: Duration) -> Option<CopySlot> {
        let deadline = tokio::time::Instant::now() + wait;
        let mut waiting = Waiting {
            copies: self,
            ticket: self.lock().wait(principal),
            admitted: false,
        };
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            // Registered before the check, so no release in between is missed.
            changed.as_mut().enable();
            if self.lock().admit(waiting.ticket, self.total, self.per) {
                waiting.admitted = true;
                return Some(CopySlot {
                    copies: self.clone(),
                    principal: principal.clone(),
                });
            }
            tokio::time::timeout_at(deadline, changed).await.ok()?;
        }
    }
}

/// A waiter's place in the queue, left when it gives up or its call ends.
struct Waiting<'a> {
    copies: &'a Copies,
    ticket: u64,
    admitted: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if !self.admitted {
            self.copies.lock().leave(self.ticket);
            // Who is next may have changed.
            self.copies.changed.notify_waiters();
        }
    }
}

/// A working-copy slot, given back when dropped.
#[derive(Debug)]
struct CopySlot {
    copies: Arc<Copies>,
    principal: Principal,
}

impl Drop for CopySlot {
    fn drop(&mut self) {
        self.copies.lock().release(&self.principal);
        self.copies.changed.notify_waiters();
    }
}

/// A result copied for one call; removed when dropped.
pub(crate) struct Fetched {
    // Dropped after `dir`: the slot is freed once the copy is gone.
    dir: tempfile::TempDir,
    _slot: CopySlot,
    /// The copy's path, for the request's `file_path`.
    pub(crate) path: PathBuf,
}

impl Fetched {
    /// The directory the extractor may read: the copy's own.
    pub(crate) fn root(&self) -> &std::path::Path {
        self.dir.path()
    }
}

/// Why a handle could not be read, as the model is told.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    /// Unknown, another's, or expired: `lro_extract`'s own answers.
    #[error(transparent)]
    Access(#[from] AccessError),
    /// The store failed; the result may well be there.
    #[error(
        "lro_extract could not read {handle:?}: {what}. The result is kept; try again shortly."
    )]
    Store {
        /// The handle as given.
        handle: String,
        /// The failure, without URL, key or credential.
        what: &'static str,
        /// The store's error; none when the read ran out of time.
        #[source]
        source: Option<Box<StoreError>>,
    },
    /// Every working-copy slot stayed taken for the queue timeout.
    #[error(
        "lro_extract is busy: too many results are being read now; try {handle:?} again shortly"
    )]
    Busy {
        /// The handle as given.
        handle: String,
    },
    /// The store cannot sign a URL: temporary credentials.
    #[error(
        "this server's store credentials are temporary, so it makes no download URLs: use lro_extract"
    )]
    NoPresign,
    /// The object does not hold what its header says was written.
    #[error("lro_extract cannot read {handle:?}: {damage}")]
    Damaged {
        /// The handle as given.
        handle: String,
        /// How it differs.
        damage: lro_core::integrity::Damaged,
    },
    /// The scratch copy could not be made on this replica.
    /// The text says no more: the local error names this server's
    /// directories.
    #[error("lro_extract could not read {handle:?}: this server could not make its working copy")]
    Scratch {
        /// The handle as given.
        handle: String,
        /// The local error.
        #[source]
        source: std::io::Error,
    },
}

impl Remote {
    pub(crate) fn new(
        store: Arc<dyn Store>,
        scratch: PathBuf,
        timeout: Duration,
        limits: &lro_core::config::ExtractionLimits,
    ) -> Self {
        Self {
            store,
            scratch,
            timeout,
            copies: Arc::new(Copies {
                queue: Mutex::default(),
                changed: tokio::sync::Notify::new(),
                total: limits.max_concurrent.max(1) as usize,
                per: limits.max_per_principal.max(1) as usize,
            }),
            queue: Duration::from_secs(limits.queue_timeout_seconds),
        }
    }

    /// Copies `principal`'s result named `handle` for `request`: checked
    /// for expiry from the handle alone, then looked up in the principal's
    /// folder only.
    pub(crate) async fn fetch(
        &self,
        access: &Access,
        principal: &Principal,
        handle: &str,
        request: &ExtractRequest,
    ) -> Result<Fetched, FetchError> {
        let (name, key) = locate(access, principal, handle)?;
        let slot = self
            .copies
            .take(principal, self.queue)
            .await
            .ok_or_else(|| FetchError::Busy {
                handle: handle.to_owned(),
            })?;
        let scratch = |source| FetchError::Scratch {
            handle: handle.to_owned(),
            source,
        };
        // The output directory is made private (0700, ours) before a copy
        // goes in; each call's copy has a directory of its own.
        PrivateDir::open(&self.scratch).map_err(|e| scratch(std::io::Error::other(e)))?;
        let dir = tempfile::Builder::new()
            .prefix(".fetch-")
            .tempdir_in(&self.scratch)
            .map_err(scratch)?;
        let path = dir.path().join(name.to_string());
        let mut file = tokio::fs::File::create(&path).await.map_err(scratch)?;
        // The header, the lines skipped and shown, and one more.
        let lines = request.lines.as_ref().map(|w| {
            let offset = w.offset.unwrap_or(0) as u64;
            let limit = w.limit.unwrap_or(lro_extract::DEFAULT_LINE_LIMIT) as u64;
            offset.saturating_add(limit).saturating_add(2)
        });
        // A window's check needs the object's size: from the store's
        // metadata, before the read.
        let size = match lines {
            Some(_) => {
                let seen = tokio::time::timeout(self.timeout, self.store.head(&key)).await;
                Some(read_outcome(handle, seen)?.size)
            }
            None => None,
        };
        let copied = tokio::time::timeout(
            self.timeout,
            lro_store::fetch::copy(&*self.store, &key, &mut file, lines),
        )
        .await;
        let copied = match copied {
            // Writing the local copy failed, not the store.
            Ok(Err(StoreError::Body { source, .. })) => return Err(scratch(source)),
            read => read_outcome(handle, read)?,
        };
        check_copy(handle, &path, copied, size)?;
        Ok(Fetched {
            dir,
            _slot: slot,
            path,
        })
    }

    /// One download URL of `principal`'s result named `handle`, valid for
    /// [`PRESIGN_LIFETIME`]: checked as [`Remote::fetch`] checks, and the
    /// object seen to exist, before anything is signed.
    pub(crate) async fn presign(
        &self,
        access: &Access,
        principal: &Principal,
        handle: &str,
    ) -> Result<String, FetchError> {
        let (_, key) = locate(access, principal, handle)?;
        let seen = tokio::time::timeout(self.timeout, self.store.head(&key)).await;
        read_outcome(handle, seen)?;
        self.store
            .presign_get(&key, PRESIGN_LIFETIME)
            .await
            .map_err(|source| store_error(handle, source.kind(), Some(source)))?
            .ok_or(FetchError::NoPresign)
    }
}

/// Whether the copy at `path` holds what its header says: by what the copy
/// counted when it is whole, else by the object's `size`.
fn check_copy(
    handle: &str,
    path: &std::path::Path,
    copied: lro_store::fetch::Copied,
    size: Option<u64>,
) -> Result<(), FetchError> {
    use lro_core::integrity::{Seen, check};
    let damaged = |damage| {
        // No handle: the log is not the caller's.
        tracing::warn!("a stored result does not hold what was written; it was not read");
        FetchError::Damaged {
            handle: handle.to_owned(),
            damage,
        }
    };
    // A header that does not read is the extractor's to report, as for a
    // file.
    let (Some(header_len), Ok(header)) = (copied.first_line, lro_store::file::read_header(path))
    else {
        return Ok(());
    };
    let seen = match size {
        Some(size) if !copied.complete => Seen::sized(header_len, size),
        _ => Seen::whole(header_len, copied.bytes, copied.lines - 1),
    };
    check(&header, seen).map_err(damaged)
}

/// What a read of the store, bounded by the store timeout, tells the
/// caller: a missing object is an unknown result; a failure or the timeout
/// names the outage.
fn read_outcome<T>(
    handle: &str,
    read: Result<Result<T, StoreError>, tokio::time::error::Elapsed>,
) -> Result<T, FetchError> {
    match read {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) if err.kind() == ErrorKind::NotFound => Err(AccessError::Unknown {
            path: handle.to_owned(),
        }
        .into()),
        Ok(Err(err)) => Err(store_error(handle, err.kind(), Some(err))),
        Err(_) => Err(store_error(handle, ErrorKind::Timeout, None)),
    }
}

fn store_error(handle: &str, kind: ErrorKind, source: Option<StoreError>) -> FetchError {
    FetchError::Store {
        handle: handle.to_owned(),
        what: lro_store::sink::describe(kind),
        source: source.map(Box::new),
    }
}

/// How long a presigned URL works: the bound, 5 minutes.
pub(crate) const PRESIGN_LIFETIME: Duration = Duration::from_secs(300);

/// The result `handle` names and its key in `principal`'s folder, once the
/// handle parses and has not expired; nothing is asked of the store.
fn locate(
    access: &Access,
    principal: &Principal,
    handle: &str,
) -> Result<(OffloadFileName, Key), AccessError> {
    let unknown = || AccessError::Unknown {
        path: handle.to_owned(),
    };
    let name = handle::parse(handle).ok_or_else(unknown)?;
    check_expiry(access, principal, handle, &name)?;
    let key = Key::new(handle::key(principal, &name)).map_err(|_| unknown())?;
    Ok((name, key))
}

/// Expiry from the handle's own timestamp, before any request to the store.
fn check_expiry(
    access: &Access,
    principal: &Principal,
    handle: &str,
    name: &OffloadFileName,
) -> Result<(), AccessError> {
    match access.check(principal, &name.to_string()) {
        Ok(_) => Ok(()),
        Err(AccessError::Expired { ttl, .. }) => Err(AccessError::Expired {
            path: handle.to_owned(),
            ttl,
        }),
        Err(_) => Err(AccessError::Unknown {
            path: handle.to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copies(total: usize, per: usize) -> Arc<Copies> {
        Arc::new(Copies {
            queue: Mutex::default(),
            changed: tokio::sync::Notify::new(),
            total,
            per,
        })
    }

    #[tokio::test]
    async fn a_freed_copy_slot_goes_to_the_principal_holding_none() {
        let slots = copies(2, 2);
        let (flood, quiet) = (Principal::new("flood"), Principal::new("quiet"));
        let wait = Duration::from_secs(10);
        let held = [
            slots.take(&flood, wait).await.unwrap(),
            slots.take(&flood, wait).await.unwrap(),
        ];
        // The flood queues again before the quiet principal does.
        let again = tokio::spawn({
            let (slots, flood) = (slots.clone(), flood.clone());
            async move { slots.take(&flood, wait).await.map(|_| ()) }
        });
        while slots.lock().waiting() < 1 {
            tokio::task::yield_now().await;
        }
        let quiet_turn = tokio::spawn({
            let slots = slots.clone();
            async move { slots.take(&quiet, wait).await }
        });
        while slots.lock().waiting() < 2 {
            tokio::task::yield_now().await;
        }
        let [first, _second] = held;
        drop(first);
        let quiet_slot = quiet_turn.await.unwrap();
        assert!(quiet_slot.is_some(), "the quiet principal's turn");
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(!again.is_finished(), "the flood's call still waits");
        again.abort();
        assert!(
            slots
                .take(&flood, Duration::from_millis(10))
                .await
                .is_none(),
            "every slot is taken"
        );
    }
}

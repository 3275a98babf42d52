//! One cleanup pass over an object store that several replicas share:
//! TTL expiry, each expiry counted once however many cleaners run.
//!
//! Every replica runs the same pass on the same bucket. A result's age
//! comes from the ULID in its name, as on disk, not from the upload's time. Deleting
//! is idempotent on S3 and says nothing of who deleted, so an expiry is
//! **claimed** first: the cleaner that creates `lro-claims/{key}` with
//! `If-None-Match: *` ([`Store::create_new`]) is the one that deletes the
//! result and emits its `OffloadFileExpired`; the others skip it. The
//! winner deletes the result before its claim, and counts only a result it
//! saw still there after claiming, so a late cleaner that claims after the
//! claim is gone finds nothing to count. A claim left by a cleaner that
//! died is swept once older than the temp grace: its result deleted
//! uncounted, then the claim (see `sweep`), so an expiry is counted at most
//! once, and once unless its cleaner died mid-way.
//!
//! Ages compare this cleaner's clock with the writer's (the ULID) and with
//! the store's (a claim's last-modified time): replicas' clocks must agree
//! (NTP) to well within the grace (ten minutes); a skew of S makes expiry
//! early or late by S.
//!
//! The directory's byte quota does not apply to a store: an S3 lifecycle
//! rule is its backstop (`deploy/README.md`).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use std::time::{Duration, SystemTime};
//! use bytes::Bytes;
//! use lro_core::{event::MemorySink, file::OffloadFileName};
//! use lro_scheduler::{CleanupPolicy, store::run_store_once};
//! use lro_store::{Env, Key, StoreConfig, open};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = open(dir.path().to_str().unwrap(), &StoreConfig::new(), &Env::new()).unwrap();
//! let key = Key::new(OffloadFileName::new("list").to_string()).unwrap();
//! store.put_bytes(&key, Bytes::from_static(b"{}\n")).await.unwrap();
//! let policy = CleanupPolicy::new().ttl(Duration::from_secs(3600));
//! let sink = MemorySink::new();
//! let done = run_store_once(&*store, &policy, SystemTime::now(), &sink).await;
//! assert_eq!((done.scanned, done.deleted), (1, 0));
//! let later = SystemTime::now() + Duration::from_secs(7200);
//! let done = run_store_once(&*store, &policy, later, &sink).await;
//! assert_eq!((done.deleted, done.files_remaining), (1, 0));
//! # }
//! ```

use std::{
    path::PathBuf,
    time::{Instant, SystemTime},
};

use bytes::Bytes;
use futures::TryStreamExt as _;
use lro_core::{
    event::{CleanupCompleted, EventSink, ExpiryReason, LroEvent, OffloadFileExpired, emit},
    file::OffloadFileName,
    principal::{is_principal_folder, short_digest},
};
use lro_store::{ErrorKind, Key, ObjectMeta, Store};

use crate::CleanupPolicy;

/// The folder of expiry claims, beside the principals' folders.
pub const CLAIMS: &str = "lro-claims";

/// What one object of the store is to cleanup.
enum Kind {
    /// A result: `atlatl-…jsonl` at the top or in a principal's folder.
    Result(OffloadFileName),
    /// An expiry claim.
    Claim,
    /// Anything else: never touched.
    Other,
}

fn kind(key: &Key) -> Kind {
    let parts: Vec<&str> = key.components().collect();
    match parts.as_slice() {
        [CLAIMS, ..] => Kind::Claim,
        [name] | [_, name] if parts.len() == 1 || is_principal_folder(parts[0]) => {
            OffloadFileName::parse(name).map_or(Kind::Other, Kind::Result)
        }
        _ => Kind::Other,
    }
}

/// Runs one pass over `store` as of `now`: results past the TTL are claimed,
/// deleted and reported once (one [`LroEvent::OffloadFileExpired`] each,
/// reason `ttl`), stale claims are removed, and one
/// [`LroEvent::CleanupCompleted`] closes the pass. A failed operation is
/// counted in `errors` and the pass goes on.
pub async fn run_store_once(
    store: &dyn Store,
    policy: &CleanupPolicy,
    now: SystemTime,
    sink: &dyn EventSink,
) -> CleanupCompleted {
    let started = Instant::now();
    let mut report = CleanupCompleted::default();
    let listed: Result<Vec<ObjectMeta>, _> = store.list(None).try_collect().await;
    let objects = match listed {
        Ok(objects) => objects,
        Err(err) => {
            tracing::warn!(kind = %err.kind(), "cannot list the offload store");
            report.errors += 1;
            Vec::new()
        }
    };
    let mut remaining = (0usize, 0u64);
    for object in objects {
        match kind(&object.key) {
            Kind::Result(name) => {
                report.scanned += 1;
                let age = now.duration_since(name.created_at()).unwrap_or_default();
                if age < policy.ttl {
                    remaining.0 += 1;
                    remaining.1 += object.size;
                    continue;
                }
                match expire(store, &object.key).await {
                    Ok(Some(bytes)) => {
                        report.deleted += 1;
                        report.bytes_freed += bytes;
                        emit(
                            sink,
                            LroEvent::OffloadFileExpired(OffloadFileExpired::new(
                                PathBuf::from(object.key.as_str()),
                                ExpiryReason::Ttl,
                                age,
                                policy.ttl,
                                bytes,
                            )),
                        );
                    }
                    Ok(None) => {}
                    Err(err) => {
                        tracing::warn!(object = %short_digest(object.key.as_str()), kind = %err.kind(), "cannot expire an offload object");
                        report.errors += 1;
                    }
                }
            }
            Kind::Claim => {
                let age = now.duration_since(object.last_modified).unwrap_or_default();
                if age > policy.temp_grace {
                    match sweep(store, &object.key).await {
                        Ok(()) => report.temp_removed += 1,
                        Err(err) => {
                            tracing::warn!(kind = %err.kind(), "cannot sweep a stale expiry claim");
                            report.errors += 1;
                        }
                    }
                }
            }
            Kind::Other => {}
        }
    }
    report.files_remaining = remaining.0;
    report.bytes_remaining = remaining.1;
    report.duration = started.elapsed();
    emit(sink, LroEvent::CleanupCompleted(report.clone()));
    report
}

/// Claims `key`'s expiry and, when this cleaner won and the object was
/// still there, deletes it: its size, or `None` when another cleaner has it
/// or had it.
async fn expire(store: &dyn Store, key: &Key) -> Result<Option<u64>, lro_store::StoreError> {
    let claim = Key::new(format!("{CLAIMS}/{key}"))?;
    if !store.create_new(&claim, Bytes::new()).await? {
        return Ok(None);
    }
    let outcome = match store.head(key).await {
        Ok(meta) => store.delete(key).await.map(|()| Some(meta.size)),
        Err(err) if err.kind() == ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err),
    };
    // Only after the result is gone: a later claim then finds nothing.
    // When deleting the result failed, the claim goes too, so the next
    // pass retries at once rather than after the grace. A claim that cannot
    // be deleted is swept later; the expiry is still this cleaner's.
    if let Err(err) = store.delete(&claim).await {
        tracing::warn!(kind = %err.kind(), "cannot delete an expiry claim");
    }
    outcome
}

/// A claim older than the grace: its cleaner died between claiming and
/// deleting, or is slow. Its result is deleted uncounted, then the claim.
/// Deleting the result first keeps the count at most once: a claim made
/// after this finds no result to count, and the claim deleted here may be a
/// newer one whose cleaner counts only if its HEAD came before this delete.
/// The cost: an expiry whose cleaner died is not counted.
async fn sweep(store: &dyn Store, claim: &Key) -> Result<(), lro_store::StoreError> {
    let result = claim
        .as_str()
        .strip_prefix(CLAIMS)
        .map(|k| k.trim_start_matches('/'))
        .and_then(|k| Key::new(k).ok());
    if let Some(result) = result {
        store.delete(&result).await?;
    }
    store.delete(claim).await
}

#[cfg(test)]
mod tests {
    use std::{sync::Arc, time::Duration};

    use lro_core::event::MemorySink;

    use super::*;

    #[tokio::test]
    async fn a_stale_claim_is_swept_with_its_result_uncounted() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> =
            Arc::new(lro_store::LocalStore::open(dir.path(), lro_store::LOCAL_READ_CHUNK).unwrap());
        let name = OffloadFileName::new("list").to_string();
        let result = Key::new(format!("p-01/{name}")).unwrap();
        let claim = Key::new(format!("{CLAIMS}/p-01/{name}")).unwrap();
        store
            .put_bytes(&result, Bytes::from_static(b"{}\n"))
            .await
            .unwrap();
        // A cleaner claimed it and died.
        assert!(store.create_new(&claim, Bytes::new()).await.unwrap());
        let policy = CleanupPolicy::new().ttl(Duration::from_secs(7200));
        let sink = MemorySink::new();
        // Within the grace: both stay, the result is fresh and uncounted.
        let done = run_store_once(&*store, &policy, SystemTime::now(), &sink).await;
        assert_eq!((done.deleted, done.temp_removed), (0, 0));
        assert!(store.head(&claim).await.is_ok());
        // An hour on: the claim is stale; result and claim go, uncounted.
        let later = SystemTime::now() + Duration::from_secs(3600);
        let done = run_store_once(&*store, &policy, later, &sink).await;
        assert_eq!((done.deleted, done.temp_removed, done.errors), (0, 1, 0));
        for key in [&result, &claim] {
            assert_eq!(
                store.head(key).await.unwrap_err().kind(),
                ErrorKind::NotFound
            );
        }
        assert!(
            !sink
                .events()
                .iter()
                .any(|e| matches!(e, LroEvent::OffloadFileExpired(_)))
        );
    }

    #[test]
    fn only_results_and_claims_are_ours() {
        let name = OffloadFileName::new("list").to_string();
        let k = |s: &str| Key::new(s).unwrap();
        assert!(matches!(kind(&k(&name)), Kind::Result(_)));
        assert!(matches!(
            kind(&k(&format!("p-0123/{name}"))),
            Kind::Result(_)
        ));
        assert!(matches!(
            kind(&k(&format!("{CLAIMS}/p-0123/{name}"))),
            Kind::Claim
        ));
        for other in [
            format!("other/{name}"),
            format!("p-0123/x/{name}"),
            "notes.txt".to_owned(),
        ] {
            assert!(matches!(kind(&k(&other)), Kind::Other), "{other}");
        }
    }
}

//! One cleanup pass over an object store that several replicas share:
//! TTL expiry, each expiry counted once however many cleaners run.
//!
//! Every replica runs the same pass on the same bucket. A result's age
//! comes from the ULID in its name, as on disk, so no cleaner deletes one
//! before its TTL whatever its clock says of the object's upload. Deleting
//! is idempotent on S3 and says nothing of who deleted, so an expiry is
//! **claimed** first: the cleaner that creates `lro-claims/{key}` with
//! `If-None-Match: *` ([`Store::create_new`]) is the one that deletes the
//! result and emits its `OffloadFileExpired`; the others skip it. The
//! winner deletes the result before its claim, and counts only a result it
//! saw still there after claiming, so a late cleaner that claims after the
//! claim is gone finds nothing to count. A claim left by a cleaner that
//! died is removed once older than the temp grace, and the result expired
//! on a later pass.
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
            tracing::warn!(error = %err, "cannot list the offload store");
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
                        tracing::warn!(object = %short_digest(object.key.as_str()), error = %err, "cannot expire an offload object");
                        report.errors += 1;
                    }
                }
            }
            Kind::Claim => {
                let age = now.duration_since(object.last_modified).unwrap_or_default();
                if age > policy.temp_grace {
                    match store.delete(&object.key).await {
                        Ok(()) => report.temp_removed += 1,
                        Err(err) => {
                            tracing::warn!(error = %err, "cannot remove a stale expiry claim");
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
    // pass retries at once rather than after the grace.
    store.delete(&claim).await?;
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

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

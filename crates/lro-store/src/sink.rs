//! [`BlockingSink`]: a [`Store`] as lro-core's [`ObjectSink`], so the
//! offloader, which runs on a blocking thread, writes results into it.
//!
//! Each call waits on the store's async operation through the current
//! tokio runtime's handle; it must run where blocking is allowed and a
//! runtime is entered (`spawn_blocking`), never on a runtime worker.
//!
//! A failure's text is what the model reads in the truncation warning: it
//! names the kind of failure only, never the store's URL, the key or a
//! credential. The store's own error stays its source.
//!
//! ```
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 1)] async fn main() {
//! use std::sync::Arc;
//! use lro_core::object::ObjectSink as _;
//! use lro_store::{BlockingSink, Env, StoreConfig, open};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = open(dir.path().to_str().unwrap(), &StoreConfig::new(), &Env::new()).unwrap();
//! let sink = BlockingSink::new(store);
//! let n = tokio::task::spawn_blocking(move || {
//!     let mut w = sink.create("a/atlatl-x-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl", 3).unwrap();
//!     w.write(b"{}\n".to_vec()).unwrap();
//!     w.finish().unwrap()
//! })
//! .await
//! .unwrap();
//! assert_eq!(n, 3);
//! assert!(dir.path().join("a/atlatl-x-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl").exists());
//! # }
//! ```

use std::sync::Arc;

use bytes::Bytes;
use lro_core::{
    metric::label::WriteFailureReason,
    object::{ObjectError, ObjectSink, ObjectWriter},
};
use tokio::runtime::Handle;

use crate::{ErrorKind, Key, Store, StoreError, Upload};

/// The chunks the offloader hands on: the upload gathers them into parts.
pub const SINK_CHUNK: usize = 1024 * 1024;

/// A [`Store`] the offloader writes into from a blocking thread.
#[derive(Debug, Clone)]
pub struct BlockingSink {
    store: Arc<dyn Store>,
}

impl BlockingSink {
    /// Writes into `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store }
    }
}

impl ObjectSink for BlockingSink {
    fn create(&self, key: &str, _len: u64) -> Result<Box<dyn ObjectWriter>, ObjectError> {
        let runtime = Handle::try_current().map_err(|e| {
            ObjectError::new(
                WriteFailureReason::StoreOther,
                "cannot store the offload object: the offload store is reached from a thread \
                 without an async runtime",
                Some(Box::new(e)),
            )
        })?;
        let key = Key::new(key).map_err(object_error)?;
        let upload = runtime
            .block_on(self.store.upload(&key))
            .map_err(object_error)?;
        Ok(Box::new(BlockingUpload { upload, runtime }))
    }

    fn chunk_size(&self) -> usize {
        SINK_CHUNK
    }
}

struct BlockingUpload {
    upload: Box<dyn Upload>,
    runtime: Handle,
}

impl ObjectWriter for BlockingUpload {
    fn write(&mut self, chunk: Vec<u8>) -> Result<(), ObjectError> {
        self.runtime
            .block_on(self.upload.write(Bytes::from(chunk)))
            .map_err(object_error)
    }

    fn finish(self: Box<Self>) -> Result<u64, ObjectError> {
        let Self { upload, runtime } = *self;
        runtime.block_on(upload.finish()).map_err(object_error)
    }

    fn abort(self: Box<Self>) {
        let Self { upload, runtime } = *self;
        if let Err(err) = runtime.block_on(upload.abort()) {
            tracing::debug!(error = %lro_core::error::chain(&err), "aborting an offload upload failed");
        }
    }
}

/// The event reason of a store failure.
pub fn reason(kind: ErrorKind) -> WriteFailureReason {
    match kind {
        ErrorKind::Unreachable => WriteFailureReason::StoreUnreachable,
        ErrorKind::CredentialsRefused => WriteFailureReason::StoreCredentials,
        ErrorKind::BucketMissing => WriteFailureReason::StoreBucketMissing,
        ErrorKind::Timeout => WriteFailureReason::StoreTimeout,
        _ => WriteFailureReason::StoreOther,
    }
}

/// What a caller is told of a store failure of `kind`: no URL, key or
/// credential.
pub fn describe(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Unreachable => "the offload store is unreachable",
        ErrorKind::CredentialsRefused => "the offload store refused this server's credentials",
        ErrorKind::BucketMissing => "the offload store's bucket does not exist",
        ErrorKind::Timeout => "the offload store did not answer in time",
        ErrorKind::NotFound => "the offload store has no such object",
        ErrorKind::Other => "the offload store failed",
    }
}

/// The error the offloader reports: "cannot store the offload object", the
/// kind's text, and the store's own error as its detail only (it names
/// keys).
fn object_error(err: StoreError) -> ObjectError {
    let kind = err.kind();
    ObjectError::new(
        reason(kind),
        format!("cannot store the offload object: {}", describe(kind)),
        Some(Box::new(err)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_reason_and_a_text_without_detail() {
        let kinds = [
            ErrorKind::Unreachable,
            ErrorKind::CredentialsRefused,
            ErrorKind::BucketMissing,
            ErrorKind::Timeout,
        ];
        let reasons: std::collections::BTreeSet<_> =
            kinds.iter().map(|k| reason(*k).as_str()).collect();
        assert_eq!(reasons.len(), kinds.len());
        for k in kinds {
            assert!(describe(k).starts_with("the offload store"));
        }
    }
}

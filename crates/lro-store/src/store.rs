//! The one trait both backends implement, and the types it speaks in.
//!
//! A put goes through an [`Upload`]: chunks are written as they come, and
//! the object appears only when [`Upload::finish`] succeeds: complete, or
//! not at all. Dropping an upload unfinished, or [`Upload::abort`], leaves
//! nothing behind (on S3, an interrupted process can leave an incomplete
//! multipart upload, which a lifecycle rule aborts). Reads are streams: a
//! range read fetches only its bytes.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use bytes::Bytes;
//! use futures::TryStreamExt as _;
//! use lro_store::{Env, Key, Store, StoreConfig, open};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let url = dir.path().to_str().unwrap();
//! let store = open(url, &StoreConfig::new(), &Env::new()).unwrap();
//! let key = Key::new("p/01K.jsonl").unwrap();
//! store.put_bytes(&key, Bytes::from_static(b"{\"h\":1}\n{\"a\":1}\n")).await.unwrap();
//! let head = store.head(&key).await.unwrap();
//! assert_eq!(head.size, 16);
//! let range: Vec<Bytes> = store.get_range(&key, 8..16).await.unwrap().try_collect().await.unwrap();
//! assert_eq!(range.concat(), b"{\"a\":1}\n");
//! # }
//! ```

use std::{fmt, ops::Range, time::SystemTime};

use async_trait::async_trait;
use bytes::Bytes;
use futures::{StreamExt as _, stream::BoxStream};

use crate::{Key, StoreError};

/// An object's bytes, as they arrive.
pub type ByteStream = BoxStream<'static, Result<Bytes, StoreError>>;

/// A body to store, as its producer yields it.
pub type BodyStream = BoxStream<'static, std::io::Result<Bytes>>;

/// What a store knows about one object.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ObjectMeta {
    /// Its key, relative to the store's prefix.
    pub key: Key,
    /// Its size in bytes.
    pub size: u64,
    /// When it was last written.
    pub last_modified: SystemTime,
}

impl ObjectMeta {
    /// An object's metadata.
    pub fn new(key: Key, size: u64, last_modified: SystemTime) -> Self {
        Self {
            key,
            size,
            last_modified,
        }
    }
}

/// An object being written. Nothing is visible under its key until
/// [`Upload::finish`] returns `Ok`.
#[async_trait]
pub trait Upload: Send {
    /// Appends a chunk. It may wait while earlier parts are in flight
    /// (back-pressure), so a producer never gets far ahead of the store.
    async fn write(&mut self, chunk: Bytes) -> Result<(), StoreError>;

    /// Completes the object and returns its size.
    async fn finish(self: Box<Self>) -> Result<u64, StoreError>;

    /// Gives up: nothing is stored.
    async fn abort(self: Box<Self>) -> Result<(), StoreError>;
}

/// An offload store: a local directory or a bucket prefix.
///
/// `Display` is the store's URL; neither it nor `Debug` shows a credential.
#[async_trait]
pub trait Store: Send + Sync + fmt::Debug + fmt::Display {
    /// Starts writing `key`. A finished upload replaces an object already there.
    async fn upload(&self, key: &Key) -> Result<Box<dyn Upload>, StoreError>;

    /// The whole object, streamed.
    async fn get(&self, key: &Key) -> Result<ByteStream, StoreError>;

    /// Bytes `range` of the object, streamed; only those bytes are read.
    /// An end past the object's end is cut to it; a start at or past it is
    /// [`StoreError::RangePastEnd`].
    async fn get_range(&self, key: &Key, range: Range<u64>) -> Result<ByteStream, StoreError>;

    /// The object's size and last-modified time. On S3 a missing bucket
    /// is [`ErrorKind::NotFound`](crate::ErrorKind::NotFound) here: a HEAD
    /// answer has no body to say which is missing.
    async fn head(&self, key: &Key) -> Result<ObjectMeta, StoreError>;

    /// Every object under `prefix` (whole components), or every object.
    /// The order is unspecified.
    fn list(&self, prefix: Option<&Key>) -> BoxStream<'static, Result<ObjectMeta, StoreError>>;

    /// Deletes the object. Deleting a missing object is not an error.
    async fn delete(&self, key: &Key) -> Result<(), StoreError>;

    /// Writes `bytes` under `key` only if no object is there: `true` when
    /// this call made it, `false` when one already existed. Of several
    /// callers racing on one key, on any replica, exactly one gets `true`
    /// (S3's `If-None-Match: *`, a local `O_EXCL`): what a claim is made of.
    async fn create_new(&self, key: &Key, bytes: Bytes) -> Result<bool, StoreError>;

    /// A URL that downloads `key` without credentials until `expires` has
    /// passed; `None` when this store cannot make one (a local directory,
    /// or temporary credentials, whose session token the URL would carry).
    /// Signing sends nothing: the object may not exist.
    async fn presign_get(
        &self,
        key: &Key,
        expires: std::time::Duration,
    ) -> Result<Option<String>, StoreError> {
        let _ = (key, expires);
        Ok(None)
    }

    /// Writes `key` from a stream of chunks: complete or not at all. A
    /// failing body aborts the upload ([`StoreError::Body`]).
    async fn put(&self, key: &Key, mut body: BodyStream) -> Result<u64, StoreError> {
        let mut upload = self.upload(key).await?;
        while let Some(chunk) = body.next().await {
            let step = match chunk {
                Ok(chunk) => upload.write(chunk).await,
                Err(source) => Err(StoreError::Body {
                    key: key.to_string(),
                    source,
                }),
            };
            if let Err(err) = step {
                if let Err(abort) = upload.abort().await {
                    tracing::warn!(key = %key, error = %lro_core::error::chain(&abort), "aborting an upload failed");
                }
                return Err(err);
            }
        }
        upload.finish().await
    }

    /// Writes `key` from one buffer.
    async fn put_bytes(&self, key: &Key, bytes: Bytes) -> Result<u64, StoreError> {
        self.put(key, futures::stream::once(async { Ok(bytes) }).boxed())
            .await
    }
}

/// Checks a range against an object's size: the range cut to the size, or
/// the error for a start past the end.
pub(crate) fn clamp(key: &Key, range: Range<u64>, size: u64) -> Result<Range<u64>, StoreError> {
    if range.start >= size && !(range.is_empty() && range.start == size) {
        return Err(StoreError::RangePastEnd {
            key: key.to_string(),
            start: range.start,
            size,
        });
    }
    Ok(range.start..range.end.min(size).max(range.start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_cut_to_the_object() {
        let k = Key::new("k").unwrap();
        assert_eq!(clamp(&k, 2..100, 10).unwrap(), 2..10);
        assert_eq!(clamp(&k, 0..4, 10).unwrap(), 0..4);
        assert_eq!(clamp(&k, 10..10, 10).unwrap(), 10..10);
        assert!(matches!(
            clamp(&k, 10..12, 10),
            Err(StoreError::RangePastEnd { .. })
        ));
    }
}

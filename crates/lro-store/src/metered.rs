//! [`Metered`]: any [`Store`] with the `lro_store_*` metrics recorded for
//! each operation: its time (retries included; a put is the whole upload),
//! the bytes put and got, and each failure by operation and kind.
//!
//! A read's bytes are counted as they stream; its time is until the stream
//! is handed back, since a reader may stop early (a line window).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use std::sync::Arc;
//! use bytes::Bytes;
//! use lro_store::{Env, Key, Metered, Store, StoreConfig, open};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = Metered::new(open(dir.path().to_str().unwrap(), &StoreConfig::new(), &Env::new()).unwrap());
//! let key = Key::new("k").unwrap();
//! store.put_bytes(&key, Bytes::from_static(b"x\n")).await.unwrap();
//! assert_eq!(store.to_string(), format!("file://{}", dir.path().display()));
//! # }
//! ```

use std::{fmt, ops::Range, sync::Arc, time::Instant};

use async_trait::async_trait;
use bytes::Bytes;
use futures::{StreamExt as _, stream::BoxStream};
use lro_core::metric::{self, StoreErrorKind, StoreOp};
use metrics::{counter, histogram};

use crate::{ByteStream, ErrorKind, Key, ObjectMeta, Store, StoreError, Upload};

/// A store that records the `lro_store_*` metrics.
#[derive(Debug, Clone)]
pub struct Metered {
    inner: Arc<dyn Store>,
}

impl Metered {
    /// Records the metrics of `inner`'s operations, its write and read
    /// error counters registered at zero.
    pub fn new(inner: Arc<dyn Store>) -> Self {
        metric::register_store_zeroed();
        Self { inner }
    }
}

impl fmt::Display for Metered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)
    }
}

fn kind(err: &StoreError) -> StoreErrorKind {
    match err.kind() {
        ErrorKind::Unreachable => StoreErrorKind::Unreachable,
        ErrorKind::CredentialsRefused => StoreErrorKind::CredentialsRefused,
        ErrorKind::BucketMissing => StoreErrorKind::BucketMissing,
        ErrorKind::Timeout => StoreErrorKind::Timeout,
        ErrorKind::NotFound => StoreErrorKind::NotFound,
        ErrorKind::Other => StoreErrorKind::Other,
    }
}

/// Records one operation that started at `started` and ended with `result`.
fn record<T>(op: StoreOp, started: Instant, result: &Result<T, StoreError>) {
    histogram!(metric::STORE_OPERATION_DURATION_SECONDS, "op" => op.as_str())
        .record(started.elapsed().as_secs_f64());
    if let Err(err) = result {
        failure(op, err);
    }
}

fn failure(op: StoreOp, err: &StoreError) {
    counter!(metric::STORE_ERRORS_TOTAL, "op" => op.as_str(), "kind" => kind(err).as_str())
        .increment(1);
}

/// Records a listing's time when its stream is dropped: done, or given up.
struct ListTimer(Instant);

impl Drop for ListTimer {
    fn drop(&mut self) {
        histogram!(metric::STORE_OPERATION_DURATION_SECONDS, "op" => StoreOp::List.as_str())
            .record(self.0.elapsed().as_secs_f64());
    }
}

fn bytes(op: StoreOp, n: u64) {
    counter!(metric::STORE_BYTES_TOTAL, "op" => op.as_str()).increment(n);
}

/// A read's stream, its bytes and failures counted as they come.
fn counted(stream: ByteStream) -> ByteStream {
    stream
        .inspect(|chunk| match chunk {
            Ok(chunk) => bytes(StoreOp::Get, chunk.len() as u64),
            Err(err) => failure(StoreOp::Get, err),
        })
        .boxed()
}

struct MeteredUpload {
    inner: Box<dyn Upload>,
    started: Instant,
}

#[async_trait]
impl Upload for MeteredUpload {
    async fn write(&mut self, chunk: Bytes) -> Result<(), StoreError> {
        let result = self.inner.write(chunk).await;
        if result.is_err() {
            record(StoreOp::Put, self.started, &result);
        }
        result
    }

    async fn finish(self: Box<Self>) -> Result<u64, StoreError> {
        let started = self.started;
        let result = self.inner.finish().await;
        record(StoreOp::Put, started, &result);
        if let Ok(n) = result {
            bytes(StoreOp::Put, n);
        }
        result
    }

    async fn abort(self: Box<Self>) -> Result<(), StoreError> {
        self.inner.abort().await
    }
}

#[async_trait]
impl Store for Metered {
    async fn upload(&self, key: &Key) -> Result<Box<dyn Upload>, StoreError> {
        let started = Instant::now();
        let result = self.inner.upload(key).await;
        if result.is_err() {
            record(StoreOp::Put, started, &result);
        }
        result.map(|inner| Box::new(MeteredUpload { inner, started }) as Box<dyn Upload>)
    }

    async fn get(&self, key: &Key) -> Result<ByteStream, StoreError> {
        let started = Instant::now();
        let result = self.inner.get(key).await;
        record(StoreOp::Get, started, &result);
        result.map(counted)
    }

    async fn get_range(&self, key: &Key, range: Range<u64>) -> Result<ByteStream, StoreError> {
        let started = Instant::now();
        let result = self.inner.get_range(key, range).await;
        record(StoreOp::Get, started, &result);
        result.map(counted)
    }

    async fn head(&self, key: &Key) -> Result<ObjectMeta, StoreError> {
        let started = Instant::now();
        let result = self.inner.head(key).await;
        record(StoreOp::Head, started, &result);
        result
    }

    fn list(&self, prefix: Option<&Key>) -> BoxStream<'static, Result<ObjectMeta, StoreError>> {
        let timer = ListTimer(Instant::now());
        self.inner
            .list(prefix)
            .inspect(move |item| {
                let _timer = &timer;
                if let Err(err) = item {
                    failure(StoreOp::List, err);
                }
            })
            .boxed()
    }

    async fn delete(&self, key: &Key) -> Result<(), StoreError> {
        let started = Instant::now();
        let result = self.inner.delete(key).await;
        record(StoreOp::Delete, started, &result);
        result
    }

    async fn presign_get(
        &self,
        key: &Key,
        expires: std::time::Duration,
    ) -> Result<Option<String>, StoreError> {
        self.inner.presign_get(key, expires).await
    }

    async fn create_new(&self, key: &Key, body: Bytes) -> Result<bool, StoreError> {
        let started = Instant::now();
        let result = self.inner.create_new(key, body).await;
        record(StoreOp::Claim, started, &result);
        result
    }
}

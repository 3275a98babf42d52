//! The object-storage backend, through the `object_store` crate: an S3
//! bucket (or any S3-compatible server) under a key prefix.
//!
//! The client is configured from the standard AWS variables of an [`Env`]
//! (as `AmazonS3Builder::from_env` reads them: `AWS_ENDPOINT_URL`,
//! `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`,
//! `AWS_ALLOW_HTTP`, …), then the URL's bucket and the [`StoreConfig`]'s
//! bounds, which win over the environment.
//!
//! A put buffers up to one part: a smaller object goes up in one request;
//! a larger one becomes a multipart upload with at most
//! `max_concurrent_parts` parts in flight, each chunk handed on without a
//! copy, so at most [`StoreConfig::max_buffered`] bytes of it are held.
//! Either way S3 shows the object only once it is complete.
//!
//! ```
//! use lro_store::{Env, RemoteStore, StoreConfig};
//!
//! let env = Env::new()
//!     .var("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
//!     .var("AWS_ALLOW_HTTP", "true")
//!     .var("AWS_ACCESS_KEY_ID", "AKID")
//!     .var("AWS_SECRET_ACCESS_KEY", "s3cr3t");
//! let store = RemoteStore::s3("results", "lro/prod", &StoreConfig::new(), &env).unwrap();
//! assert_eq!(store.to_string(), "s3://results/lro/prod");
//! assert!(!format!("{store:?}").contains("s3cr3t"));
//! ```

use std::{fmt, ops::Range, sync::Arc, time::SystemTime};

use async_trait::async_trait;
use bytes::Bytes;
use futures::{StreamExt as _, TryStreamExt as _, stream::BoxStream};
use object_store::{
    BackoffConfig, ClientConfigKey, GetOptions, GetRange, ObjectStore, ObjectStoreExt as _,
    PutMode, PutOptions, PutPayload, RetryConfig, WriteMultipart,
    aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey},
    path::Path,
    signer::Signer as _,
};

use crate::{
    ByteStream, Env, Key, ObjectMeta, Store, StoreConfig, StoreError, Upload,
    error::{ErrorKind, Op, classify},
    store::clamp,
};

/// A store in an S3 bucket, under a prefix.
pub struct RemoteStore {
    inner: Arc<dyn ObjectStore>,
    /// The client again, as a URL signer, when its credentials are static
    /// (no session token, which a presigned URL would carry).
    signer: Option<Arc<AmazonS3>>,
    url: String,
    prefix: String,
    config: StoreConfig,
}

impl RemoteStore {
    /// An S3 store of `bucket` under `prefix` (empty: the bucket's root),
    /// configured from `env`'s AWS variables and `config`'s bounds. Nothing
    /// is sent until the first operation.
    ///
    /// # Errors
    ///
    /// [`StoreError::Build`] when object_store refuses the configuration.
    pub fn s3(
        bucket: &str,
        prefix: &str,
        config: &StoreConfig,
        env: &Env,
    ) -> Result<Self, StoreError> {
        let prefix = prefix.trim_matches('/').to_owned();
        let url = if prefix.is_empty() {
            format!("s3://{bucket}")
        } else {
            format!("s3://{bucket}/{prefix}")
        };
        let mut builder = AmazonS3Builder::new();
        for (name, value) in env.iter() {
            if let Ok(key) = name.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() {
                builder = builder.with_config(key, value);
            }
        }
        let ms = |d: std::time::Duration| format!("{}ms", d.as_millis());
        let inner = builder
            .with_url(format!("s3://{bucket}"))
            .with_config(
                AmazonS3ConfigKey::Client(ClientConfigKey::ConnectTimeout),
                ms(config.connect_timeout),
            )
            .with_config(
                AmazonS3ConfigKey::Client(ClientConfigKey::Timeout),
                ms(config.request_timeout),
            )
            .with_retry(RetryConfig {
                backoff: BackoffConfig {
                    init_backoff: config.initial_backoff,
                    max_backoff: config.max_backoff,
                    base: 2.0,
                },
                max_retries: config.max_retries,
                retry_timeout: config.retry_timeout,
            })
            .build()
            .map_err(|source| StoreError::Build {
                url: url.clone(),
                source: Box::new(source),
            })?;
        let inner = Arc::new(inner);
        // Only static keys sign: any other source (a session token, web
        // identity, the container or instance metadata) is temporary, and a
        // presigned URL would carry its token.
        let set = |name: &str| env.get(name).is_some_and(|v| !v.is_empty());
        let static_keys =
            set("AWS_ACCESS_KEY_ID") && set("AWS_SECRET_ACCESS_KEY") && !set("AWS_SESSION_TOKEN");
        Ok(Self {
            signer: static_keys.then(|| Arc::clone(&inner)),
            inner,
            url,
            prefix,
            config: config.clone(),
        })
    }

    /// The bounds this store was built with.
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    fn path(&self, key: &str) -> Path {
        if self.prefix.is_empty() {
            Path::from(key)
        } else {
            Path::from(format!("{}/{key}", self.prefix))
        }
    }

    fn err(&self, op: Op, key: &str) -> impl Fn(object_store::Error) -> StoreError + use<> {
        let (key, store) = (key.to_owned(), self.url.clone());
        move |source| remote_error(op, &key, &store, source)
    }
}

/// The key of an object the server listed, relative to `prefix`.
fn key_of(prefix: &str, location: &Path) -> Option<Key> {
    let full = location.as_ref();
    let rel = if prefix.is_empty() {
        full
    } else {
        full.strip_prefix(prefix)?.strip_prefix('/')?
    };
    Key::new(rel).ok()
}

fn remote_error(op: Op, key: &str, store: &str, source: object_store::Error) -> StoreError {
    StoreError::Remote {
        op,
        key: key.to_owned(),
        store: store.to_owned(),
        kind: classify(&source),
        source: Box::new(source),
    }
}

impl fmt::Debug for RemoteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The URL and bounds only: the client holds the credentials.
        f.debug_struct("RemoteStore")
            .field("url", &self.url)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl fmt::Display for RemoteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url)
    }
}

#[async_trait]
impl Store for RemoteStore {
    async fn upload(&self, key: &Key) -> Result<Box<dyn Upload>, StoreError> {
        Ok(Box::new(RemoteUpload {
            inner: Arc::clone(&self.inner),
            path: self.path(key.as_str()),
            key: key.to_string(),
            store: self.url.clone(),
            part_size: self.config.part_size,
            max_parts: self.config.max_concurrent_parts,
            state: State::Buffering(Vec::new(), 0),
            size: 0,
        }))
    }

    async fn presign_get(
        &self,
        key: &Key,
        expires: std::time::Duration,
    ) -> Result<Option<String>, StoreError> {
        let Some(signer) = &self.signer else {
            return Ok(None);
        };
        let url = signer
            .signed_url(http::Method::GET, &self.path(key.as_str()), expires)
            .await
            .map_err(self.err(Op::Get, key.as_str()))?;
        // A second guard: a URL that carries a token is never handed out.
        let url = url.to_string();
        Ok((!url.contains("X-Amz-Security-Token")).then_some(url))
    }

    async fn create_new(&self, key: &Key, bytes: Bytes) -> Result<bool, StoreError> {
        let options = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        match self
            .inner
            .put_opts(&self.path(key.as_str()), PutPayload::from(bytes), options)
            .await
        {
            Ok(_) => Ok(true),
            Err(
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. },
            ) => Ok(false),
            Err(e) => Err(self.err(Op::Put, key.as_str())(e)),
        }
    }

    async fn get(&self, key: &Key) -> Result<ByteStream, StoreError> {
        let err = self.err(Op::Get, key.as_str());
        let got = self
            .inner
            .get(&self.path(key.as_str()))
            .await
            .map_err(&err)?;
        Ok(got.into_stream().map_err(err).boxed())
    }

    async fn get_range(&self, key: &Key, range: Range<u64>) -> Result<ByteStream, StoreError> {
        let err = self.err(Op::Get, key.as_str());
        if range.is_empty() {
            let meta = self.head(key).await?;
            clamp(key, range, meta.size)?;
            return Ok(futures::stream::empty().boxed());
        }
        let options = GetOptions {
            range: Some(GetRange::Bounded(range.clone())),
            ..GetOptions::default()
        };
        match self.inner.get_opts(&self.path(key.as_str()), options).await {
            Ok(got) => Ok(got.into_stream().map_err(err).boxed()),
            Err(e) if e.to_string().contains("416") || e.to_string().contains("InvalidRange") => {
                // Past the end: say so with the object's size.
                let meta = self.head(key).await?;
                clamp(key, range, meta.size)?;
                Err(err(e))
            }
            Err(e) => Err(err(e)),
        }
    }

    async fn head(&self, key: &Key) -> Result<ObjectMeta, StoreError> {
        let meta = self
            .inner
            .head(&self.path(key.as_str()))
            .await
            .map_err(self.err(Op::Head, key.as_str()))?;
        Ok(ObjectMeta::new(
            key.clone(),
            meta.size,
            SystemTime::from(meta.last_modified),
        ))
    }

    fn list(&self, prefix: Option<&Key>) -> BoxStream<'static, Result<ObjectMeta, StoreError>> {
        let at = match (prefix, self.prefix.is_empty()) {
            (Some(p), _) => Some(self.path(p.as_str())),
            (None, false) => Some(Path::from(self.prefix.as_str())),
            (None, true) => None,
        };
        let err = self.err(Op::List, prefix.map_or("", Key::as_str));
        let prefix = self.prefix.clone();
        self.inner
            .list(at.as_ref())
            .map_err(err)
            .try_filter_map(move |meta| {
                let found = key_of(&prefix, &meta.location).map(|key| {
                    ObjectMeta::new(key, meta.size, SystemTime::from(meta.last_modified))
                });
                futures::future::ready(Ok(found))
            })
            .boxed()
    }

    async fn delete(&self, key: &Key) -> Result<(), StoreError> {
        match self.inner.delete(&self.path(key.as_str())).await {
            Err(e) if classify(&e) == ErrorKind::NotFound => Ok(()),
            other => other.map_err(self.err(Op::Delete, key.as_str())),
        }
    }
}

enum State {
    /// Chunks held until a part's worth arrives, and their total size.
    Buffering(Vec<Bytes>, usize),
    /// A multipart upload under way.
    Multipart(WriteMultipart),
    /// Finished or aborted.
    Done,
}

/// One object being written to S3.
struct RemoteUpload {
    inner: Arc<dyn ObjectStore>,
    path: Path,
    key: String,
    store: String,
    part_size: usize,
    max_parts: usize,
    state: State,
    size: u64,
}

impl RemoteUpload {
    fn err(&self, source: object_store::Error) -> StoreError {
        remote_error(Op::Put, &self.key, &self.store, source)
    }
}

#[async_trait]
impl Upload for RemoteUpload {
    async fn write(&mut self, chunk: Bytes) -> Result<(), StoreError> {
        self.size += chunk.len() as u64;
        match &mut self.state {
            State::Buffering(held, len) => {
                *len += chunk.len();
                held.push(chunk);
                if *len < self.part_size {
                    return Ok(());
                }
                let held = std::mem::take(held);
                let started = self
                    .inner
                    .put_multipart(&self.path)
                    .await
                    .map_err(|e| self.err(e))?;
                let mut writer = WriteMultipart::new_with_chunk_size(started, self.part_size);
                for chunk in held {
                    writer.put(chunk);
                }
                self.state = State::Multipart(writer);
                Ok(())
            }
            State::Multipart(writer) => {
                // Back-pressure first: at most `max_parts` parts in flight
                // before the next chunk is taken in.
                let waited = writer.wait_for_capacity(self.max_parts).await;
                waited.map_err(|e| self.err(e))?;
                if let State::Multipart(writer) = &mut self.state {
                    writer.put(chunk);
                }
                Ok(())
            }
            State::Done => unreachable!("an upload is written before it ends"),
        }
    }

    async fn finish(mut self: Box<Self>) -> Result<u64, StoreError> {
        match std::mem::replace(&mut self.state, State::Done) {
            State::Buffering(held, _) => {
                let payload: PutPayload = held.into_iter().collect();
                self.inner
                    .put(&self.path, payload)
                    .await
                    .map_err(|e| self.err(e))?;
            }
            State::Multipart(writer) => {
                writer.finish().await.map_err(|e| self.err(e))?;
            }
            State::Done => unreachable!("an upload ends once"),
        }
        Ok(self.size)
    }

    async fn abort(mut self: Box<Self>) -> Result<(), StoreError> {
        match std::mem::replace(&mut self.state, State::Done) {
            State::Multipart(writer) => writer.abort().await.map_err(|e| self.err(e)),
            State::Buffering(..) | State::Done => Ok(()),
        }
    }
}

impl Drop for RemoteUpload {
    fn drop(&mut self) {
        // Dropped mid-upload: abort it on the server so its parts go too
        // (best effort; a lifecycle rule's AbortIncompleteMultipartUpload
        // is the backstop).
        if let State::Multipart(writer) = std::mem::replace(&mut self.state, State::Done)
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                if let Err(e) = writer.abort().await {
                    tracing::debug!(error = %lro_core::error::chain(&e), "aborting a dropped multipart upload failed");
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Env {
        Env::new()
            .var("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
            .var("AWS_ALLOW_HTTP", "true")
            .var("AWS_ACCESS_KEY_ID", "AKID")
            .var("AWS_SECRET_ACCESS_KEY", "topsecret")
    }

    #[test]
    fn keys_live_under_the_prefix() {
        let s = RemoteStore::s3("b", "/x/y/", &StoreConfig::new(), &env()).unwrap();
        assert_eq!(s.to_string(), "s3://b/x/y");
        assert_eq!(s.path("k/1").as_ref(), "x/y/k/1");
        assert_eq!(
            key_of(&s.prefix, &Path::from("x/y/k/1")).unwrap().as_str(),
            "k/1"
        );
        assert!(key_of(&s.prefix, &Path::from("x/yz/k")).is_none());
        let root = RemoteStore::s3("b", "", &StoreConfig::new(), &env()).unwrap();
        assert_eq!(root.path("k").as_ref(), "k");
    }

    #[test]
    fn debug_shows_no_credential() {
        let s = RemoteStore::s3("b", "p", &StoreConfig::new(), &env()).unwrap();
        let shown = format!("{s:?} {s}");
        assert!(
            !shown.contains("topsecret") && !shown.contains("AKID"),
            "{shown}"
        );
    }
}

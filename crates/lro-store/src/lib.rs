//! The offload store: where offloaded results live, and every file system
//! and network access of the offload path, which lro-core leaves out.
//!
//! The offloader writes through lro-core's `ObjectSink`, one write path
//! whatever the backend: [`DirSink`] for the local offload directory
//! ([`dir`]: private handle ([`root`]), temp file and rename, quotas
//! ([`quota`], [`room`])), [`BlockingSink`] for an object store behind the
//! [`Store`] trait, which has two backends:
//!
//! - [`LocalStore`]: a local directory, reached only through a `cap-std`
//!   handle ([`root::PrivateDir`]), temp file and rename for atomicity,
//!   0600 files.
//! - `RemoteStore`: an S3 bucket (or any S3-compatible server) through the
//!   `object_store` crate, configured from the standard AWS variables, with
//!   bounded and stated timeouts ([`StoreConfig`]). Behind the `s3` cargo
//!   feature (on by default): without it an `s3://` URL is refused with
//!   [`StoreError::S3NotBuilt`], and no S3 or HTTP client is compiled.
//!
//! [`open`] picks one from a URL: a local path or `file://` for the
//! directory, `s3://BUCKET/PREFIX` for the bucket. Every failure carries an
//! [`ErrorKind`] (unreachable, credentials refused, bucket missing,
//! timeout, not found, other), and no credential ever appears in a
//! `Debug`, `Display` or error text.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use bytes::Bytes;
//! use futures::TryStreamExt as _;
//! use lro_store::{Env, ErrorKind, Key, Store, StoreConfig, open};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = open(dir.path().to_str().unwrap(), &StoreConfig::new(), &Env::new()).unwrap();
//! let key = Key::new("p-00/01K.jsonl").unwrap();
//! store.put_bytes(&key, Bytes::from_static(b"line\n")).await.unwrap();
//! let listed: Vec<_> = store.list(None).try_collect().await.unwrap();
//! assert_eq!(listed[0].key, key);
//! store.delete(&key).await.unwrap();
//! let err = store.head(&key).await.unwrap_err();
//! assert_eq!(err.kind(), ErrorKind::NotFound);
//!
//! let err = open("ftp://host/x", &StoreConfig::new(), &Env::new()).unwrap_err();
//! assert!(err.to_string().contains("unknown store scheme `ftp`"));
//! # }
//! ```

#![forbid(unsafe_code)]

pub mod config;
pub mod dir;
pub mod env;
pub mod error;
pub mod fetch;
pub mod file;
pub mod folder_key;
pub mod key;
pub mod local;
pub mod metered;
#[cfg(feature = "context")]
pub mod mirror;
pub mod quota;
#[cfg(feature = "s3")]
pub mod remote;
pub mod room;
pub mod root;
pub mod sink;
pub mod store;
pub mod url;

use std::sync::Arc;

pub use config::StoreConfig;
pub use dir::DirSink;
pub use env::Env;
pub use error::{ErrorKind, StoreError};
pub use key::Key;
pub use local::LocalStore;
pub use metered::Metered;
#[cfg(feature = "s3")]
pub use remote::RemoteStore;
pub use root::resolved_output_dir;
pub use sink::BlockingSink;
pub use store::{BodyStream, ByteStream, ObjectMeta, Store, Upload};
pub use url::StoreUrl;

/// The chunk size of the local store's reads.
pub const LOCAL_READ_CHUNK: usize = 64 * 1024;

/// Opens the store `url` names: a local path or `file://` path (created
/// 0700 when missing), or `s3://BUCKET/PREFIX` configured from `env`'s AWS
/// variables. A remote store sends nothing until its first operation.
///
/// # Errors
///
/// [`StoreError::UnknownScheme`] naming an unknown scheme,
/// [`StoreError::InvalidUrl`], [`StoreError::Root`] for a local directory
/// that cannot be used, [`StoreError::Build`] for an S3 configuration
/// object_store refuses, [`StoreError::S3NotBuilt`] for an S3 URL in a build
/// without the `s3` feature.
pub fn open(url: &str, config: &StoreConfig, env: &Env) -> Result<Arc<dyn Store>, StoreError> {
    open_url(&url.parse()?, config, env)
}

/// The object store `[prompt.offload]`'s `store` names, when it names one:
/// opened with [`StoreConfig::within`] its `store_timeout_seconds` and the
/// process's AWS variables, its operations [`Metered`]. `None` for results
/// in `output_dir`.
///
/// # Errors
///
/// As [`open`].
pub fn from_config(cfg: &lro_core::OffloadConfig) -> Result<Option<Arc<dyn Store>>, StoreError> {
    if !cfg.is_remote() {
        return Ok(None);
    }
    let bounds = StoreConfig::within(std::time::Duration::from_secs(cfg.store_timeout_seconds));
    let store = open(&cfg.store, &bounds, &Env::process())?;
    Ok(Some(Arc::new(Metered::new(store))))
}

/// [`open`] for a URL already parsed.
///
/// # Errors
///
/// As [`open`].
pub fn open_url(
    url: &StoreUrl,
    config: &StoreConfig,
    env: &Env,
) -> Result<Arc<dyn Store>, StoreError> {
    Ok(match url {
        StoreUrl::Local(path) => Arc::new(LocalStore::open(path, LOCAL_READ_CHUNK)?),
        #[cfg(feature = "s3")]
        StoreUrl::S3 { bucket, prefix } => Arc::new(RemoteStore::s3(bucket, prefix, config, env)?),
        #[cfg(not(feature = "s3"))]
        StoreUrl::S3 { bucket, prefix } => {
            let _ = (config, env);
            return Err(StoreError::S3NotBuilt {
                url: format!("s3://{bucket}/{prefix}"),
            });
        }
    })
}

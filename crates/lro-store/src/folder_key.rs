//! The key principal folders are named with, kept in the store so that
//! every replica sharing it names folders alike without configuration:
//! the first replica to start makes it (`create_new`, so of several
//! starting at once one wins), every other reads it.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use lro_store::{Env, StoreConfig, folder_key, open};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = open(dir.path().to_str().unwrap(), &StoreConfig::new(), &Env::new()).unwrap();
//! let a = folder_key::shared(&*store).await.unwrap();
//! let b = folder_key::shared(&*store).await.unwrap();
//! assert_eq!(a, b);
//! # }
//! ```

use bytes::Bytes;
use futures::StreamExt as _;
use lro_core::principal::FolderKey;

use crate::{Key, Store, StoreError};

/// The key's object, at the top of the store's prefix: no result's name
/// (`atlatl-….jsonl`) and no principal's folder (`p-…`), so no handle
/// reaches it and cleanup passes it by.
pub const OBJECT: &str = "lro-principal-key";

/// Why the store's key could not be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FolderKeyError {
    /// The store could not be read or written.
    #[error("cannot keep the principal key in the offload store")]
    Store(#[from] StoreError),
    /// The system's random source could not be read.
    #[error("cannot make a principal key")]
    Random(#[source] std::io::Error),
    /// The object holds no key.
    #[error("the offload store's principal key object ({OBJECT}) is empty")]
    Empty,
}

/// The store's key, made now when it has none.
///
/// # Errors
///
/// [`FolderKeyError`].
pub async fn shared(store: &dyn Store) -> Result<FolderKey, FolderKeyError> {
    let key = Key::new(OBJECT)?;
    let made = FolderKey::generate().map_err(FolderKeyError::Random)?;
    // Of several replicas starting at once, one writes; all read its key.
    store.create_new(&key, Bytes::from(made)).await?;
    let mut body = store.get(&key).await?;
    let mut text = Vec::new();
    while let Some(chunk) = body.next().await {
        text.extend_from_slice(&chunk?);
    }
    FolderKey::new(&String::from_utf8_lossy(&text)).ok_or(FolderKeyError::Empty)
}

//! The key principal folders are named with, kept where every server on
//! the same results finds it: in the store ([`shared`]), so that every
//! replica sharing it names folders alike without configuration (the first
//! replica to start makes it, `create_new`, so of several starting at once
//! one wins, every other reads it); or, for the local directory, in its
//! [`FOLDER_KEY_FILE`] ([`kept_in`]).
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

use std::{
    io::{self, Read as _, Write as _},
    os::unix::fs::OpenOptionsExt as _,
    path::{Path, PathBuf},
};

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
    let made = generate().map_err(FolderKeyError::Random)?;
    // Of several replicas starting at once, one writes; all read its key.
    store.create_new(&key, Bytes::from(made)).await?;
    let mut body = store.get(&key).await?;
    let mut text = Vec::new();
    while let Some(chunk) = body.next().await {
        text.extend_from_slice(&chunk?);
    }
    FolderKey::new(&String::from_utf8_lossy(&text)).ok_or(FolderKeyError::Empty)
}

/// The name of the file a generated key is kept in, in the output
/// directory.
pub const FOLDER_KEY_FILE: &str = ".principal-key";

/// A new random key's text: 64 hex digits from the system's random source.
///
/// # Errors
///
/// When `/dev/urandom` cannot be read.
pub fn generate() -> io::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The key kept in `dir`'s [`FOLDER_KEY_FILE`], read on its first use, and
/// made then (0600, published whole, never replaced) when there is none:
/// every server on that directory names folders alike, across restarts.
/// Should it be neither readable nor makeable, this process uses a random
/// key of its own, with a warning.
pub fn kept_in(dir: impl Into<PathBuf>) -> FolderKey {
    let dir = dir.into();
    FolderKey::on_first_use(move || {
        load_or_create_secret(&dir).unwrap_or_else(|err| {
            tracing::warn!(err = %lro_core::error::chain(&err), "no principal key could be kept; this process uses one of its own");
            generate()
                .unwrap_or_else(|_| format!("{:?}", std::time::SystemTime::now()))
                .into_bytes()
                .into()
        })
    })
}

/// [`kept_in`], read or made now.
///
/// # Errors
///
/// When the file cannot be read or made, or holds no key.
pub fn load_or_create(dir: &Path) -> io::Result<FolderKey> {
    let secret = load_or_create_secret(dir)?;
    FolderKey::new(&String::from_utf8_lossy(&secret)).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "the principal key file is empty",
        )
    })
}

/// The key text in `dir`'s [`FOLDER_KEY_FILE`], written first when there is
/// none: to a temp file, then linked into place, so no reader sees it half
/// written and of two servers starting at once one key wins.
fn load_or_create_secret(dir: &Path) -> io::Result<Box<[u8]>> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(FOLDER_KEY_FILE);
    if !path.exists() {
        let temp = dir.join(format!("{FOLDER_KEY_FILE}.{}.tmp", ulid::Ulid::new()));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
            .and_then(|mut file| file.write_all(generate()?.as_bytes()));
        let linked = written.and_then(|()| match std::fs::hard_link(&temp, &path) {
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            other => other,
        });
        let _ = std::fs::remove_file(&temp);
        linked?;
    }
    let text = std::fs::read_to_string(&path)?;
    let text = text.trim();
    if text.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the principal key file is empty",
        ));
    }
    Ok(text.as_bytes().into())
}

#[cfg(test)]
mod tests {
    use lro_core::principal::Principal;

    use super::*;

    #[test]
    fn a_generated_key_is_kept_and_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let a = load_or_create(dir.path()).unwrap();
        let b = load_or_create(dir.path()).unwrap();
        assert_eq!(a, b);
        let text = std::fs::read_to_string(dir.path().join(FOLDER_KEY_FILE)).unwrap();
        assert_eq!(text.len(), 64);
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(dir.path().join(FOLDER_KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(FolderKey::new("  ").is_none());
        // Kept, it is made only when first used, and read back alike.
        let lazy = tempfile::tempdir().unwrap();
        let kept = kept_in(lazy.path());
        assert!(!lazy.path().join(FOLDER_KEY_FILE).exists());
        let keyed = Principal::new("alice").keyed(&kept);
        assert!(lazy.path().join(FOLDER_KEY_FILE).exists());
        let again = Principal::new("alice").keyed(&kept_in(lazy.path()));
        assert_eq!(keyed.folder(), again.folder());
        assert_eq!(
            std::fs::read_dir(lazy.path()).unwrap().count(),
            1,
            "no temp file left"
        );
    }
}

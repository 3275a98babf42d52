//! The local backend: a directory, opened once as a [`PrivateDir`] (ours,
//! mode 0700) and reached only through that `cap-std` handle, so no key and
//! no symlink swapped inside can lead outside it.
//!
//! A put writes a temp file (`.lro-tmp-{ulid}`, mode 0600, `O_EXCL`) next
//! to its target and renames it into place when finished: readers see the
//! whole object or none. Subdirectories are made 0700. Names starting with
//! a dot are temp files: never listed, never a key.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use bytes::Bytes;
//! use lro_store::{Key, LocalStore, Store};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = LocalStore::open(dir.path(), 64 * 1024).unwrap();
//! let key = Key::new("a/b.jsonl").unwrap();
//! store.put_bytes(&key, Bytes::from_static(b"x\n")).await.unwrap();
//! assert!(dir.path().join("a/b.jsonl").is_file());
//! store.delete(&key).await.unwrap();
//! assert!(!dir.path().join("a/b.jsonl").exists());
//! # }
//! ```

use std::{
    fmt, io,
    ops::Range,
    path::{Path, PathBuf},
    sync::Arc,
};

use crate::root::PrivateDir;
use async_trait::async_trait;
use bytes::Bytes;
use cap_std::fs::{Dir, DirBuilder, DirBuilderExt as _, OpenOptions, OpenOptionsExt as _};
use futures::{StreamExt as _, TryStreamExt as _, stream::BoxStream};
use tokio::io::{AsyncSeekExt as _, AsyncWriteExt as _};
use tokio_util::io::ReaderStream;

use crate::{ByteStream, Key, ObjectMeta, Store, StoreError, Upload, error::Op, store::clamp};

/// How temp files' names start.
pub const TEMP_PREFIX: &str = ".lro-tmp-";

/// A store in a local directory.
pub struct LocalStore {
    root: Arc<PrivateDir>,
    chunk: usize,
}

impl LocalStore {
    /// Opens (creating it 0700 when missing) the directory `path`; reads
    /// stream in chunks of `chunk` bytes.
    ///
    /// # Errors
    ///
    /// [`StoreError::Root`] when the directory cannot be made, opened, or
    /// belongs to another user.
    pub fn open(path: &Path, chunk: usize) -> Result<Self, StoreError> {
        Ok(Self::from_dir(PrivateDir::open(path)?, chunk))
    }

    /// A store over a directory already open.
    pub fn from_dir(root: PrivateDir, chunk: usize) -> Self {
        Self {
            root: Arc::new(root),
            chunk: chunk.max(4096),
        }
    }

    /// The directory's absolute path.
    pub fn path(&self) -> &Path {
        self.root.path()
    }

    fn err(&self, op: Op, key: &str) -> impl Fn(io::Error) -> StoreError + use<> {
        let (key, dir) = (key.to_owned(), self.root.path().to_owned());
        move |source| StoreError::Local {
            op,
            key: key.clone(),
            dir: dir.clone(),
            source,
        }
    }

    /// Runs `f` on the directory handle on the blocking pool.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Dir) -> io::Result<T> + Send + 'static,
    ) -> io::Result<T> {
        let root = Arc::clone(&self.root);
        tokio::task::spawn_blocking(move || f(root.dir()))
            .await
            .map_err(io::Error::other)?
    }

    async fn open_read(&self, key: &Key, op: Op) -> Result<(tokio::fs::File, u64), StoreError> {
        let name = key.as_str().to_owned();
        self.blocking(move |dir| {
            let file = dir.open(&name)?;
            let meta = file.metadata()?;
            if !meta.is_file() {
                return Err(io::Error::new(io::ErrorKind::NotFound, "not a file"));
            }
            Ok((tokio::fs::File::from_std(file.into_std()), meta.len()))
        })
        .await
        .map_err(self.err(op, key.as_str()))
    }
}

impl fmt::Debug for LocalStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalStore")
            .field("path", &self.root.path())
            .finish()
    }
}

impl fmt::Display for LocalStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "file://{}", self.root.path().display())
    }
}

#[async_trait]
impl Store for LocalStore {
    async fn upload(&self, key: &Key) -> Result<Box<dyn Upload>, StoreError> {
        let name = key.as_str().to_owned();
        let temp = match name.rsplit_once('/') {
            Some((parent, _)) => format!("{parent}/{TEMP_PREFIX}{}", ulid::Ulid::new()),
            None => format!("{TEMP_PREFIX}{}", ulid::Ulid::new()),
        };
        let temp_name = temp.clone();
        let file = self
            .blocking(move |dir| {
                if let Some((parent, _)) = name.rsplit_once('/') {
                    dir.create_dir_with(parent, DirBuilder::new().recursive(true).mode(0o700))?;
                }
                let mut opts = OpenOptions::new();
                opts.write(true).create_new(true).mode(0o600);
                Ok(dir.open_with(&temp_name, &opts)?.into_std())
            })
            .await
            .map_err(self.err(Op::Put, key.as_str()))?;
        Ok(Box::new(LocalUpload {
            root: Arc::clone(&self.root),
            key: key.clone(),
            temp,
            file: Some(tokio::fs::File::from_std(file)),
            size: 0,
        }))
    }

    async fn get(&self, key: &Key) -> Result<ByteStream, StoreError> {
        let (file, _) = self.open_read(key, Op::Get).await?;
        let err = self.err(Op::Get, key.as_str());
        Ok(ReaderStream::with_capacity(file, self.chunk)
            .map_err(err)
            .boxed())
    }

    async fn get_range(&self, key: &Key, range: Range<u64>) -> Result<ByteStream, StoreError> {
        let (mut file, size) = self.open_read(key, Op::Get).await?;
        let range = clamp(key, range, size)?;
        let err = self.err(Op::Get, key.as_str());
        file.seek(io::SeekFrom::Start(range.start))
            .await
            .map_err(&err)?;
        let limited = tokio::io::AsyncReadExt::take(file, range.end - range.start);
        Ok(ReaderStream::with_capacity(limited, self.chunk)
            .map_err(err)
            .boxed())
    }

    async fn head(&self, key: &Key) -> Result<ObjectMeta, StoreError> {
        let name = key.as_str().to_owned();
        let (size, modified) = self
            .blocking(move |dir| {
                let meta = dir.metadata(&name)?;
                if !meta.is_file() {
                    return Err(io::Error::new(io::ErrorKind::NotFound, "not a file"));
                }
                Ok((meta.len(), meta.modified()?.into_std()))
            })
            .await
            .map_err(self.err(Op::Head, key.as_str()))?;
        Ok(ObjectMeta::new(key.clone(), size, modified))
    }

    async fn create_new(&self, key: &Key, bytes: Bytes) -> Result<bool, StoreError> {
        let name = key.as_str().to_owned();
        self.blocking(move |dir| {
            if let Some((parent, _)) = name.rsplit_once('/') {
                dir.create_dir_with(parent, DirBuilder::new().recursive(true).mode(0o700))?;
            }
            let mut opts = OpenOptions::new();
            opts.write(true).create_new(true).mode(0o600);
            match dir.open_with(&name, &opts) {
                Ok(mut file) => {
                    std::io::Write::write_all(&mut file, &bytes)?;
                    Ok(true)
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
                Err(e) => Err(e),
            }
        })
        .await
        .map_err(self.err(Op::Put, key.as_str()))
    }

    fn list(&self, prefix: Option<&Key>) -> BoxStream<'static, Result<ObjectMeta, StoreError>> {
        let root = Arc::clone(&self.root);
        let prefix = prefix.cloned();
        let err = self.err(Op::List, prefix.as_ref().map_or("", Key::as_str));
        futures::stream::once(async move {
            tokio::task::spawn_blocking(move || walk(root.dir(), prefix.as_ref()))
                .await
                .map_err(io::Error::other)
                .and_then(|r| r)
        })
        .map(move |found| match found {
            Ok(items) => futures::stream::iter(items.into_iter().map(Ok)).left_stream(),
            Err(e) => futures::stream::once(futures::future::ready(Err(err(e)))).right_stream(),
        })
        .flatten()
        .boxed()
    }

    async fn delete(&self, key: &Key) -> Result<(), StoreError> {
        let name = key.as_str().to_owned();
        self.blocking(move |dir| match dir.remove_file(&name) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        })
        .await
        .map_err(self.err(Op::Delete, key.as_str()))
    }
}

/// Every regular file under `prefix` (a directory or one file), skipping
/// dot-names and symlinks.
fn walk(dir: &Dir, prefix: Option<&Key>) -> io::Result<Vec<ObjectMeta>> {
    let mut out = Vec::new();
    let start = prefix.map_or(PathBuf::new(), |p| PathBuf::from(p.as_str()));
    if !start.as_os_str().is_empty() {
        match dir.symlink_metadata(&start) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Ok(out),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(e),
        }
    }
    let mut stack = vec![start];
    while let Some(at) = stack.pop() {
        let entries = if at.as_os_str().is_empty() {
            dir.entries()?
        } else {
            dir.read_dir(&at)?
        };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with('.') {
                continue;
            }
            let path = at.join(name);
            let meta = entry.metadata()?;
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                push(&mut out, &path, &meta)?;
            }
        }
    }
    Ok(out)
}

fn push(out: &mut Vec<ObjectMeta>, path: &Path, meta: &cap_std::fs::Metadata) -> io::Result<()> {
    let Some(key) = path.to_str().and_then(|p| Key::new(p).ok()) else {
        return Ok(());
    };
    out.push(ObjectMeta::new(
        key,
        meta.len(),
        meta.modified()?.into_std(),
    ));
    Ok(())
}

/// A temp file becoming an object.
struct LocalUpload {
    root: Arc<PrivateDir>,
    key: Key,
    temp: String,
    /// `None` once finished or aborted.
    file: Option<tokio::fs::File>,
    size: u64,
}

impl LocalUpload {
    fn err(&self, source: io::Error) -> StoreError {
        StoreError::Local {
            op: Op::Put,
            key: self.key.to_string(),
            dir: self.root.path().to_owned(),
            source,
        }
    }
}

#[async_trait]
impl Upload for LocalUpload {
    async fn write(&mut self, chunk: Bytes) -> Result<(), StoreError> {
        let file = self
            .file
            .as_mut()
            .expect("an upload is written before it ends");
        if let Err(e) = file.write_all(&chunk).await {
            return Err(self.err(e));
        }
        self.size += chunk.len() as u64;
        Ok(())
    }

    async fn finish(mut self: Box<Self>) -> Result<u64, StoreError> {
        let mut file = self.file.take().expect("an upload ends once");
        let flushed = async {
            file.flush().await?;
            file.sync_data().await
        }
        .await;
        drop(file);
        if let Err(e) = flushed {
            return Err(self.err(e));
        }
        let (root, temp, name) = (
            Arc::clone(&self.root),
            self.temp.clone(),
            self.key.to_string(),
        );
        let renamed =
            tokio::task::spawn_blocking(move || root.dir().rename(&temp, root.dir(), &name))
                .await
                .map_err(io::Error::other)
                .and_then(|r| r);
        match renamed {
            Ok(()) => {
                // Renamed: nothing for Drop to remove.
                self.temp.clear();
                Ok(self.size)
            }
            Err(e) => Err(self.err(e)),
        }
    }

    async fn abort(mut self: Box<Self>) -> Result<(), StoreError> {
        drop(self.file.take());
        let (root, temp) = (Arc::clone(&self.root), std::mem::take(&mut self.temp));
        tokio::task::spawn_blocking(move || match root.dir().remove_file(&temp) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        })
        .await
        .map_err(io::Error::other)
        .and_then(|r| r)
        .map_err(|e| self.err(e))
    }
}

impl Drop for LocalUpload {
    fn drop(&mut self) {
        // Unfinished: the temp file goes (best effort; cleanup removes
        // stale temp files too).
        if !self.temp.is_empty() {
            let _ = self.root.dir().remove_file(&self.temp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_unfinished_upload_leaves_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let store = LocalStore::open(tmp.path(), 4096).unwrap();
        let key = Key::new("d/k").unwrap();
        let mut up = store.upload(&key).await.unwrap();
        up.write(Bytes::from_static(b"partial")).await.unwrap();
        assert_eq!(store.list(None).try_collect::<Vec<_>>().await.unwrap(), []);
        drop(up);
        let left: Vec<_> = std::fs::read_dir(tmp.path().join("d")).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[tokio::test]
    async fn files_are_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = tempfile::tempdir().unwrap();
        let store = LocalStore::open(tmp.path(), 4096).unwrap();
        store
            .put_bytes(&Key::new("a/b").unwrap(), Bytes::from_static(b"x"))
            .await
            .unwrap();
        let mode = |p: &str| {
            std::fs::metadata(tmp.path().join(p))
                .unwrap()
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode("a/b"), 0o600);
        assert_eq!(mode("a"), 0o700);
    }

    #[tokio::test]
    async fn a_symlink_out_of_the_directory_is_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), b"s").unwrap();
        let store = LocalStore::open(tmp.path(), 4096).unwrap();
        std::os::unix::fs::symlink(outside.path(), tmp.path().join("link")).unwrap();
        let key = Key::new("link/secret").unwrap();
        assert!(store.get(&key).await.is_err());
        assert!(
            store
                .put_bytes(&key, Bytes::from_static(b"w"))
                .await
                .is_err()
        );
        assert_eq!(std::fs::read(outside.path().join("secret")).unwrap(), b"s");
    }
}

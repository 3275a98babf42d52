//! [`DirSink`]: the local offload directory as lro-core's [`ObjectSink`],
//! the backend results go to when no object store is configured.
//!
//! The directory is opened once, on the first write, as a [`PrivateDir`]
//! (and again only if it was removed or replaced meanwhile); clones share
//! the handle and the quota [`Ledger`]. A result is written to a hidden temp
//! file (`.atlatl-{operation}-{ulid}.jsonl.tmp`, mode 0600, in a 0700
//! folder) and renamed into place, both relative to the open handle
//! (`openat`-style, with `cap-std`), so readers never see a partial file
//! and a symlink swapped inside the directory cannot take the write
//! outside it. Before a write, the bytes are reserved against the quotas;
//! at the total, the principals over their fair share make room
//! ([`make_room`]).
//!
//! Files are not fsynced: offload files are ephemeral and re-creatable, and
//! the rename alone guarantees readers never see a partial file.
//!
//! ```
//! use lro_core::{offload::{Offloader, OffloadInput}, records::RecordSet};
//! use lro_store::DirSink;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let offloader = Offloader::new(DirSink::new(dir.path()));
//! let text = serde_json::to_string(&(0..50).map(|i| serde_json::json!({"n": i, "msg": "hello"})).collect::<Vec<_>>()).unwrap();
//! let records = RecordSet::from_text(&text);
//! let out = offloader
//!     .offload(OffloadInput::new("fetch_logs", "fetch_logs", &records, 500), &|| false)
//!     .unwrap();
//! assert!(out.result.path.exists());
//! assert_eq!(out.result.header.count, 50);
//! assert!(out.text.contains("\"offloaded\":true"));
//! ```

use std::{
    fs::File,
    io::{ErrorKind, Write as _},
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use lro_core::{
    descriptor::OffloadHeader,
    file::{OffloadFileName, WriteError, WrittenFile},
    object::{ObjectError, ObjectSink, ObjectWriter},
    offload::write_object,
    quota::{Ledger, Quota, QuotaScope, Reservation},
};

use crate::{
    file::{FileError, create_private},
    quota::{ledger, measure},
    room::make_room,
    root::{PrivateDir, default_output_dir},
};

/// Times a write at the total quota makes room before it is refused.
const MAKE_ROOM_TRIES: usize = 8;

/// The bytes gathered before each write to the file.
pub const DIR_CHUNK: usize = 256 * 1024;

/// The local offload directory, written through lro-core's [`ObjectSink`].
#[derive(Debug, Clone)]
pub struct DirSink {
    dir: PathBuf,
    quota: Quota,
    root: Arc<Mutex<Option<Arc<OpenRoot>>>>,
}

/// The output directory, open, and its ledger.
#[derive(Debug)]
struct OpenRoot {
    dir: PrivateDir,
    ledger: Arc<Ledger>,
}

impl DirSink {
    /// Writes into `dir`, created 0700 when missing.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            quota: Quota::new(),
            root: Arc::default(),
        }
    }

    /// Sets the byte quotas checked before each write; a write over one
    /// fails with [`FileError::Quota`]. Defaults to none (the layer sets
    /// the configuration's, 256 MiB per principal and 1 GiB in total).
    #[must_use]
    pub fn quota(self, quota: Quota) -> Self {
        Self { quota, ..self }
    }

    /// The output directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The output directory, opened on first use: the default one without
    /// following a symlink in its place (see [`PrivateDir::open_nofollow`]).
    fn open_root(&self, fresh: bool) -> Result<Arc<OpenRoot>, FileError> {
        let mut cached = self.root.lock().unwrap_or_else(|e| e.into_inner());
        // One stat per write: the handle is kept only while the path still
        // names the same directory. One renamed away (or replaced) must not
        // receive files the descriptor would place at the path.
        if let Some(root) = cached.as_ref().filter(|_| !fresh)
            && std::fs::metadata(&self.dir).is_ok_and(|m| root.dir.is_same(&m))
        {
            return Ok(root.clone());
        }
        let dir = if self.dir == default_output_dir() {
            PrivateDir::open_nofollow(&self.dir)?
        } else {
            PrivateDir::open(&self.dir)?
        };
        let ledger = ledger(dir.path());
        let root = Arc::new(OpenRoot { dir, ledger });
        *cached = Some(root.clone());
        Ok(root)
    }

    /// Starts `name` in the folder `folder` (`""` for the root), within the
    /// quota.
    fn start(
        &self,
        root: Arc<OpenRoot>,
        folder: &str,
        name: &OffloadFileName,
        len: u64,
    ) -> Result<DirWriter, FileError> {
        let sub = if folder.is_empty() {
            None
        } else {
            let sub = root
                .dir
                .subdir(folder)
                .map_err(|source| FileError::CreateDir {
                    path: root.dir.path().join(folder),
                    source,
                })?;
            Some(sub)
        };
        let reservation = self.reserve(&root, folder, len)?;
        let dir = sub.as_ref().unwrap_or(&root.dir);
        let temp_name = name.temp_name();
        let temp = dir.path().join(&temp_name);
        let path = dir.path().join(name.to_string());
        let file = match create_private(dir.dir(), &temp_name) {
            Ok(file) => file,
            Err(source) => {
                let _ = dir.dir().remove_file(&temp_name);
                if let Some(r) = reservation {
                    r.release();
                }
                return Err(FileError::Create { path: temp, source });
            }
        };
        Ok(DirWriter {
            root,
            sub,
            file: Some(file),
            temp_name,
            final_name: name.to_string(),
            temp,
            path,
            written: 0,
            reservation,
        })
    }

    /// Counts `len` bytes for `folder` when the quotas allow it, after
    /// making room at the total.
    fn reserve(
        &self,
        root: &OpenRoot,
        folder: &str,
        len: u64,
    ) -> Result<Option<Reservation>, FileError> {
        if !self.quota.is_limited() {
            return Ok(None);
        }
        let reserve = || {
            root.ledger
                .reserve(&self.quota, folder, len, || measure(root.dir.dir()))
        };
        // The principals over their share make room (see `lro_core::quota`);
        // a few times, as writers that fit may take the room meanwhile.
        // Nothing freed once may mean the room is there already (made by a
        // writer at the same moment, not yet reserved): reserve again before
        // giving up.
        let mut tries = 0;
        let mut stalled = false;
        Ok(Some(loop {
            match reserve() {
                Err(full) if full.scope == QuotaScope::Total && tries < MAKE_ROOM_TRIES => {
                    tries += 1;
                    let freed = make_room(&root.ledger, root.dir.dir(), &self.quota, folder, len);
                    if freed.files == 0 {
                        if stalled {
                            return Err(full.into());
                        }
                        stalled = true;
                        continue;
                    }
                    stalled = false;
                    tracing::info!(
                        files = freed.files,
                        bytes = freed.bytes,
                        "total offload quota reached: deleted the oldest results of principals over their share"
                    );
                }
                other => break other?,
            }
        }))
    }
}

impl ObjectSink for DirSink {
    /// Starts the file `key`: a result's name, after its principal's folder
    /// when it has one. A directory removed since it was opened (a temp
    /// cleaner) is opened once more.
    fn create(&self, key: &str, len: u64) -> Result<Box<dyn ObjectWriter>, ObjectError> {
        let (folder, file) = key.split_once('/').unwrap_or(("", key));
        let name = OffloadFileName::parse(file)
            .filter(|_| !folder.contains('/'))
            .ok_or_else(|| FileError::Create {
                path: self.dir.join(key),
                source: ErrorKind::InvalidInput.into(),
            })?;
        let root = self.open_root(false)?;
        let writer = match self.start(root, folder, &name, len) {
            Err(FileError::Create { source, .. } | FileError::CreateDir { source, .. })
                if source.kind() == ErrorKind::NotFound =>
            {
                self.start(self.open_root(true)?, folder, &name, len)
            }
            other => other,
        }?;
        Ok(Box::new(writer))
    }

    fn chunk_size(&self) -> usize {
        DIR_CHUNK
    }

    fn is_local(&self) -> bool {
        true
    }
}

/// One file being written: its temp file, renamed into place at
/// [`ObjectWriter::finish`], removed at [`ObjectWriter::abort`].
struct DirWriter {
    root: Arc<OpenRoot>,
    sub: Option<PrivateDir>,
    file: Option<File>,
    temp_name: String,
    final_name: String,
    temp: PathBuf,
    path: PathBuf,
    written: u64,
    reservation: Option<Reservation>,
}

impl DirWriter {
    fn dir(&self) -> &PrivateDir {
        self.sub.as_ref().unwrap_or(&self.root.dir)
    }

    /// Removes the temp file and gives the reserved bytes back.
    fn discard(mut self) {
        drop(self.file.take());
        // Best effort: the temp file may be gone already.
        let _ = self.dir().dir().remove_file(&self.temp_name);
        if let Some(r) = self.reservation.take() {
            r.release();
        }
    }
}

impl ObjectWriter for DirWriter {
    fn write(&mut self, chunk: Vec<u8>) -> Result<(), ObjectError> {
        let file = self.file.as_mut().expect("open until finished");
        file.write_all(&chunk).map_err(|source| FileError::Write {
            path: self.temp.clone(),
            source,
        })?;
        self.written += chunk.len() as u64;
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<u64, ObjectError> {
        drop(self.file.take());
        let handle = self.dir().dir();
        if let Err(source) = handle.rename(&self.temp_name, handle, &self.final_name) {
            let path = self.path.clone();
            self.discard();
            return Err(FileError::Rename { path, source }.into());
        }
        // The file exists: its bytes stay counted.
        drop(self.reservation.take());
        Ok(self.written)
    }

    fn abort(self: Box<Self>) {
        self.discard();
    }

    fn path(&self) -> Option<&Path> {
        Some(&self.path)
    }
}

/// Writes `header` and `records` (each a single line of JSON) atomically to
/// `dir/name`, through a [`DirSink`] without quotas. `cancelled` is polled
/// between records; when it returns true the temp file is removed and
/// [`WriteError::Cancelled`] returned.
///
/// # Errors
///
/// [`WriteError`]; the directory's own failures are a
/// [`WriteError::Store`] over a [`FileError`].
pub fn write_atomic<R: AsRef<str>>(
    dir: &Path,
    name: &OffloadFileName,
    header: &OffloadHeader,
    records: &[R],
    cancelled: &dyn Fn() -> bool,
) -> Result<WrittenFile, WriteError> {
    write_object(
        &DirSink::new(dir),
        &name.to_string(),
        header,
        records,
        cancelled,
    )
}

#[cfg(test)]
mod tests {
    use std::fs;

    use lro_core::{descriptor::Detail, metric::label::WriteFailureReason};

    use super::*;
    use crate::root::RootError;

    fn header(count: usize) -> OffloadHeader {
        OffloadHeader::new("list", Some("q".into()), count, 1, Detail::Light)
    }

    #[test]
    fn writes_private_file_in_private_dir() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("nested/out");
        let name = OffloadFileName::new("list");
        let written = write_atomic(
            &dir,
            &name,
            &header(2),
            &["{\"a\":1}", "{\"a\":2}"],
            &|| false,
        )
        .unwrap();
        let text = fs::read_to_string(&written.path).unwrap();
        assert_eq!(text.lines().count(), 3);
        assert_eq!(written.bytes, text.len() as u64);
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&written.path), 0o600);
            assert_eq!(mode(&dir), 0o700);
        }
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "no temp file left");
    }

    #[test]
    fn failure_through_a_regular_file_leaves_nothing() {
        let root = tempfile::tempdir().unwrap();
        let blocker = root.path().join("file");
        fs::write(&blocker, "x").unwrap();
        let err = write_atomic(
            &blocker.join("sub"),
            &OffloadFileName::new("list"),
            &header(0),
            &[] as &[&str],
            &|| false,
        )
        .unwrap_err();
        let WriteError::Store(store) = &err else {
            panic!("{err}")
        };
        let file = store.get_ref().and_then(|e| e.downcast_ref::<FileError>());
        assert!(
            matches!(file, Some(FileError::Root(RootError::Open { .. }))),
            "{err}"
        );
        assert_eq!(err.reason(), WriteFailureReason::NotADirectory);
        // The cause is the source, not the text; the warning prints both.
        assert!(!err.to_string().contains("os error"), "{err}");
        let text = lro_core::error::chain(&err).to_string();
        assert!(
            text.starts_with("cannot open offload directory ") && text.ends_with("(os error 20)"),
            "{text}"
        );
    }

    #[test]
    fn cancellation_removes_the_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let records = vec!["{}"; 1000];
        let err = write_atomic(
            dir.path(),
            &OffloadFileName::new("list"),
            &header(1000),
            &records,
            &|| true,
        )
        .unwrap_err();
        assert!(matches!(err, WriteError::Cancelled));
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn multi_line_record_is_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_atomic(
            dir.path(),
            &OffloadFileName::new("list"),
            &header(1),
            &["{\n}"],
            &|| false,
        )
        .unwrap_err();
        assert!(matches!(err, WriteError::BadRecord { index: 0 }));
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}

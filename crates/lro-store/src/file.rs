//! Offload files on disk: why a write into the directory failed, the
//! private temp file a write starts with, and the header reader. Naming and
//! the encoding are lro-core's ([`lro_core::file`]); the directory's writer
//! is [`crate::dir`]'s.
//!
//! ```
//! use lro_core::{descriptor::{Detail, OffloadHeader}, file::OffloadFileName};
//! use lro_store::{dir::write_atomic, file::read_header};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let header = OffloadHeader::new("recall", None, 2, 10, Detail::Light);
//! let records = [r#"{"id":"a"}"#, r#"{"id":"b"}"#];
//! let written = write_atomic(dir.path(), &OffloadFileName::new("recall"), &header, &records, &|| false).unwrap();
//! assert_eq!(read_header(&written.path).unwrap().count, 2);
//! ```

use std::{
    fs::File,
    io::{self, BufRead as _, BufReader},
    path::{Path, PathBuf},
};

use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt as _};
use lro_core::{
    descriptor::OffloadHeader,
    file::{ReadError, io_reason, parse_header},
    metric::label::WriteFailureReason,
    object::ObjectError,
    quota::QuotaExceeded,
};

use crate::root::RootError;

/// Why a write into the offload directory failed. The temp file is removed
/// in every case.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// The principal's folder could not be created.
    #[error("cannot create offload directory {path}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The temp file could not be created.
    #[error("cannot create offload file {path}")]
    Create {
        /// The temp file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// Writing the content failed (disk full, I/O error).
    #[error("cannot write offload file {path}")]
    Write {
        /// The temp file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The temp file could not be renamed into place.
    #[error("cannot publish offload file {path}")]
    Rename {
        /// The final path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The offload directory cannot be used: it could not be opened, or
    /// another user owns it.
    #[error(transparent)]
    Root(#[from] RootError),
    /// The write would pass a quota.
    #[error(transparent)]
    Quota(#[from] QuotaExceeded),
}

impl FileError {
    /// Why the write failed, as a bounded metric label.
    pub fn reason(&self) -> WriteFailureReason {
        match self {
            FileError::CreateDir { source, .. }
            | FileError::Create { source, .. }
            | FileError::Write { source, .. }
            | FileError::Rename { source, .. } => io_reason(source),
            FileError::Quota(_) => WriteFailureReason::Quota,
            FileError::Root(RootError::NotOwned { .. }) => WriteFailureReason::NotOwned,
            FileError::Root(err) => err.io().map_or(WriteFailureReason::Io, io_reason),
        }
    }
}

/// The directory's failures are what the model reads: their paths are the
/// ones its descriptors show.
impl From<FileError> for ObjectError {
    fn from(err: FileError) -> Self {
        ObjectError::from_error(err.reason(), err)
    }
}

/// Creates `name` in `dir` for writing: `O_CREAT|O_EXCL`, mode 0600,
/// relative to the handle.
pub(crate) fn create_private(dir: &Dir, name: &str) -> io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true).mode(0o600);
    Ok(dir.open_with(name, &opts)?.into_std())
}

/// Reads and validates the header line of an offload file.
///
/// # Errors
///
/// [`ReadError::Io`] when the file cannot be read, else as
/// [`parse_header`].
pub fn read_header(path: &Path) -> Result<OffloadHeader, ReadError> {
    let io_err = |source| ReadError::Io {
        path: path.to_owned(),
        source,
    };
    let mut reader = BufReader::new(File::open(path).map_err(io_err)?);
    let mut line = String::new();
    reader.read_line(&mut line).map_err(io_err)?;
    parse_header(path, &line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_validated() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        std::fs::write(&p, "{\"type\":\"other\"}\n").unwrap();
        assert!(read_header(&p).is_err());
    }
}

//! A local sink for lro-core's own tests: each result becomes a plain file
//! under a directory, so descriptors carry paths and recipes run on files.
//! The product's directory (private handles, temp file and rename, quotas)
//! is lro-store's `DirSink`, which lro-core cannot depend on.

use std::path::{Path, PathBuf};

use lro_core::{
    metric::label::WriteFailureReason,
    object::{ObjectError, ObjectSink, ObjectWriter},
};

/// Results as files under `dir`, written whole at `finish`.
#[derive(Debug, Clone)]
pub(crate) struct Files(pub(crate) PathBuf);

impl ObjectSink for Files {
    fn create(&self, key: &str, _len: u64) -> Result<Box<dyn ObjectWriter>, ObjectError> {
        Ok(Box::new(File {
            path: self.0.join(key),
            bytes: Vec::new(),
        }))
    }

    fn chunk_size(&self) -> usize {
        64 * 1024
    }

    fn is_local(&self) -> bool {
        true
    }
}

struct File {
    path: PathBuf,
    bytes: Vec<u8>,
}

impl ObjectWriter for File {
    fn write(&mut self, chunk: Vec<u8>) -> Result<(), ObjectError> {
        self.bytes.extend(chunk);
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<u64, ObjectError> {
        let failed = |e| ObjectError::from_error(WriteFailureReason::Io, e);
        std::fs::create_dir_all(self.path.parent().expect("a key has a file name"))
            .map_err(failed)?;
        std::fs::write(&self.path, &self.bytes).map_err(failed)?;
        Ok(self.bytes.len() as u64)
    }

    fn abort(self: Box<Self>) {}

    fn path(&self) -> Option<&Path> {
        Some(&self.path)
    }
}

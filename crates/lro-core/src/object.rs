//! Where offloads go: the [`ObjectSink`] extension point, the one write
//! path of every backend.
//!
//! lro-core knows no file system, store or async runtime; a sink is given
//! to the [`Offloader`](crate::Offloader) by whoever does: lro-store's
//! `DirSink` for the local directory, its `BlockingSink` for an object
//! store. The offloader encodes the header and records into chunks of
//! [`ObjectSink::chunk_size`] bytes and hands each to the object's
//! [`ObjectWriter`] as it fills, so a large result is streamed out and never
//! held twice. An object appears complete, at [`ObjectWriter::finish`], or
//! not at all.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use lro_core::object::{ObjectError, ObjectSink, ObjectWriter};
//!
//! /// Keeps finished objects in memory.
//! #[derive(Debug, Default)]
//! struct Memory(Arc<Mutex<Vec<(String, Vec<u8>)>>>);
//!
//! struct Writer(String, Vec<u8>, Arc<Mutex<Vec<(String, Vec<u8>)>>>);
//!
//! impl ObjectWriter for Writer {
//!     fn write(&mut self, chunk: Vec<u8>) -> Result<(), ObjectError> {
//!         self.1.extend(chunk);
//!         Ok(())
//!     }
//!     fn finish(self: Box<Self>) -> Result<u64, ObjectError> {
//!         let n = self.1.len() as u64;
//!         self.2.lock().unwrap().push((self.0, self.1));
//!         Ok(n)
//!     }
//!     fn abort(self: Box<Self>) {}
//! }
//!
//! impl ObjectSink for Memory {
//!     fn create(&self, key: &str, _len: u64) -> Result<Box<dyn ObjectWriter>, ObjectError> {
//!         Ok(Box::new(Writer(key.to_owned(), Vec::new(), self.0.clone())))
//!     }
//!     fn chunk_size(&self) -> usize {
//!         1024
//!     }
//! }
//!
//! let sink = Memory::default();
//! let mut w = sink.create("k", 3).unwrap();
//! w.write(b"{}\n".to_vec()).unwrap();
//! assert_eq!(w.finish().unwrap(), 3);
//! assert_eq!(sink.0.lock().unwrap()[0].0, "k");
//! ```

use std::{error::Error as StdError, fmt, path::Path};

use crate::metric::label::WriteFailureReason;

/// Where the offloader writes results: a local directory or an object
/// store.
pub trait ObjectSink: Send + Sync + fmt::Debug {
    /// Starts the object `key` (relative to the directory or the store's
    /// prefix: the principal's folder, then the file name), about `len`
    /// bytes long (what a quota is checked against). Nothing is visible
    /// under it until [`ObjectWriter::finish`] succeeds.
    ///
    /// # Errors
    ///
    /// [`ObjectError`] with the reason the sink gave.
    fn create(&self, key: &str, len: u64) -> Result<Box<dyn ObjectWriter>, ObjectError>;

    /// How many bytes the offloader gathers before each
    /// [`ObjectWriter::write`]: the store's part size.
    fn chunk_size(&self) -> usize;

    /// Whether results are files a client reads by path (the local
    /// directory): descriptors then carry each one's
    /// [`ObjectWriter::path`]. Otherwise they carry a handle, read through
    /// `lro_extract`. Defaults to `false`.
    fn is_local(&self) -> bool {
        false
    }
}

/// One object being written.
pub trait ObjectWriter: Send {
    /// Appends a chunk; may wait while earlier chunks are in flight.
    ///
    /// # Errors
    ///
    /// [`ObjectError`]; the offloader then calls [`ObjectWriter::abort`].
    fn write(&mut self, chunk: Vec<u8>) -> Result<(), ObjectError>;

    /// Completes the object and returns its size.
    ///
    /// # Errors
    ///
    /// [`ObjectError`]: nothing was stored.
    fn finish(self: Box<Self>) -> Result<u64, ObjectError>;

    /// Gives up: nothing is stored. Never fails; a store that cannot clean
    /// up says so in its own logs.
    fn abort(self: Box<Self>);

    /// The path the result has once finished, for a local sink's
    /// ([`ObjectSink::is_local`]). Defaults to none.
    fn path(&self) -> Option<&Path> {
        None
    }
}

/// A sink operation that failed, with the bounded reason the
/// `OffloadWriteFailed` event and its metric carry.
///
/// Its text and its chain of [`source`](StdError::source)s are what the
/// model reads in the truncation warning. An object store's own error may
/// name keys and URLs, so [`ObjectError::new`] keeps it out of the chain, as
/// [`ObjectError::detail`], for logs; the local directory's errors, whose
/// paths the model sees anyway, are the chain itself
/// ([`ObjectError::from_error`]).
#[derive(Debug)]
pub struct ObjectError {
    /// Why, as a metric label.
    pub reason: WriteFailureReason,
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    /// A text of its own, and the store's error kept out of the chain.
    Described {
        message: String,
        detail: Option<Box<dyn StdError + Send + Sync>>,
    },
    /// Another error, shown as it is.
    Transparent(Box<dyn StdError + Send + Sync>),
}

impl ObjectError {
    /// An error with `reason` and the text `message`; `detail`, the
    /// store's own error, is kept for [`ObjectError::detail`] only.
    pub fn new(
        reason: WriteFailureReason,
        message: impl Into<String>,
        detail: Option<Box<dyn StdError + Send + Sync>>,
    ) -> Self {
        Self {
            reason,
            inner: Inner::Described {
                message: message.into(),
                detail,
            },
        }
    }

    /// `error` with `reason`: its text and sources are this error's.
    pub fn from_error(
        reason: WriteFailureReason,
        error: impl StdError + Send + Sync + 'static,
    ) -> Self {
        Self {
            reason,
            inner: Inner::Transparent(Box::new(error)),
        }
    }

    /// The store's own error given to [`ObjectError::new`], for logs.
    pub fn detail(&self) -> Option<&(dyn StdError + Send + Sync + 'static)> {
        match &self.inner {
            Inner::Described { detail, .. } => detail.as_deref(),
            Inner::Transparent(_) => None,
        }
    }

    /// The error given to [`ObjectError::from_error`].
    pub fn get_ref(&self) -> Option<&(dyn StdError + Send + Sync + 'static)> {
        match &self.inner {
            Inner::Described { .. } => None,
            Inner::Transparent(error) => Some(&**error),
        }
    }
}

impl fmt::Display for ObjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Inner::Described { message, .. } => f.write_str(message),
            Inner::Transparent(error) => error.fmt(f),
        }
    }
}

impl StdError for ObjectError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match &self.inner {
            Inner::Described { .. } => None,
            Inner::Transparent(error) => error.source(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stores_own_error_stays_out_of_the_chain_and_another_error_is_it() {
        let io = || std::io::Error::other("key p-1/atlatl-x.jsonl refused");
        let store = ObjectError::new(
            WriteFailureReason::StoreOther,
            "the offload store failed",
            Some(Box::new(io())),
        );
        assert_eq!(store.to_string(), "the offload store failed");
        assert!(store.source().is_none());
        assert!(
            store
                .detail()
                .is_some_and(|d| d.to_string().contains("p-1"))
        );

        #[derive(Debug, thiserror::Error)]
        #[error("cannot create offload file /o/x")]
        struct Create(#[source] std::io::Error);
        let local = ObjectError::from_error(WriteFailureReason::Io, Create(io()));
        assert_eq!(local.to_string(), "cannot create offload file /o/x");
        assert_eq!(local.source().unwrap().to_string(), io().to_string());
        assert!(local.get_ref().unwrap().is::<Create>());
    }
}

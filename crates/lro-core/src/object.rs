//! Where offloads go when the output is an object store instead of the
//! local directory: the [`ObjectSink`] extension point.
//!
//! lro-core knows no store and no async runtime; a sink is given to the
//! [`Offloader`](crate::Offloader) by whoever does (lro-store's
//! `BlockingSink` over S3). The offloader encodes the header and records
//! into chunks of [`ObjectSink::chunk_size`] bytes and hands each to the
//! object's [`ObjectWriter`] as it fills, so a large result is streamed up
//! and never held twice. An object appears complete, at
//! [`ObjectWriter::finish`], or not at all.
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
//!     fn create(&self, key: &str) -> Result<Box<dyn ObjectWriter>, ObjectError> {
//!         Ok(Box::new(Writer(key.to_owned(), Vec::new(), self.0.clone())))
//!     }
//!     fn chunk_size(&self) -> usize {
//!         1024
//!     }
//! }
//!
//! let sink = Memory::default();
//! let mut w = sink.create("k").unwrap();
//! w.write(b"{}\n".to_vec()).unwrap();
//! assert_eq!(w.finish().unwrap(), 3);
//! assert_eq!(sink.0.lock().unwrap()[0].0, "k");
//! ```

use std::{error::Error as StdError, fmt};

use crate::metric::label::WriteFailureReason;

/// An object store the offloader writes results into.
pub trait ObjectSink: Send + Sync + fmt::Debug {
    /// Starts the object `key` (relative to the store's prefix). Nothing is
    /// visible under it until [`ObjectWriter::finish`] succeeds.
    ///
    /// # Errors
    ///
    /// [`ObjectError`] with the reason the store gave.
    fn create(&self, key: &str) -> Result<Box<dyn ObjectWriter>, ObjectError>;

    /// How many bytes the offloader gathers before each
    /// [`ObjectWriter::write`]: the store's part size.
    fn chunk_size(&self) -> usize;
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
}

/// A store operation that failed, with the bounded reason the
/// `OffloadWriteFailed` event and its metric carry. Its text names the
/// failure, never a credential.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ObjectError {
    /// Why, as a metric label.
    pub reason: WriteFailureReason,
    message: String,
    #[source]
    source: Option<Box<dyn StdError + Send + Sync>>,
}

impl ObjectError {
    /// An error with `reason`, the text `message` and its cause.
    pub fn new(
        reason: WriteFailureReason,
        message: impl Into<String>,
        source: Option<Box<dyn StdError + Send + Sync>>,
    ) -> Self {
        Self {
            reason,
            message: message.into(),
            source,
        }
    }
}

//! Writing one result into an [`ObjectSink`], whatever the backend: the
//! JSONL that [`encode_body`] makes, handed on in chunks of the sink's part
//! size, complete or not at all.

use std::{io::Write, path::PathBuf};

use crate::{
    descriptor::OffloadHeader,
    file::{WriteError, WrittenFile, encode_body, encoded_len},
    object::{ObjectError, ObjectSink, ObjectWriter},
};

/// Writes `header` and `records` (each a single line of JSON) as the object
/// `key` through `sink`, in chunks of the sink's part size: complete or not
/// at all. `cancelled` is polled during the write; a cancelled write leaves
/// nothing. The written file's path is the sink's
/// ([`ObjectWriter::path`]), else the key.
///
/// # Errors
///
/// [`WriteError::BadRecord`], [`WriteError::Cancelled`], or the sink's
/// [`WriteError::Store`].
pub fn write_object<R: AsRef<str>>(
    sink: &dyn ObjectSink,
    key: &str,
    header: &OffloadHeader,
    records: &[R],
    cancelled: &dyn Fn() -> bool,
) -> Result<WrittenFile, WriteError> {
    let mut object = sink.create(key, encoded_len(header, records))?;
    let path = object
        .path()
        .map_or_else(|| PathBuf::from(key), ToOwned::to_owned);
    let mut chunks = Chunks {
        object: &mut *object,
        buf: Vec::new(),
        size: sink.chunk_size().max(1),
        failed: None,
    };
    let encoded = encode_body(&mut chunks, header, records, cancelled);
    let flushed = encoded.and_then(|bytes| {
        chunks.flush().map_err(|e| chunks.cause(e))?;
        Ok(bytes)
    });
    let failed = chunks.failed.take();
    match flushed {
        Ok(bytes) if !cancelled() => {
            object.finish()?;
            Ok(WrittenFile::new(path, bytes))
        }
        Ok(_) => {
            object.abort();
            Err(WriteError::Cancelled)
        }
        Err(err) => {
            object.abort();
            Err(failed.map_or(err, WriteError::Store))
        }
    }
}

/// An `io::Write` that hands an object writer one chunk at a time and keeps
/// the sink's own error, which `io::Error` would flatten.
struct Chunks<'a> {
    object: &'a mut dyn ObjectWriter,
    buf: Vec<u8>,
    size: usize,
    failed: Option<ObjectError>,
}

impl Chunks<'_> {
    fn cause(&mut self, err: std::io::Error) -> WriteError {
        match self.failed.take() {
            Some(store) => WriteError::Store(store),
            None => WriteError::Write {
                path: PathBuf::new(),
                source: err,
            },
        }
    }

    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        // The next buffer is allocated when something is written into it:
        // the last chunk is followed by none.
        let chunk = std::mem::take(&mut self.buf);
        self.object.write(chunk).map_err(|e| {
            self.failed = Some(e);
            std::io::Error::other("object store write failed")
        })
    }
}

impl Write for Chunks<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(self.size.min(1 << 20));
        }
        let room = self.size - self.buf.len();
        let n = bytes.len().min(room);
        self.buf.extend_from_slice(&bytes[..n]);
        if self.buf.len() >= self.size {
            self.send()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

//! Writing one result into an [`ObjectSink`]: the JSONL that
//! [`encode_body`] makes for a file, handed on in chunks of the sink's part
//! size, complete or not at all. The offloader calls it when it has a sink
//! (see `Offloader::sink`).

use std::path::PathBuf;

use crate::{
    descriptor::OffloadHeader,
    file::{WriteError, encode_body},
    object::{ObjectError, ObjectSink, ObjectWriter},
};

/// Writes `header` and `records` as the object `key` through `sink`, in
/// chunks of the sink's part size, as [`encode_body`] encodes a file:
/// complete or not at all. Returns the bytes written.
pub(crate) fn write_object<R: AsRef<str>>(
    sink: &dyn ObjectSink,
    key: &str,
    header: &OffloadHeader,
    records: &[R],
    cancelled: &dyn Fn() -> bool,
) -> Result<u64, WriteError> {
    let mut object = sink.create(key).map_err(WriteError::Store)?;
    let mut chunks = Chunks {
        object: &mut *object,
        buf: Vec::with_capacity(sink.chunk_size().min(1 << 20)),
        size: sink.chunk_size().max(1),
        failed: None,
    };
    let encoded = encode_body(&mut chunks, header, records, cancelled);
    let flushed = encoded.and_then(|bytes| {
        use std::io::Write as _;
        chunks.flush().map_err(|e| chunks.cause(e))?;
        Ok(bytes)
    });
    let failed = chunks.failed.take();
    match flushed {
        Ok(bytes) if !cancelled() => {
            object.finish().map_err(WriteError::Store)?;
            Ok(bytes)
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
/// the store's own error, which `io::Error` would flatten.
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
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(self.size.min(1 << 20)));
        self.object.write(chunk).map_err(|e| {
            self.failed = Some(e);
            std::io::Error::other("object store write failed")
        })
    }
}

impl std::io::Write for Chunks<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
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

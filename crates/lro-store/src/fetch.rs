//! Copying an object into a local file, for readers that need a file (the
//! extraction engine and its worker processes): streamed, never held whole,
//! and, for a reader that needs only the first lines, stopped once they
//! are in.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use bytes::Bytes;
//! use lro_store::{Env, Key, StoreConfig, fetch, open};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = open(dir.path().to_str().unwrap(), &StoreConfig::new(), &Env::new()).unwrap();
//! let key = Key::new("k.jsonl").unwrap();
//! store.put_bytes(&key, Bytes::from_static(b"h\na\nb\nc\n")).await.unwrap();
//! let mut out = Vec::new();
//! let got = fetch::copy(&*store, &key, &mut out, Some(2)).await.unwrap();
//! assert_eq!(out, b"h\na\n");
//! assert!(!got.complete);
//! # }
//! ```

use futures::StreamExt as _;
use tokio::io::{AsyncWrite, AsyncWriteExt as _};

use crate::{Key, Store, StoreError};

/// What [`copy`] wrote: counted as it passed, so a reader can check an
/// offload file against its header (`lro_core::integrity`) without reading
/// it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Copied {
    /// Bytes written.
    pub bytes: u64,
    /// Whether the whole object was copied (`false` when it stopped after
    /// the lines asked for).
    pub complete: bool,
    /// Newlines written.
    pub lines: u64,
    /// Bytes of the first line, its newline included, when one ended.
    pub first_line: Option<u64>,
}

impl Copied {
    /// Counts `chunk`, written after what is counted so far.
    fn count(&mut self, chunk: &[u8]) {
        if self.first_line.is_none()
            && let Some(end) = chunk.iter().position(|&b| b == b'\n')
        {
            self.first_line = Some(self.bytes + end as u64 + 1);
        }
        self.lines += bytecount(chunk);
        self.bytes += chunk.len() as u64;
    }
}

fn bytecount(chunk: &[u8]) -> u64 {
    chunk.iter().filter(|&&b| b == b'\n').count() as u64
}

/// Copies `key` into `out` as its bytes arrive; with `lines`, stops after
/// that many lines (the rest is never fetched).
///
/// # Errors
///
/// The store's error for a missing object or a failed read, or
/// [`StoreError::Body`] when `out` fails.
pub async fn copy<W: AsyncWrite + Unpin>(
    store: &dyn Store,
    key: &Key,
    out: &mut W,
    lines: Option<u64>,
) -> Result<Copied, StoreError> {
    let body = |source| StoreError::Body {
        key: key.to_string(),
        source,
    };
    let mut stream = store.get(key).await?;
    let mut copied = Copied::default();
    let mut left = lines;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        let take = match left {
            Some(n) => match newline_after(&chunk, n) {
                Ok(end) => {
                    out.write_all(&chunk[..end]).await.map_err(body)?;
                    out.flush().await.map_err(body)?;
                    copied.count(&chunk[..end]);
                    return Ok(copied);
                }
                Err(seen) => {
                    left = Some(n - seen);
                    chunk.len()
                }
            },
            None => chunk.len(),
        };
        out.write_all(&chunk[..take]).await.map_err(body)?;
        copied.count(&chunk[..take]);
    }
    out.flush().await.map_err(body)?;
    copied.complete = true;
    Ok(copied)
}

/// The end of the `n`th line in `chunk` (after its newline), or how many
/// newlines `chunk` holds when fewer than `n`.
fn newline_after(chunk: &[u8], n: u64) -> Result<usize, u64> {
    let mut seen = 0;
    for (i, b) in chunk.iter().enumerate() {
        if *b == b'\n' {
            seen += 1;
            if seen == n {
                return Ok(i + 1);
            }
        }
    }
    Err(seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_end_after_their_newline() {
        assert_eq!(newline_after(b"a\nb\nc", 2), Ok(4));
        assert_eq!(newline_after(b"a\nb", 3), Err(1));
        assert_eq!(newline_after(b"", 1), Err(0));
    }

    #[test]
    fn counts_span_chunks() {
        let mut c = Copied::default();
        for chunk in [&b"hea"[..], b"d\na\n", b"b"] {
            c.count(chunk);
        }
        assert_eq!((c.bytes, c.lines, c.first_line), (8, 2, Some(5)));
    }
}

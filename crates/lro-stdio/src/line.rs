//! Newline-delimited JSON-RPC, read with a cap: [`Lines`] reads one line at a
//! time without ever holding more than the cap, and keeps the start of a line
//! that went over it, so that [`head_of`] can read the request's `id` there
//! (with serde_json, which reads a cut object as far as it goes).
//! Both sides of a stdio connection use it: the server's
//! ([`ServerStdio`](crate::ServerStdio)) and `lro proxy`'s towards its
//! upstream child.

use rmcp::model::{NumberOrString, RequestId};
use serde::{
    Deserializer as _,
    de::{IgnoredAny, MapAccess, Visitor},
};
use serde_json::value::RawValue;
use tokio::{
    io::{AsyncBufRead, AsyncBufReadExt as _, AsyncWrite, AsyncWriteExt as _},
    sync::Mutex,
};

/// How much of an over-long line is kept to find its `id`.
const HEAD_BYTES: usize = 4096;

/// What [`Lines::next`] read.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// A line, in [`Lines::line`] (without its newline).
    Line,
    /// A line over the cap, dropped; its first bytes are in [`Lines::head`].
    TooLong,
    /// The end of the stream.
    End,
}

/// Lines of `read`, each at most `max` bytes.
pub struct Lines<R> {
    read: R,
    /// The line read, once [`Next::Line`] says so.
    pub line: Vec<u8>,
    /// The start of the line that was over the cap.
    pub head: Vec<u8>,
    max: usize,
    /// Dropping the rest of a line over `max`.
    discarding: bool,
}

impl<R: AsyncBufRead + Unpin> Lines<R> {
    /// Lines of `read`, each at most `max` bytes.
    pub fn new(read: R, max: usize) -> Self {
        Self {
            read,
            line: Vec::new(),
            head: Vec::new(),
            max,
            discarding: false,
        }
    }

    /// The reader, to drain what is left.
    pub fn into_inner(self) -> R {
        self.read
    }

    /// The cap.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Reads the next line. Cancel-safe: the state lives in `self`, so a line
    /// read halfway when `select!` drops the future is finished by the next
    /// call. The caller clears [`Lines::line`] when it is done with it.
    pub async fn next(&mut self) -> std::io::Result<Next> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                // A last message without its newline is still a message.
                return Ok(if std::mem::take(&mut self.discarding) {
                    Next::TooLong
                } else if self.line.is_empty() {
                    Next::End
                } else {
                    Next::Line
                });
            }
            let (chunk, done) = match available.iter().position(|b| *b == b'\n') {
                Some(at) => (&available[..at], Some(at + 1)),
                None => (available, None),
            };
            if !self.discarding {
                if self.line.len() + chunk.len() > self.max {
                    self.discarding = true;
                    self.head.clear();
                    let keep = HEAD_BYTES.min(self.line.len());
                    self.head.extend_from_slice(&self.line[..keep]);
                    let more = (HEAD_BYTES - keep).min(chunk.len());
                    self.head.extend_from_slice(&chunk[..more]);
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(chunk);
                }
            }
            let used = done.unwrap_or(available.len());
            self.read.consume(used);
            if done.is_some() {
                return Ok(if std::mem::take(&mut self.discarding) {
                    Next::TooLong
                } else {
                    Next::Line
                });
            }
        }
    }
}

/// Writes one message's bytes and its newline to the writer in `write`,
/// which is shared by every task that sends; `None` once closed (`what`
/// names it in the error).
pub async fn write_line<W: AsyncWrite + Unpin>(
    write: &Mutex<Option<W>>,
    mut bytes: Vec<u8>,
    what: &'static str,
) -> std::io::Result<()> {
    bytes.push(b'\n');
    let mut guard = write.lock().await;
    let write = guard.as_mut().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotConnected,
            format!("{what} is closed"),
        )
    })?;
    write.write_all(&bytes).await?;
    write.flush().await
}

/// A line without its `\r` and a leading UTF-8 BOM (.NET's console writes
/// one), as rmcp reads it.
pub fn trimmed(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line)
}

/// What the start of a JSON-RPC message says about it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Head {
    /// Its top-level `id`, when it comes before the end of the bytes given.
    pub id: Option<RequestId>,
    /// It has a top-level `method` there (a request or a notification).
    pub method: bool,
}

/// Reads the top-level `id` and whether there is a `method` from the start
/// of a JSON object, which may be cut anywhere: serde_json reads the members
/// one by one, skipping values without building them, and what it read
/// before the cut (or before anything that is not JSON) stays read. The id
/// is read as rmcp reads it (`1.0` is `1`), and a number that runs into the
/// cut is no id: `4` may be the start of `42`.
pub fn head_of(bytes: &[u8]) -> Head {
    let mut head = Head::default();
    let reader = HeadReader {
        head: &mut head,
        bytes,
    };
    // An error only says where reading stopped.
    let _ = serde_json::Deserializer::from_slice(bytes).deserialize_map(reader);
    head
}

/// Fills in a [`Head`] as the members of `bytes` are read.
struct HeadReader<'h, 'de> {
    head: &'h mut Head,
    bytes: &'de [u8],
}

impl<'de> Visitor<'de> for HeadReader<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "id" {
                let raw: &'de RawValue = map.next_value()?;
                let cut = raw.get().as_bytes().as_ptr_range().end == self.bytes.as_ptr_range().end;
                let id = serde_json::from_str::<RequestId>(raw.get()).ok();
                match id {
                    Some(NumberOrString::Number(_)) if cut => return Ok(()),
                    Some(id) => self.head.id = Some(id),
                    None => return Ok(()),
                }
            } else {
                self.head.method |= key == "method";
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::BufReader;

    use super::*;

    #[tokio::test]
    async fn lines_over_the_cap_are_reported_with_their_start_and_reading_goes_on() {
        let input: &[u8] = b"short\nthis line is far too long\nnext\nlast";
        let mut lines = Lines::new(BufReader::with_capacity(4, input), 8);
        let mut seen = Vec::new();
        loop {
            match lines.next().await.unwrap() {
                Next::Line => {
                    seen.push(String::from_utf8(std::mem::take(&mut lines.line)).unwrap())
                }
                Next::TooLong => {
                    assert!(
                        lines.head.starts_with(b"this lin"),
                        "the head is the line's start"
                    );
                    seen.push("too long".to_owned());
                }
                Next::End => break,
            }
        }
        assert_eq!(
            seen,
            ["short", "too long", "next", "last"],
            "an unterminated last line counts"
        );
    }

    #[test]
    fn the_id_is_read_from_the_start_of_a_message() {
        let number = Some(NumberOrString::Number(42));
        let cases: [(&[u8], Option<RequestId>, bool); 12] = [
            (
                br#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"#,
                number.clone(),
                true,
            ),
            (
                br#" { "method" : "x", "params": {"id": 7, "a": [1, "}"]}, "id": 42 }"#,
                number.clone(),
                true,
            ),
            (
                br#"{"id":"a\"b","result":{}}"#,
                Some(NumberOrString::String("a\"b".into())),
                false,
            ),
            (br#"{"jsonrpc":"2.0","params":{"x":"#, None, false),
            (br#"{"jsonrpc":"2.0","id":4"#, None, false),
            (br#"{"id":4.5}"#, None, false),
            (br#"{"id":null,"method":"m"}"#, None, false),
            (b"not json", None, false),
            (br#"{"method":"notifications/x"}"#, None, true),
            // As rmcp reads an id: `1.0` and `1e1` are integers, a key may
            // be escaped.
            (
                br#"{"id":1.0,"method":"m"}"#,
                Some(NumberOrString::Number(1)),
                true,
            ),
            (
                br#"{"i\u0064":1e1 "#,
                Some(NumberOrString::Number(10)),
                false,
            ),
            (
                br#"{"id":"x","#,
                Some(NumberOrString::String("x".into())),
                false,
            ),
        ];
        for (bytes, id, method) in cases {
            let head = head_of(bytes);
            assert_eq!(head.id, id, "{}", String::from_utf8_lossy(bytes));
            assert_eq!(head.method, method, "{}", String::from_utf8_lossy(bytes));
        }
    }
}

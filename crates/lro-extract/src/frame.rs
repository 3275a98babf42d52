//! The framing of what a worker process writes back: a whole answer can
//! never be confused with a part of one.
//!
//! The parent writes one JSON line per message (compact JSON holds no raw
//! newline). The worker answers in frames, each a tag byte, a big-endian
//! `u32` length and that many bytes:
//!
//! | tag | payload |
//! |---|---|
//! | `H` | the handshake answer, JSON, once at start-up |
//! | `D` | the next part (at most [`MAX_CHUNK`] bytes) of the current answer's JSON |
//! | `E` | nothing: the current answer is complete |
//!
//! So an answer streams out as it is serialized, in chunks, and only an
//! `E` frame makes it whole: a worker that dies half-way leaves a partial
//! answer that is reported as such, never parsed. Any other tag (a host
//! that prints text, say) is a protocol error.
//!
//! ```text
//! H 0000002a {"magic":"lro-extract-worker",...}
//! D 00010000 {"result":{"ok":{"mode":"query","values":[ ... 65536 bytes
//! D 00000123 ... ]}}}
//! E 00000000
//! ```

use std::io::{self, Read, Write};

/// Tag of the handshake answer.
pub(crate) const HELLO: u8 = b'H';
/// Tag of a part of an answer.
pub(crate) const DATA: u8 = b'D';
/// Tag that completes an answer.
pub(crate) const END: u8 = b'E';
/// Largest payload of one frame.
pub(crate) const MAX_CHUNK: usize = 64 * 1024;

/// Writes one frame.
pub(crate) fn write_frame(out: &mut impl Write, tag: u8, payload: &[u8]) -> io::Result<()> {
    let len = u32::try_from(payload.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame too large"))?;
    let mut head = [0u8; 5];
    head[0] = tag;
    head[1..].copy_from_slice(&len.to_be_bytes());
    out.write_all(&head)?;
    out.write_all(payload)
}

/// Writes one answer as `D` frames as it is produced; [`Answer::finish`]
/// completes it with `E`.
pub(crate) struct Answer<W: Write> {
    out: W,
    buf: Vec<u8>,
}

impl<W: Write> Answer<W> {
    pub(crate) fn new(out: W) -> Self {
        Self {
            out,
            buf: Vec::with_capacity(MAX_CHUNK),
        }
    }

    /// Sends what is buffered and the end frame.
    pub(crate) fn finish(mut self) -> io::Result<W> {
        if !self.buf.is_empty() {
            write_frame(&mut self.out, DATA, &self.buf)?;
        }
        write_frame(&mut self.out, END, &[])?;
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write> Write for Answer<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let room = MAX_CHUNK - self.buf.len();
        let take = room.min(bytes.len());
        self.buf.extend_from_slice(&bytes[..take]);
        if self.buf.len() == MAX_CHUNK {
            write_frame(&mut self.out, DATA, &self.buf)?;
            self.buf.clear();
        }
        Ok(take)
    }

    fn flush(&mut self) -> io::Result<()> {
        // Parts go out when full or at `finish`: flushing a half chunk would
        // only make more, smaller frames.
        Ok(())
    }
}

/// What a reader gets.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// The handshake answer's JSON.
    Hello(Vec<u8>),
    /// A complete answer's JSON.
    Answer(Vec<u8>),
}

/// Why no frame could be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FrameError {
    /// The stream ended between answers: the worker exited.
    #[error("the worker closed its output")]
    Eof,
    /// The stream ended inside an answer: the worker died while answering.
    #[error("the worker's answer ended after {got} bytes, before its end frame")]
    Partial {
        /// Bytes of the answer received.
        got: usize,
    },
    /// A byte that is no known tag, or a length over [`MAX_CHUNK`].
    #[error("not a worker frame (tag {tag:#04x}, length {len})")]
    Bad {
        /// The tag byte.
        tag: u8,
        /// The length read with it.
        len: u32,
    },
    /// The answer grew past the reader's cap.
    #[error("the worker's answer is larger than {cap} bytes")]
    TooLarge {
        /// The cap.
        cap: usize,
    },
    /// Reading failed.
    #[error("reading the worker's output failed")]
    Io(#[from] io::Error),
}

/// Reads frames, gathering `D` parts into whole answers of at most `cap`
/// bytes.
pub(crate) fn read_frame(input: &mut impl Read, cap: usize) -> Result<Frame, FrameError> {
    let mut answer: Option<Vec<u8>> = None;
    loop {
        let mut head = [0u8; 5];
        if let Err(e) = read_full(input, &mut head) {
            return Err(match (e, &answer) {
                (Short::Eof(0), None) => FrameError::Eof,
                (Short::Eof(_), part) => FrameError::Partial {
                    got: part.as_ref().map_or(0, Vec::len),
                },
                (Short::Io(e), _) => FrameError::Io(e),
            });
        }
        let tag = head[0];
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]);
        let size = len as usize;
        let known = matches!(tag, HELLO | DATA) && size <= MAX_CHUNK || tag == END && size == 0;
        if !known || (tag == HELLO && answer.is_some()) {
            return Err(FrameError::Bad { tag, len });
        }
        match tag {
            END => return Ok(Frame::Answer(answer.unwrap_or_default())),
            _ => {
                let mut hello = Vec::new();
                let buf = if tag == HELLO {
                    &mut hello
                } else {
                    answer.get_or_insert_with(Vec::new)
                };
                let start = buf.len();
                if start + size > cap {
                    return Err(FrameError::TooLarge { cap });
                }
                buf.resize(start + size, 0);
                if let Err(e) = read_full(input, &mut buf[start..]) {
                    return Err(match e {
                        Short::Eof(_) => FrameError::Partial { got: start },
                        Short::Io(e) => FrameError::Io(e),
                    });
                }
                if tag == HELLO {
                    return Ok(Frame::Hello(hello));
                }
            }
        }
    }
}

enum Short {
    /// End of stream after this many bytes.
    Eof(usize),
    Io(io::Error),
}

fn read_full(input: &mut impl Read, buf: &mut [u8]) -> Result<(), Short> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => return Err(Short::Eof(got)),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Short::Io(e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(bytes: &[u8]) -> Vec<u8> {
        let mut w = Answer::new(Vec::new());
        w.write_all(bytes).unwrap();
        w.finish().unwrap()
    }

    #[test]
    fn a_large_answer_streams_in_chunks_and_reads_back_whole() {
        let big: Vec<u8> = (0..MAX_CHUNK * 2 + 17).map(|i| (i % 251) as u8).collect();
        let wire = answer(&big);
        // Two full parts, one short one, the end.
        assert_eq!(wire.len(), big.len() + 4 * 5);
        assert_eq!(wire[0], DATA);
        assert_eq!(&wire[wire.len() - 5..], &[END, 0, 0, 0, 0]);
        let mut r = &wire[..];
        assert_eq!(read_frame(&mut r, usize::MAX).unwrap(), Frame::Answer(big));
        assert!(matches!(
            read_frame(&mut r, usize::MAX),
            Err(FrameError::Eof)
        ));
    }

    #[test]
    fn hello_then_answers_in_a_row() {
        let mut wire = Vec::new();
        write_frame(&mut wire, HELLO, b"{\"v\":1}").unwrap();
        wire.extend(answer(b"one"));
        wire.extend(answer(b""));
        let mut r = &wire[..];
        assert_eq!(
            read_frame(&mut r, 100).unwrap(),
            Frame::Hello(b"{\"v\":1}".to_vec())
        );
        assert_eq!(
            read_frame(&mut r, 100).unwrap(),
            Frame::Answer(b"one".to_vec())
        );
        assert_eq!(read_frame(&mut r, 100).unwrap(), Frame::Answer(Vec::new()));
    }

    #[test]
    fn an_answer_cut_anywhere_is_partial_never_whole() {
        let wire = answer(&vec![b'x'; MAX_CHUNK + 10]);
        // Every cut short of the end frame's last byte.
        for cut in [1, 4, 5, 6, MAX_CHUNK + 5, MAX_CHUNK + 9, wire.len() - 1] {
            let mut r = &wire[..cut];
            let got = read_frame(&mut r, usize::MAX);
            assert!(
                matches!(got, Err(FrameError::Partial { .. })),
                "cut {cut}: {got:?}"
            );
        }
    }

    #[test]
    fn text_from_a_host_without_the_worker_hook_is_rejected() {
        let mut r = &b"{\"jsonrpc\":\"2.0\",\"error\":{}}\n"[..];
        assert!(matches!(
            read_frame(&mut r, 100),
            Err(FrameError::Bad { tag: b'{', .. })
        ));
        let mut r = &b"Usage: lro <COMMAND>\n"[..];
        assert!(matches!(
            read_frame(&mut r, 100),
            Err(FrameError::Bad { .. })
        ));
        // A known tag with an impossible length is no frame either.
        let mut r = &[DATA, 0xff, 0xff, 0xff, 0xff][..];
        assert!(matches!(
            read_frame(&mut r, usize::MAX),
            Err(FrameError::Bad { .. })
        ));
    }

    #[test]
    fn an_answer_over_the_cap_is_refused() {
        let wire = answer(&[b'x'; 300]);
        let mut r = &wire[..];
        assert!(matches!(
            read_frame(&mut r, 299),
            Err(FrameError::TooLarge { cap: 299 })
        ));
    }
}

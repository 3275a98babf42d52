//! The record lines of an offload file.

use std::io::{BufRead, BufReader, Read};

use crate::ExtractError;

/// Record lines of a reader: trailing `\r\n` trimmed, blank lines skipped.
pub(crate) struct Lines<R> {
    reader: BufReader<R>,
    buf: Vec<u8>,
    line_no: usize,
}

impl<R: Read> Lines<R> {
    pub(crate) fn new(reader: R, first_line: usize) -> Self {
        Self {
            reader: BufReader::with_capacity(256 * 1024, reader),
            buf: Vec::new(),
            line_no: first_line.saturating_sub(1),
        }
    }

    /// The file line number of the last line read, blank or not.
    pub(crate) fn read(&self) -> usize {
        self.line_no
    }

    /// The next non-blank line and its 1-based file line number.
    pub(crate) fn next_line(&mut self) -> Result<Option<(usize, &[u8])>, ExtractError> {
        loop {
            self.buf.clear();
            let n = self
                .reader
                .read_until(b'\n', &mut self.buf)
                .map_err(|source| ExtractError::Io {
                    path: Default::default(),
                    source,
                })?;
            if n == 0 {
                return Ok(None);
            }
            self.line_no += 1;
            let mut end = self.buf.len();
            while end > 0 && matches!(self.buf[end - 1], b'\n' | b'\r') {
                end -= 1;
            }
            if self.buf[..end].iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Ok(Some((self.line_no, &self.buf[..end])));
        }
    }
}

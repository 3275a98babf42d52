//! The result of an extraction, and the budgeted collector that builds it.
//!
//! Every mode renders its results as text lines (one compact JSON value per
//! line, raw strings for `-r` recipes, `N:text` for text modes) and hands
//! them to a [`Collector`], which enforces `max_output_values` and
//! `max_output_bytes`: past either, it stops the producer and records a
//! notice instead of failing.
//!
use std::io::Write;

use lro_core::metric::label::ExtractMode;

use serde::Serialize;
use serde_json::Value;

/// What an extraction returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ExtractOutput {
    /// The request's mode.
    pub mode: ExtractMode,
    /// The results kept, in order: the JSON values the filter produced
    /// (strings for raw output), or `{"line", "text"}` objects in text modes
    /// (grep adds `"match": true|false`). Empty when streamed to a writer.
    pub values: Vec<Value>,
    /// Whether strings were printed raw (`jq -r`), as recipe 1 does.
    pub raw: bool,
    /// Number of results in `values` / `text`.
    pub count: usize,
    /// Whether results were left out because a limit was reached.
    pub truncated: bool,
    /// Why output was cut, or other facts the reader needs (e.g. a line was
    /// shortened); also the last line of `text`, prefixed with `# `.
    pub notice: Option<String>,
    /// What to show the model: one result per line (compact JSON, raw
    /// strings for raw output), then the notice as a `# ` line when there is
    /// one; `# no results` when nothing matched.
    pub text: String,
}

/// Whether the producer should go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    Stop,
}

enum Sink {
    Buffer(Vec<u8>),
    Writer(Box<dyn Write + Send>),
}

/// Collects rendered result lines within the output budget.
pub(crate) struct Collector {
    max_bytes: usize,
    max_values: usize,
    keep_values: bool,
    sink: Sink,
    values: Vec<Value>,
    count: usize,
    bytes: usize,
    truncated: bool,
    notices: Vec<String>,
}

impl Collector {
    /// Collects into memory, keeping values.
    pub(crate) fn buffer(max_bytes: usize, max_values: usize) -> Self {
        Self::with_sink(Sink::Buffer(Vec::new()), max_bytes, max_values, true)
    }

    /// Streams lines to `w`, keeping no values.
    pub(crate) fn writer(w: Box<dyn Write + Send>, max_bytes: usize, max_values: usize) -> Self {
        Self::with_sink(Sink::Writer(w), max_bytes, max_values, false)
    }

    fn with_sink(sink: Sink, max_bytes: usize, max_values: usize, keep_values: bool) -> Self {
        Self {
            max_bytes,
            max_values,
            keep_values,
            sink,
            values: Vec::new(),
            count: 0,
            bytes: 0,
            truncated: false,
            notices: Vec::new(),
        }
    }

    /// Whether values are kept (so the producer should build them).
    pub(crate) fn keeps_values(&self) -> bool {
        self.keep_values
    }

    /// Results so far.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// Bytes still available for one more line (its newline included).
    pub(crate) fn remaining_bytes(&self) -> usize {
        self.max_bytes.saturating_sub(self.bytes)
    }

    /// Whether one more result is allowed at all; records the notice when
    /// not.
    pub(crate) fn admit(&mut self) -> Flow {
        if self.count >= self.max_values {
            self.cut(format!(
                "output stopped after {} results (max_output_values); narrow the query or use offset/limit to page",
                self.count
            ));
            return Flow::Stop;
        }
        Flow::Continue
    }

    /// Whether `len` more bytes (plus a newline) fit.
    pub(crate) fn fits(&self, len: usize) -> bool {
        self.bytes.saturating_add(len).saturating_add(1) <= self.max_bytes
    }

    /// Adds one result line. `value` is built only when values are kept.
    /// Returns `Stop` when the line does not fit (nothing is added then) or
    /// a limit is now reached.
    pub(crate) fn push(&mut self, line: &[u8], value: impl FnOnce() -> Value) -> Flow {
        if self.admit() == Flow::Stop {
            return Flow::Stop;
        }
        if !self.fits(line.len()) {
            self.cut_bytes();
            return Flow::Stop;
        }
        self.write_line(line);
        if self.keep_values {
            self.values.push(value());
        }
        self.count += 1;
        Flow::Continue
    }

    /// Adds a line that is not a result (a `--` separator).
    pub(crate) fn push_separator(&mut self, line: &[u8]) -> Flow {
        if !self.fits(line.len()) {
            self.cut_bytes();
            return Flow::Stop;
        }
        self.write_line(line);
        Flow::Continue
    }

    fn write_line(&mut self, line: &[u8]) {
        self.bytes += line.len() + 1;
        match &mut self.sink {
            Sink::Buffer(b) => {
                b.extend_from_slice(line);
                b.push(b'\n');
            }
            Sink::Writer(w) => {
                // A closed pipe (e.g. `lro extract ... | head`) is not an
                // extraction error; the remaining output is simply dropped.
                if w.write_all(line).and_then(|()| w.write_all(b"\n")).is_err() {
                    self.max_bytes = self.bytes;
                }
            }
        }
    }

    /// Records that output was cut by the byte budget.
    pub(crate) fn cut_bytes(&mut self) {
        self.cut(format!(
            "output cut at {} results: max_output_bytes ({}) reached; narrow the query, select fewer fields, or page with offset/limit",
            self.count, self.max_bytes
        ));
    }

    /// Records a truncation with its reason.
    pub(crate) fn cut(&mut self, notice: String) {
        self.truncated = true;
        self.note(notice);
    }

    /// Records a notice (once per distinct text).
    pub(crate) fn note(&mut self, notice: String) {
        if !self.notices.contains(&notice) {
            self.notices.push(notice);
        }
    }

    /// Finishes: flushes a writer, renders the text.
    pub(crate) fn finish(self, mode: ExtractMode, raw: bool) -> ExtractOutput {
        let notice = (!self.notices.is_empty()).then(|| self.notices.join("; "));
        let mut text = match self.sink {
            Sink::Buffer(b) => String::from_utf8(b)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            Sink::Writer(mut w) => {
                let _ = w.flush();
                String::new()
            }
        };
        if self.keep_values {
            match &notice {
                Some(n) => {
                    text.push_str("# ");
                    text.push_str(n);
                    text.push('\n');
                }
                None if self.count == 0 => text.push_str("# no results\n"),
                None => {}
            }
        }
        ExtractOutput {
            mode,
            values: self.values,
            raw,
            count: self.count,
            truncated: self.truncated,
            notice,
            text,
        }
    }
}

/// Cuts `s` to at most `max` bytes at a char boundary.
pub(crate) fn floor_char_boundary(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn value_limit_cuts_with_notice() {
        let mut c = Collector::buffer(1000, 2);
        assert_eq!(c.push(b"1", || json!(1)), Flow::Continue);
        assert_eq!(c.push(b"2", || json!(2)), Flow::Continue);
        assert_eq!(c.push(b"3", || json!(3)), Flow::Stop);
        let out = c.finish(ExtractMode::Query, false);
        assert_eq!(out.values, [json!(1), json!(2)]);
        assert!(out.truncated);
        assert!(
            out.text
                .starts_with("1\n2\n# output stopped after 2 results")
        );
    }

    #[test]
    fn byte_limit_counts_newlines() {
        let mut c = Collector::buffer(4, 100);
        assert_eq!(c.push(b"ab", || json!("ab")), Flow::Continue);
        assert_eq!(c.remaining_bytes(), 1);
        assert_eq!(c.push(b"c", || json!("c")), Flow::Stop);
        let out = c.finish(ExtractMode::Query, true);
        assert_eq!(out.count, 1);
        assert!(out.notice.unwrap().contains("max_output_bytes (4)"));
    }

    #[test]
    fn empty_output_says_so() {
        let out = Collector::buffer(10, 10).finish(ExtractMode::Grep, false);
        assert_eq!(out.text, "# no results\n");
        assert!(!out.truncated);
    }

    #[test]
    fn char_boundary() {
        assert_eq!(floor_char_boundary("héllo", 2), "h");
        assert_eq!(floor_char_boundary("abc", 10), "abc");
    }
}

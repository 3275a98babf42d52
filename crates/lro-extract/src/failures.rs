//! Records a filter failed on, and records too deep to read: jq 1.6 prints
//! an error for the one and goes on with the next record, and refuses the
//! other; an extraction answers every other record and says which failed.
//!
//! `lro extract` prints each error as jq does, on its error stream, with
//! the line numbers jq gives the recipe commands (`tail -n +2 FILE | jq`:
//! the records counted from 1); the tool's answer carries a notice with how
//! many failed and the first error.

use std::io::Write;

/// jq 1.6's `MAX_PARSING_DEPTH`: the entries its parser's stack holds. A
/// record nested deeper is one jq cannot read, so it is left out and named
/// (here, where `jq::read` and the notices both find it, so that neither
/// module reaches into the other).
pub(crate) const MAX_PARSING_DEPTH: usize = 256;

/// How many deep records a notice names by line.
const NAMED: usize = 5;

/// The failures of one extraction.
#[derive(Default)]
pub(crate) struct Failures {
    /// Where jq's error lines go (`lro extract`'s error stream).
    errors: Option<Box<dyn Write + Send>>,
    failed: usize,
    answered: usize,
    /// The first failure: its file line (when per record) and message.
    first: Option<(Option<usize>, String)>,
    last_failed: bool,
    deep: Vec<usize>,
    deep_count: usize,
}

impl Failures {
    /// Also prints each error as jq 1.6 does, to `w`.
    pub(crate) fn print_to(&mut self, w: Box<dyn Write + Send>) {
        self.errors = Some(w);
    }

    /// The filter failed with `message` on the record on file line `line`
    /// (per record), or on all records (`None`, slurped), after reading up
    /// to file line `read`.
    pub(crate) fn failed(&mut self, line: Option<usize>, read: usize, message: Message) {
        self.failed += 1;
        self.last_failed = true;
        if let Some(w) = &mut self.errors {
            // The header is line 1 of the file, and not piped to jq.
            let at = read.saturating_sub(1);
            let _ = writeln!(w, "jq: error (at <stdin>:{at}){}", message.line_tail());
        }
        if self.first.is_none() {
            self.first = Some((line, message.text()));
        }
    }

    /// The filter ran on a record without an error.
    pub(crate) fn succeeded(&mut self) {
        self.answered += 1;
        self.last_failed = false;
    }

    /// The record on file line `line` is nested deeper than jq 1.6 reads.
    pub(crate) fn too_deep(&mut self, line: usize) {
        self.deep_count += 1;
        if self.deep.len() < NAMED {
            self.deep.push(line);
        }
        if let Some(w) = &mut self.errors {
            let _ = writeln!(
                w,
                "# record on line {line} is nested deeper than jq 1.6 reads ({} levels); skipped",
                MAX_PARSING_DEPTH
            );
        }
    }

    /// How many records failed, whether the last one did, how many were
    /// too deep.
    pub(crate) fn counts(&self) -> (usize, bool, usize) {
        (self.failed, self.last_failed, self.deep_count)
    }

    /// What the answer says about them, when anything failed.
    pub(crate) fn notices(&mut self) -> Vec<String> {
        if let Some(w) = &mut self.errors {
            let _ = w.flush();
        }
        let mut out = Vec::new();
        if let Some((line, message)) = &self.first {
            let first = match line {
                Some(l) => format!("the first, on line {l}: {message}"),
                None => message.clone(),
            };
            out.push(match (self.failed, line) {
                (_, None) => format!("the filter failed: {first}"),
                (n, Some(_)) if self.answered == 0 => {
                    format!("the filter failed on all {n} records: {first}")
                }
                (1, Some(_)) => {
                    format!("the filter failed on 1 record, the others answered: {first}")
                }
                (n, Some(_)) => {
                    format!("the filter failed on {n} records, the others answered: {first}")
                }
            });
        }
        if self.deep_count > 0 {
            let mut lines: Vec<String> = self.deep.iter().map(usize::to_string).collect();
            if self.deep_count > self.deep.len() {
                lines.push("…".to_owned());
            }
            let (n, s) = match self.deep_count {
                1 => ("1 record".to_owned(), "is"),
                n => (format!("{n} records"), "are"),
            };
            out.push(format!(
                "{n} (line {}) {s} nested deeper than jq 1.6 reads ({} levels) and left out",
                lines.join(", "),
                MAX_PARSING_DEPTH
            ));
        }
        out
    }
}

/// How jq 1.6 reports a failed record.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Message {
    /// `jq: error (at <stdin>:N): TEXT`.
    Text(String),
    /// `error(v)` of anything but a string or null:
    /// `jq: error (at <stdin>:N) (not a string): JSON`.
    NotAString(String),
}

impl Message {
    /// What follows `jq: error (at <stdin>:N)` on jq's error line.
    pub(crate) fn line_tail(&self) -> String {
        match self {
            Self::Text(t) => format!(": {t}"),
            Self::NotAString(v) => format!(" (not a string): {v}"),
        }
    }

    /// The text a notice quotes.
    pub(crate) fn text(&self) -> String {
        match self {
            Self::Text(t) => t.clone(),
            Self::NotAString(v) => format!("{v} (not a string)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek};

    #[test]
    fn errors_print_as_jq_prints_them() {
        let mut text = tempfile::tempfile().unwrap();
        let mut f = Failures::default();
        f.print_to(Box::new(text.try_clone().unwrap()));
        f.failed(
            Some(3),
            3,
            Message::Text("boolean (true) has no length".into()),
        );
        f.succeeded();
        f.too_deep(9);
        assert_eq!(f.counts(), (1, false, 1));
        f.failed(Some(10), 10, Message::NotAString("{}".into()));
        assert_eq!(f.counts(), (2, true, 1));
        let mut printed = String::new();
        text.rewind().unwrap();
        text.read_to_string(&mut printed).unwrap();
        assert_eq!(
            printed.lines().collect::<Vec<_>>(),
            [
                "jq: error (at <stdin>:2): boolean (true) has no length",
                "# record on line 9 is nested deeper than jq 1.6 reads (256 levels); skipped",
                "jq: error (at <stdin>:9) (not a string): {}",
            ]
        );
        assert_eq!(
            f.notices(),
            [
                "the filter failed on 2 records, the others answered: the first, on line 3: boolean (true) has no length",
                "1 record (line 9) is nested deeper than jq 1.6 reads (256 levels) and left out",
            ]
        );
    }
}

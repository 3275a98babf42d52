//! Records a filter failed on, and records jq 1.6 cannot read (nested too
//! deep, or a lone high surrogate escape): jq 1.6 prints an error for the
//! one and goes on with the next record, and refuses the other; an
//! extraction answers every other record and says which failed.
//!
//! `lro extract` prints each error as jq does, on its error stream, with
//! the line numbers jq gives the recipe commands (`tail -n +2 FILE | jq`:
//! the records counted from 1), and one line for each record left out; that
//! is all it says. The tool's answer carries a notice instead, with how
//! many failed and the first error, and which records were left out.

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
    deep: Left,
    refused: Left,
}

/// Records left out for one reason: the first few lines, how many.
#[derive(Default)]
struct Left {
    lines: Vec<usize>,
    count: usize,
    /// jq's message about the first (for those it refuses).
    first: Option<String>,
}

impl Left {
    fn add(&mut self, line: usize, message: Option<String>) {
        self.count += 1;
        if self.lines.len() < NAMED {
            self.lines.push(line);
        }
        if self.first.is_none() {
            self.first = message;
        }
    }

    /// `2 records (line 4, 9) are`, for a notice.
    fn named(&self) -> String {
        let mut lines: Vec<String> = self.lines.iter().map(usize::to_string).collect();
        if self.count > self.lines.len() {
            lines.push("…".to_owned());
        }
        match self.count {
            1 => format!("1 record (line {}) is", lines.join(", ")),
            n => format!("{n} records (line {}) are", lines.join(", ")),
        }
    }
}

/// Why jq 1.6 cannot read a record.
pub(crate) enum Unread {
    /// Nested deeper than its parser's stack.
    Deep,
    /// Refused by its parser (a lone high surrogate escape), with jq's
    /// message.
    Refused(String),
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

    /// The record on file line `line` is one jq 1.6 cannot read, for
    /// `why`: it is left out.
    pub(crate) fn unread(&mut self, line: usize, why: Unread) {
        let said = match why {
            Unread::Deep => {
                self.deep.add(line, None);
                format!("is nested deeper than jq 1.6 reads ({MAX_PARSING_DEPTH} levels)")
            }
            Unread::Refused(message) => {
                let said = format!("is not JSON that jq 1.6 reads ({message})");
                self.refused.add(line, Some(message));
                said
            }
        };
        if let Some(w) = &mut self.errors {
            let _ = writeln!(w, "# record on line {line} {said}; skipped");
        }
    }

    /// How many records failed, whether the last one did, how many could
    /// not be read.
    pub(crate) fn counts(&self) -> (usize, bool, usize) {
        (
            self.failed,
            self.last_failed,
            self.deep.count + self.refused.count,
        )
    }

    /// What the answer says about them, when anything failed; nothing when
    /// the errors were printed as jq prints them (that says it all).
    pub(crate) fn notices(&mut self) -> Vec<String> {
        if let Some(w) = &mut self.errors {
            let _ = w.flush();
            return Vec::new();
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
        if self.deep.count > 0 {
            out.push(format!(
                "{} nested deeper than jq 1.6 reads ({MAX_PARSING_DEPTH} levels) and left out",
                self.deep.named()
            ));
        }
        if self.refused.count > 0 {
            out.push(format!(
                "{} not JSON that jq 1.6 reads ({}) and left out",
                self.refused.named(),
                self.refused.first.as_deref().unwrap_or_default()
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
        f.unread(9, Unread::Deep);
        assert_eq!(f.counts(), (1, false, 1));
        f.failed(Some(10), 10, Message::NotAString("{}".into()));
        assert_eq!(f.counts(), (2, true, 1));
        // Printed as jq prints them, nothing more is said.
        assert!(f.notices().is_empty());
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
    }

    #[test]
    fn notices_name_the_failed_and_the_unread() {
        let mut f = Failures::default();
        f.failed(
            Some(3),
            3,
            Message::Text("boolean (true) has no length".into()),
        );
        f.succeeded();
        f.unread(9, Unread::Deep);
        f.failed(Some(10), 10, Message::NotAString("{}".into()));
        let refusal = "Invalid \\uXXXX\\uXXXX surrogate pair escape";
        for line in [11, 12, 13, 14, 15, 16] {
            f.unread(line, Unread::Refused(refusal.into()));
        }
        assert_eq!(f.counts(), (2, true, 7));
        assert_eq!(
            f.notices(),
            [
                "the filter failed on 2 records, the others answered: the first, on line 3: boolean (true) has no length",
                "1 record (line 9) is nested deeper than jq 1.6 reads (256 levels) and left out",
                "6 records (line 11, 12, 13, 14, 15, …) are not JSON that jq 1.6 reads (Invalid \\uXXXX\\uXXXX surrogate pair escape) and left out",
            ]
        );
    }
}

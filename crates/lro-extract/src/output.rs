//! The result of an extraction, and the budgeted collector that builds it.
//!
//! Every mode renders its results as text lines (one compact JSON value per
//! line, raw strings for `-r` recipes, `N:text` for text modes) and hands
//! them to a [`Collector`], which enforces `max_output_values`,
//! `max_output_bytes` and the token budget: past any, it stops the producer
//! between results (never inside one) and records a notice, with the request
//! for the next part, instead of failing. It also applies `offset`/`limit`
//! to the stream of a recipe's or query's results.

use std::{cell::Cell, io::Write, sync::Arc};

use lro_core::{TokenEstimator, metric::label::ExtractMode};

use serde::Serialize;
use serde_json::Value;

use crate::{ExtractRequest, failures::Failures};

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
    /// The request that shows the next part after a cut, when the mode can
    /// express one (recipe, query and structured); its notice names it too.
    pub next: Option<ExtractRequest>,
    /// What to show the model: one result per line (compact JSON, raw
    /// strings for raw output), then the notice as a `# ` line when there is
    /// one; `# no results` when nothing matched.
    pub text: String,
    /// Records the filter failed on (jq prints an error for each and goes
    /// on); with `slurp`, 1 when the filter failed.
    pub failed: usize,
    /// Whether it failed on the last record (jq 1.6 then exits with 5).
    pub last_failed: bool,
    /// Records jq 1.6 cannot read (nested too deep, or a lone high
    /// surrogate escape), left out.
    pub unread: usize,
    #[serde(skip)]
    pub(crate) results_len: usize,
}

impl ExtractOutput {
    /// The result lines of [`ExtractOutput::text`], without the `# ` notice
    /// line, for callers that show the notice on its own.
    pub fn results(&self) -> &str {
        self.text.get(..self.results_len).unwrap_or(&self.text)
    }
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

/// The output budget of one call.
#[derive(Clone)]
pub(crate) struct Limits {
    pub(crate) max_bytes: usize,
    pub(crate) max_values: usize,
    /// Most estimated tokens, measured with the estimator.
    pub(crate) max_tokens: Option<(usize, Arc<dyn TokenEstimator>)>,
}

impl Limits {
    #[cfg(test)]
    pub(crate) fn bytes(max_bytes: usize, max_values: usize) -> Self {
        Self {
            max_bytes,
            max_values,
            max_tokens: None,
        }
    }
}

/// `offset`/`limit` on the stream of results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Window {
    pub(crate) offset: usize,
    pub(crate) limit: Option<usize>,
}

/// Where output stopped short of everything the filter produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cut {
    /// The stream stopped after `shown` results; more may follow.
    Results { shown: usize },
    /// The single result is an array (or object): `shown` of its `total`
    /// elements (entries), starting at element `from`, are shown.
    Elements {
        from: usize,
        shown: usize,
        total: usize,
        /// The filter returned only this result, so offset/limit can page
        /// its elements.
        single: bool,
    },
}

/// Collects rendered result lines within the output budget. Lines are
/// whole results: nothing is ever cut inside one.
pub(crate) struct Collector {
    limits: Limits,
    window: Window,
    keep_values: bool,
    sink: Sink,
    values: Vec<Value>,
    count: usize,
    skipped: usize,
    bytes: usize,
    tokens: usize,
    truncated: bool,
    cut: Option<Cut>,
    single_result: bool,
    notices: Vec<String>,
    /// Whether the last line that did not fit was over the byte budget (it
    /// may be under the token one), for notices that name what cut.
    over_bytes: Cell<bool>,
    /// Records the filter failed on, and records jq cannot read.
    pub(crate) failures: Failures,
}

impl Collector {
    /// Collects into memory, keeping values.
    pub(crate) fn buffer(limits: Limits) -> Self {
        Self::with_sink(Sink::Buffer(Vec::new()), limits, true)
    }

    /// Collects the text into memory, keeping no values.
    pub(crate) fn text(limits: Limits) -> Self {
        Self::with_sink(Sink::Buffer(Vec::new()), limits, false)
    }

    /// Streams lines to `w`, keeping no values.
    pub(crate) fn writer(w: Box<dyn Write + Send>, limits: Limits) -> Self {
        Self::with_sink(Sink::Writer(w), limits, false)
    }

    fn with_sink(sink: Sink, limits: Limits, keep_values: bool) -> Self {
        Self {
            limits,
            window: Window::default(),
            keep_values,
            sink,
            values: Vec::new(),
            count: 0,
            skipped: 0,
            bytes: 0,
            tokens: 0,
            truncated: false,
            cut: None,
            single_result: false,
            notices: Vec::new(),
            over_bytes: Cell::new(false),
            failures: Failures::default(),
        }
    }

    /// Shows only the results in `window` (the stream's offset/limit).
    pub(crate) fn window(mut self, window: Window) -> Self {
        self.window = window;
        self
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
        self.limits.max_bytes.saturating_sub(self.bytes)
    }

    /// Whether one more result is allowed at all; records the cut when not.
    pub(crate) fn admit(&mut self) -> Flow {
        if !self.skips_next() && self.window.limit.is_some_and(|limit| self.count >= limit) {
            // The page is full and the filter has more: say where it goes on.
            self.cut = Some(Cut::Results { shown: self.count });
            return Flow::Stop;
        }
        if self.count >= self.limits.max_values {
            self.cut_results(format!(
                "output stopped after {} results (max_output_values)",
                self.count
            ));
            return Flow::Stop;
        }
        Flow::Continue
    }

    /// The estimated tokens of `line`, when tokens are budgeted.
    fn estimate(&self, line: &[u8]) -> usize {
        match &self.limits.max_tokens {
            Some((_, estimator)) => estimator.estimate(&String::from_utf8_lossy(line)),
            None => 0,
        }
    }

    /// The estimated tokens of `line` and its newline, when tokens are
    /// budgeted.
    pub(crate) fn tokens_of(&self, line: &[u8]) -> usize {
        match &self.limits.max_tokens {
            Some(_) => self.estimate(line) + 1,
            None => 0,
        }
    }

    /// Whether `line` (plus a newline) fits what is left of every budget.
    pub(crate) fn fits(&self, line: &[u8]) -> bool {
        // The byte check first: it is free, the estimate is not.
        self.fits_size(line.len(), 0) && self.fits_size(line.len(), self.estimate(line))
    }

    /// Adds one result line, unless the window skips it. `value` is built
    /// only when values are kept. Returns `Stop` when the line does not fit
    /// (nothing is added then) or a limit is now reached.
    pub(crate) fn push(&mut self, line: &[u8], value: impl FnOnce() -> Value) -> Flow {
        if self.skipped < self.window.offset {
            self.skipped += 1;
            return Flow::Continue;
        }
        if self.admit() == Flow::Stop {
            return Flow::Stop;
        }
        if !self.fits(line) {
            self.cut_budget();
            return Flow::Stop;
        }
        self.push_unpaged(line, value);
        Flow::Continue
    }

    /// Adds one result line whatever the window (it was applied already).
    pub(crate) fn push_unpaged(&mut self, line: &[u8], value: impl FnOnce() -> Value) {
        self.write_line(line);
        if self.keep_values {
            self.values.push(value());
        }
        self.count += 1;
    }

    /// Adds a line that is not a result (a `--` separator).
    pub(crate) fn push_separator(&mut self, line: &[u8]) -> Flow {
        if !self.fits(line) {
            self.cut_budget();
            return Flow::Stop;
        }
        self.write_line(line);
        Flow::Continue
    }

    fn write_line(&mut self, line: &[u8]) {
        self.tokens += self.tokens_of(line);
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
                    self.limits.max_bytes = self.bytes;
                }
            }
        }
    }

    /// The budget the last result that did not fit ran into, for notices.
    pub(crate) fn budget_name(&self) -> String {
        match &self.limits.max_tokens {
            Some((max, _)) if !self.over_bytes.get() => format!("the {max}-token output limit"),
            _ => format!("max_output_bytes ({})", self.limits.max_bytes),
        }
    }

    /// Records that the next result did not fit the budget.
    pub(crate) fn cut_budget(&mut self) {
        let budget = self.budget_name();
        self.cut_results(format!("output cut at {} results by {budget}", self.count));
    }

    fn cut_results(&mut self, notice: String) {
        self.cut = Some(Cut::Results { shown: self.count });
        self.cut(notice);
    }

    /// Records that only `shown` of the single result's `total` elements,
    /// from element `from`, are shown; `truncated` when a limit, not the
    /// requested window, left elements out.
    pub(crate) fn cut_elements(
        &mut self,
        from: usize,
        shown: usize,
        total: usize,
        truncated: bool,
    ) {
        self.truncated |= truncated;
        self.cut = Some(Cut::Elements {
            from,
            shown,
            total,
            single: self.single_result,
        });
    }

    /// Records that the filter returned exactly one result (a slurp), so
    /// offset/limit page its elements.
    pub(crate) fn single_result(&mut self) {
        self.single_result = true;
    }

    /// Whether the window skips the next result (so its size is moot).
    pub(crate) fn skips_next(&self) -> bool {
        self.skipped < self.window.offset
    }

    /// Whether a line of `bytes` bytes and `tokens` estimated tokens fits.
    pub(crate) fn fits_size(&self, bytes: usize, tokens: usize) -> bool {
        let bytes_ok = self.bytes.saturating_add(bytes).saturating_add(1) <= self.limits.max_bytes;
        let fits = bytes_ok
            && match &self.limits.max_tokens {
                Some((max, _)) => self.tokens + tokens < *max,
                None => true,
            };
        if !fits {
            self.over_bytes.set(!bytes_ok);
        }
        fits
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

    /// Finishes: flushes a writer, renders the text. `next` is the request
    /// that shows what comes after a cut, when the mode can express one.
    pub(crate) fn finish(
        mut self,
        mode: ExtractMode,
        raw: bool,
        next: impl FnOnce(Cut) -> Option<ExtractRequest>,
    ) -> ExtractOutput {
        let next = self.cut.and_then(|cut| {
            if let Cut::Elements {
                from, shown, total, ..
            } = cut
            {
                let (first, last) = (from + 1, from + shown);
                self.notices.insert(
                    0,
                    if shown == 0 {
                        format!(
                            "the result is an array or object of {total} elements, and not even one fits {}",
                            self.budget_name()
                        )
                    } else if from == 0 {
                        format!("showing {shown} of {total} elements")
                    } else {
                        format!("showing elements {first}-{last} of {total}")
                    },
                );
            }
            next(cut)
        });
        self.notices.extend(self.failures.notices());
        let (failed, last_failed, unread) = self.failures.counts();
        if let Some(next) = &next {
            let call = serde_json::to_string(next).expect("requests serialize");
            self.notices.push(format!("next part: {call}"));
        }
        let notice = (!self.notices.is_empty()).then(|| self.notices.join("; "));
        let buffered = matches!(self.sink, Sink::Buffer(_));
        let mut text = match self.sink {
            Sink::Buffer(b) => String::from_utf8(b)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            Sink::Writer(mut w) => {
                let _ = w.flush();
                String::new()
            }
        };
        let results_len = text.len();
        if buffered {
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
            next,
            text,
            failed,
            last_failed,
            unread,
            results_len,
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
        let mut c = Collector::buffer(Limits::bytes(1000, 2));
        assert_eq!(c.push(b"1", || json!(1)), Flow::Continue);
        assert_eq!(c.push(b"2", || json!(2)), Flow::Continue);
        assert_eq!(c.push(b"3", || json!(3)), Flow::Stop);
        let out = c.finish(ExtractMode::Query, false, |_| None);
        assert_eq!(out.values, [json!(1), json!(2)]);
        assert!(out.truncated);
        assert!(
            out.text
                .starts_with("1\n2\n# output stopped after 2 results")
        );
    }

    #[test]
    fn byte_limit_counts_newlines() {
        let mut c = Collector::buffer(Limits::bytes(4, 100));
        assert_eq!(c.push(b"ab", || json!("ab")), Flow::Continue);
        assert_eq!(c.remaining_bytes(), 1);
        assert_eq!(c.push(b"c", || json!("c")), Flow::Stop);
        let out = c.finish(ExtractMode::Query, true, |_| None);
        assert_eq!(out.count, 1);
        assert!(out.notice.unwrap().contains("max_output_bytes (4)"));
    }

    #[test]
    fn a_cut_names_the_budget_it_ran_into() {
        // 1,000 tokens and 12 bytes: the bytes cut.
        let limits = |max_bytes, max_tokens| Limits {
            max_bytes,
            max_values: 100,
            max_tokens: Some((max_tokens, Arc::new(()) as Arc<dyn TokenEstimator>)),
        };
        let mut c = Collector::buffer(limits(12, 1000));
        assert_eq!(c.push(b"\"abcdef\"", || json!("abcdef")), Flow::Continue);
        assert_eq!(c.push(b"\"abcdef\"", || json!("abcdef")), Flow::Stop);
        let notice = c.finish(ExtractMode::Query, false, |_| None).notice;
        assert_eq!(
            notice.as_deref(),
            Some("output cut at 1 results by max_output_bytes (12)")
        );
        // 3 tokens and 1,000 bytes: the tokens cut.
        let mut c = Collector::buffer(limits(1000, 3));
        assert_eq!(c.push(b"\"abcdef\"", || json!("abcdef")), Flow::Continue);
        assert_eq!(c.push(b"\"abcdef\"", || json!("abcdef")), Flow::Stop);
        let notice = c.finish(ExtractMode::Query, false, |_| None).notice;
        assert_eq!(
            notice.as_deref(),
            Some("output cut at 1 results by the 3-token output limit")
        );
    }

    #[test]
    fn empty_output_says_so() {
        let out =
            Collector::buffer(Limits::bytes(10, 10)).finish(ExtractMode::Grep, false, |_| None);
        assert_eq!(out.text, "# no results\n");
        assert!(!out.truncated);
    }

    #[test]
    fn char_boundary() {
        assert_eq!(floor_char_boundary("héllo", 2), "h");
        assert_eq!(floor_char_boundary("abc", 10), "abc");
    }
}

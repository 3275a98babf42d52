//! Text modes: a window of lines, and grep with context.
//!
//! Records are shown as text lines numbered from 1 (the first record after
//! the header). A plain-text offload stores each original line as
//! `{"line": n, "text": "..."}`; its `text` is shown. Any other record is
//! shown as its JSON line. Lines longer than `max_chars` characters are cut
//! with a `… [N more chars]` marker and a notice.

use std::{collections::VecDeque, io::Read};

use regex::{Regex, RegexBuilder};
use serde_json::json;

use crate::{
    ExtractError,
    jq::{Guard, Lines},
    output::{Collector, Flow},
    request::{
        DEFAULT_LINE_LIMIT, DEFAULT_MAX_CHARS, DEFAULT_MAX_MATCHES, Grep, LineWindow, MAX_CONTEXT,
    },
};

/// The text shown for a record line.
pub(crate) fn display_text(line: &[u8]) -> String {
    if line.starts_with(br#"{"line":"#) {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct TextLine {
            #[allow(dead_code)]
            line: u64,
            text: String,
        }
        if let Ok(t) = serde_json::from_slice::<TextLine>(line) {
            return t.text;
        }
    }
    String::from_utf8_lossy(line).into_owned()
}

/// Cuts `text` to `max` characters, appending a marker; returns whether it
/// was cut.
fn cap_chars(text: &str, max: usize) -> (String, bool) {
    match text.char_indices().nth(max) {
        None => (text.to_owned(), false),
        Some((end, _)) => {
            let rest = text[end..].chars().count();
            (format!("{}… [{rest} more chars]", &text[..end]), true)
        }
    }
}

fn timeout() -> ExtractError {
    ExtractError::Timeout {
        limit: Default::default(),
    }
}

/// Runs a line window.
pub(crate) fn run_lines(
    window: &LineWindow,
    total: usize,
    reader: impl Read,
    guard: &Guard,
    out: &mut Collector,
) -> Result<(), ExtractError> {
    let offset = window.offset.unwrap_or(0);
    let limit = window.limit.unwrap_or(DEFAULT_LINE_LIMIT);
    let max_chars = window.max_chars.unwrap_or(DEFAULT_MAX_CHARS).max(1);
    let mut lines = Lines::new(reader, 2);
    let mut n = 0usize;
    let mut shown = 0usize;
    let mut more = false;
    while let Some((_, line)) = lines.next_line()? {
        if guard.cancelled() {
            return Err(timeout());
        }
        n += 1;
        if n <= offset {
            continue;
        }
        if shown == limit {
            more = true;
            break;
        }
        let (text, cut) = cap_chars(&display_text(line), max_chars);
        if cut {
            out.note(format!(
                "line {n} was cut to {max_chars} characters (raise lines.max_chars, or use grep or query to pick parts)"
            ));
        }
        let rendered = format!("{n}:{text}");
        if out.push(rendered.as_bytes(), || json!({"line": n, "text": text})) == Flow::Stop {
            return Ok(());
        }
        shown += 1;
    }
    if more {
        out.note(format!(
            "more lines follow: continue with lines.offset = {} ({total} records in total)",
            offset + shown
        ));
    } else if shown == 0 {
        out.note(format!(
            "no lines after offset {offset}: the file has {n} records"
        ));
    }
    Ok(())
}

/// A compiled grep.
pub(crate) struct GrepPlan {
    re: Regex,
    context: usize,
    max_matches: usize,
}

impl GrepPlan {
    pub(crate) fn new(g: &Grep) -> Result<Self, ExtractError> {
        let context = g.context.unwrap_or(0);
        if context > MAX_CONTEXT {
            return Err(ExtractError::InvalidRequest(format!(
                "grep.context must be at most {MAX_CONTEXT}, got {context}"
            )));
        }
        let re = RegexBuilder::new(&g.pattern)
            .case_insensitive(g.ignore_case.unwrap_or(false))
            .build()
            .map_err(|e| {
                ExtractError::InvalidRequest(format!(
                    "grep.pattern is not a valid regex (escape special characters like \\. \\( to match them literally): {e}"
                ))
            })?;
        Ok(Self {
            re,
            context,
            max_matches: g.max_matches.unwrap_or(DEFAULT_MAX_MATCHES),
        })
    }

    pub(crate) fn run(
        &self,
        reader: impl Read,
        guard: &Guard,
        out: &mut Collector,
    ) -> Result<(), ExtractError> {
        let mut lines = Lines::new(reader, 2);
        let mut before: VecDeque<(usize, String)> = VecDeque::with_capacity(self.context);
        let mut after_left = 0usize;
        let mut last_shown = 0usize;
        let mut matches = 0usize;
        let mut n = 0usize;
        let mut stopped = false;
        let emit = |out: &mut Collector, n: usize, text: &str, is_match: bool, last: &mut usize| {
            if *last > 0 && n > *last + 1 && out.push_separator(b"--") == Flow::Stop {
                return Flow::Stop;
            }
            let (shown, cut) = cap_chars(text, DEFAULT_MAX_CHARS);
            if cut {
                out.note(format!(
                    "line {n} was cut to {DEFAULT_MAX_CHARS} characters"
                ));
            }
            let sep = if is_match { ':' } else { '-' };
            let rendered = format!("{n}{sep}{shown}");
            *last = n;
            out.push(
                rendered.as_bytes(),
                || json!({"line": n, "text": shown, "match": is_match}),
            )
        };
        while let Some((_, line)) = lines.next_line()? {
            if guard.cancelled() {
                return Err(timeout());
            }
            n += 1;
            let text = display_text(line);
            let is_match = self.re.is_match(&text);
            if stopped {
                // Keep counting so the notice can say how many were left out.
                matches += usize::from(is_match);
                if is_match || after_left == 0 {
                    continue;
                }
            }
            if is_match && !stopped {
                matches += 1;
                while let Some((bn, btext)) = before.pop_front() {
                    if bn > last_shown
                        && emit(out, bn, &btext, false, &mut last_shown) == Flow::Stop
                    {
                        return Ok(());
                    }
                }
                if emit(out, n, &text, true, &mut last_shown) == Flow::Stop {
                    return Ok(());
                }
                after_left = self.context;
                if matches == self.max_matches {
                    stopped = true;
                }
            } else if after_left > 0 {
                after_left -= 1;
                if emit(out, n, &text, false, &mut last_shown) == Flow::Stop {
                    return Ok(());
                }
            } else if self.context > 0 {
                if before.len() == self.context {
                    before.pop_front();
                }
                before.push_back((n, text));
            }
        }
        if matches > self.max_matches {
            out.cut(format!(
                "stopped after {} of {matches} matching lines (grep.max_matches); narrow the pattern or raise max_matches",
                self.max_matches
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lro_core::metric::label::ExtractMode;

    fn grep(text: &str, g: Grep) -> crate::ExtractOutput {
        let mut out = Collector::buffer(crate::output::Limits::bytes(1 << 20, 1000));
        let plan = GrepPlan::new(&g).unwrap();
        plan.run(text.as_bytes(), &Guard::unbounded(), &mut out)
            .unwrap();
        out.finish(ExtractMode::Grep, false, |_| None)
    }

    #[test]
    fn grep_with_context_and_separators() {
        let text = "a\nb\nMATCH 1\nc\nd\ne\nf\nmatch 2\ng\n";
        let out = grep(
            text,
            Grep {
                pattern: "match".into(),
                context: Some(1),
                ignore_case: Some(true),
                max_matches: None,
            },
        );
        assert_eq!(out.text, "2-b\n3:MATCH 1\n4-c\n--\n7-f\n8:match 2\n9-g\n");
        assert_eq!(out.count, 6);
        assert_eq!(
            out.values[1],
            json!({"line": 3, "text": "MATCH 1", "match": true})
        );
    }

    #[test]
    fn grep_adjacent_groups_merge_and_max_matches_cuts() {
        let text = "x1\nx2\ny\nx3\n";
        let out = grep(
            text,
            Grep {
                pattern: "x".into(),
                context: Some(1),
                ignore_case: None,
                max_matches: Some(2),
            },
        );
        assert!(
            out.text
                .starts_with("1:x1\n2:x2\n3-y\n# stopped after 2 of 3"),
            "{}",
            out.text
        );
        assert!(out.truncated);
    }

    #[test]
    fn invalid_pattern_is_explained() {
        let e = GrepPlan::new(&Grep {
            pattern: "(".into(),
            ..Grep::default()
        })
        .err()
        .unwrap();
        assert!(e.to_string().contains("escape special characters"));
    }

    #[test]
    fn caps_chars_with_marker() {
        assert_eq!(
            cap_chars("héllo", 2),
            ("hé… [3 more chars]".to_owned(), true)
        );
        assert_eq!(cap_chars("ab", 2), ("ab".to_owned(), false));
    }

    #[test]
    fn module_example() {
        assert_eq!(display_text(br#"{"line":3,"text":"hello"}"#), "hello");
        assert_eq!(display_text(br#"{"id":"m1"}"#), r#"{"id":"m1"}"#);
    }
}

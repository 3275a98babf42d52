//! Example values for recipe parameters, taken from the sample records, so
//! that a recipe run exactly as given prints something.
//!
//! A filter's value is one some sampled records have (so the file has it),
//! and, where a choice is made, one that not every sampled record has: a
//! keyword found in every record (`main` in every path) or in none (the
//! placeholder `keyword`) shows nothing a model could not have guessed.
//! Among the values in at most half the records, the most frequent is taken
//! (ties to the first met, so a keyword comes from the front of the text,
//! a title or a subject, and the choice is stable); when none is that rare,
//! the most frequent that some record lacks. A value longer than
//! `quote::MAX_VALUE_CHARS` is never taken: the descriptor quotes it whole.

use crate::quote::{MAX_VALUE_CHARS, short_value};

/// Shortest word taken for a keyword.
const MIN_WORD_CHARS: usize = 4;
/// Characters after which a value is cut into a prefix candidate.
const SEPARATORS: &[char] = &['/', ':', '-', '.', '_', ' ', '(', '\\'];
/// Prefix candidates per value: its first cuts.
const MAX_CUTS: usize = 8;

/// The most common item short enough to quote; ties go to the
/// alphabetically first.
pub(super) fn most_common<'a>(items: impl Iterator<Item = &'a str>) -> Option<String> {
    crate::frequency::most_frequent(items.filter(|s| short_value(s))).map(|(s, _)| s.to_owned())
}

/// The most common word of four letters or more, lower case.
pub(super) fn common_word<'a>(texts: impl Iterator<Item = &'a str>) -> Option<String> {
    let lowered: Vec<String> = texts.flat_map(words).collect();
    most_common(lowered.iter().map(String::as_str))
}

/// Lower-case words of [`MIN_WORD_CHARS`] letters or more.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| {
            (MIN_WORD_CHARS..=MAX_VALUE_CHARS).contains(&w.chars().count())
                && w.chars().all(char::is_alphabetic)
        })
        .map(str::to_lowercase)
}

/// Lower-case tokens of letters and digits with a digit in them (`2000`,
/// `v2`), for records whose words are all everywhere.
fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| {
            (2..=MAX_VALUE_CHARS).contains(&t.len()) && t.bytes().any(|b| b.is_ascii_digit())
        })
        .map(str::to_ascii_lowercase)
}

/// An example value and the sampled records it selects.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Chosen {
    pub value: String,
    /// Per sampled record, whether the value selects it.
    pub rows: Rows,
}

/// Per sampled record, whether a filter selects it.
pub(super) type Rows = Vec<bool>;

/// The candidate selecting the most records among those selecting at most
/// half of them, else the most that leave some record out; ties go to the
/// first candidate met. A candidate that selects the same records as one
/// in `avoid` is never taken: its recipe would print what another prints.
fn pick(
    candidates: impl IntoIterator<Item = String>,
    selects: impl Fn(&str) -> Rows,
    n: usize,
    avoid: &[&Rows],
) -> Option<Chosen> {
    let mut counted: Vec<(Chosen, usize)> = Vec::new();
    for value in candidates {
        if !counted.iter().any(|(c, _)| c.value == value) {
            let rows = selects(&value);
            let k = rows.iter().filter(|r| **r).count();
            counted.push((Chosen { value, rows }, k));
        }
    }
    let best = |limit: usize| {
        counted
            .iter()
            .filter(|(c, k)| *k >= 1 && *k < n && *k <= limit && !avoid.contains(&&c.rows))
            // The first of the most found: `max_by_key` would take the last.
            .fold(None::<&(Chosen, usize)>, |best, c| match best {
                Some(b) if b.1 >= c.1 => Some(b),
                _ => Some(c),
            })
            .map(|(c, _)| c.clone())
    };
    best(n / 2).or_else(|| best(n))
}

/// A word from `sources` to search `haystacks` with (case-insensitive
/// substring, as `test($keyword; "i")` matches it), found in some but not
/// all of them (see the module docs), and not selecting the same haystacks
/// as any of `avoid`. Words of letters first, then tokens with digits.
pub(super) fn keyword(sources: &[&str], haystacks: &[String], avoid: &[&Rows]) -> Option<Chosen> {
    let lowered: Vec<String> = haystacks.iter().map(|h| h.to_lowercase()).collect();
    let selects = |w: &str| lowered.iter().map(|h| h.contains(w)).collect();
    let n = lowered.len();
    let from_words = sources.iter().flat_map(|s| words(s));
    pick(from_words, selects, n, avoid).or_else(|| {
        let from_tokens = sources.iter().flat_map(|s| tokens(s));
        pick(from_tokens, selects, n, avoid)
    })
}

/// A leading part of `values` to filter with `startswith`, cut after a
/// separator (`src/`, `2025-01-`, `diff `) or a leading punctuation mark
/// (`+`, `#`), that some but not all values start with, and not the same
/// values as any of `avoid`.
pub(super) fn prefix(values: &[&str], avoid: &[&Rows]) -> Option<Chosen> {
    let mut candidates = Vec::new();
    for v in values {
        if let Some(c) = v.chars().next().filter(|c| c.is_ascii_punctuation()) {
            candidates.push(c.to_string());
        }
        let cuts = v
            .char_indices()
            .skip(1)
            .filter(|(_, c)| SEPARATORS.contains(c))
            .take(MAX_CUTS);
        for (i, c) in cuts {
            let p = &v[..i + c.len_utf8()];
            if !p.trim().is_empty() && short_value(p) {
                candidates.push(p.to_owned());
            }
        }
    }
    let selects = |p: &str| values.iter().map(|v| v.starts_with(p)).collect();
    pick(candidates, selects, values.len(), avoid)
}

/// The median of `numbers` (the upper one of an even count), written as jq
/// would read it back.
pub(super) fn median(mut numbers: Vec<f64>) -> Option<String> {
    numbers.sort_by(f64::total_cmp);
    let n = *numbers.get(numbers.len() / 2)?;
    Some(if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    fn value(c: Option<Chosen>) -> Option<String> {
        c.map(|c| c.value)
    }

    #[test]
    fn a_keyword_is_in_some_records_but_not_all() {
        let paths = [
            "/w/main/crates/core/src/lib.rs",
            "/w/main/crates/core/src/file.rs",
            "/w/main/crates/tower/src/lib.rs",
            "/w/main/crates/proxy/tests/child.rs",
        ];
        // `main` and `crates` are everywhere; `core` is in half.
        let core = keyword(&paths, &owned(&paths), &[]).unwrap();
        assert_eq!(core.value, "core");
        assert_eq!(core.rows, [true, true, false, false]);
        // Another word that selects other records: the first met of those in one.
        let other = keyword(&paths, &owned(&paths), &[&core.rows]);
        assert_eq!(value(other).as_deref(), Some("file"));
        // Words everywhere: a token with a digit.
        let joined = ["joined in 2000", "joined in 2001", "joined in 2001"];
        assert_eq!(
            value(keyword(&joined, &owned(&joined), &[])).as_deref(),
            Some("2000")
        );
        // Nothing to choose from.
        assert_eq!(keyword(&["a b"], &owned(&["a b"]), &[]), None);
    }

    #[test]
    fn a_prefix_is_shared_by_some_values_but_not_all() {
        let paths = ["/w/a/x.rs", "/w/a/y.rs", "/w/b/z.rs", "/w/c/z.rs"];
        assert_eq!(value(prefix(&paths, &[])).as_deref(), Some("/w/a/"));
        // Not the records another filter selects.
        let a = vec![true, true, false, false];
        assert_eq!(value(prefix(&paths, &[&a])).as_deref(), Some("/w/a/x."));
        let diff = ["+added", "-removed", "+more", " same", "@@ -1 +1 @@"];
        assert_eq!(value(prefix(&diff, &[])).as_deref(), Some("+"));
        let dates = ["2025-01-01", "2025-01-02", "2025-02-01"];
        assert_eq!(value(prefix(&dates, &[])).as_deref(), Some("2025-02-"));
        assert_eq!(prefix(&["same", "same"], &[]), None);
    }

    #[test]
    fn medians_read_back_as_numbers() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]).as_deref(), Some("2"));
        assert_eq!(median(vec![0.5, 1.5]).as_deref(), Some("1.5"));
        assert_eq!(median(vec![]), None);
    }
}

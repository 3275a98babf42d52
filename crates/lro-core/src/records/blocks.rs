//! Text that repeats one record shape: blocks of `Key: value` lines, each
//! opening with the same key, become one JSON object per block.
//!
//! `mcp-server-git`'s `git_log` answers `Commit: …`, `Author: …`, `Date: …`,
//! `Message: …` per commit, the message running on over several lines (a
//! body, blank lines, `Signed-off-by:` trailers). Split into lines, one
//! commit was ten records and no recipe could say which lines belong
//! together. The shape is taken only where it is unambiguous:
//!
//! - the first `Key: value` line opens every block, and at most one other
//!   line (a heading such as `Commit history:`) comes before the first;
//! - every block's key lines begin with the same keys in the same order
//!   (the fields), at least two of them, with distinct names;
//! - there are at least [`MIN_BLOCKS`] blocks, and the fields' lines are a
//!   fair share of the text (prose with a few `Note:` lines stays lines).
//!
//! Lines that are not the next field's key line continue the field before
//! them, so a message keeps its body and trailers. Trailing whitespace of a
//! value (the blank line between blocks) is not kept.

use std::borrow::Cow;

/// Fewer blocks than this are not taken for a repeated shape.
const MIN_BLOCKS: usize = 3;
/// A block has at least this many fields.
const MIN_FIELDS: usize = 2;
/// Longest key, in bytes (keys are ASCII).
const MAX_KEY_BYTES: usize = 32;
/// Longest heading line before the first block, in characters.
const MAX_HEADING_CHARS: usize = 120;
/// The fields' own lines are at least one in this many non-blank lines.
const MAX_LINES_PER_FIELD_LINE: usize = 8;

/// Records found in a text of repeated blocks.
#[derive(Debug)]
pub(super) struct Blocks {
    /// The key that opens every block, as written (`Commit`).
    pub start: String,
    /// The line before the first block, when there is one.
    pub heading: Option<String>,
    /// One compact JSON object per block.
    pub records: Vec<String>,
}

/// `Key: value` (or `Key:` alone): a key of ASCII letters, digits, spaces,
/// `_` and `-`, starting with a letter. A URL (`http://…`) is not one.
fn key_of(line: &str) -> Option<(&str, &str)> {
    let (key, rest) = line.split_once(':')?;
    let mut chars = key.chars();
    let keyish = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && key.len() <= MAX_KEY_BYTES
        && !key.ends_with(' ')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '_' | '-'));
    let value = if rest.is_empty() {
        rest
    } else {
        rest.strip_prefix(' ')?
    };
    keyish.then_some((key, value))
}

/// The keys of a block's key lines, in order.
fn keys<'t>(block: &[&'t str]) -> Vec<&'t str> {
    block
        .iter()
        .filter_map(|l| key_of(l).map(|(k, _)| k))
        .collect()
}

/// The JSON field name of a key: lower case, `_` for anything else.
fn field_name(key: &str) -> String {
    key.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// The records of `text` when it is a run of blocks (see the module docs).
pub(super) fn parse(text: &str) -> Option<Blocks> {
    let lines: Vec<&str> = text.lines().collect();
    // The opening line has a value: `Commit history:` is a heading.
    let first = lines
        .iter()
        .position(|l| key_of(l).is_some_and(|(_, v)| !v.is_empty()))?;
    let (start, _) = key_of(lines[first])?;
    let heading = match lines[..first]
        .iter()
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .as_slice()
    {
        [] => None,
        [one] if one.chars().count() <= MAX_HEADING_CHARS => Some(one.trim().to_owned()),
        _ => return None,
    };
    let opens = |l: &&str| key_of(l).is_some_and(|(k, _)| k == start);
    // A heading with the opening key would read as a block of its own
    // (`leading_blocks` counts every opening line).
    if lines[..first].iter().any(opens) {
        return None;
    }
    let starts: Vec<usize> = (first..lines.len()).filter(|&i| opens(&lines[i])).collect();
    if starts.len() < MIN_BLOCKS {
        return None;
    }
    let blocks: Vec<&[&str]> = starts
        .iter()
        .zip(starts.iter().skip(1).chain([&lines.len()]))
        .map(|(&from, &to)| &lines[from..to])
        .collect();
    // The fields: the keys every block's key lines begin with.
    let mut fields = keys(blocks[0]);
    for block in &blocks[1..] {
        let common = fields
            .iter()
            .zip(keys(block))
            .take_while(|(a, b)| **a == *b)
            .count();
        fields.truncate(common);
    }
    let names: Vec<String> = fields.iter().map(|k| field_name(k)).collect();
    let distinct = names
        .iter()
        .enumerate()
        .all(|(i, n)| !names[..i].contains(n));
    let nonblank = lines[first..]
        .iter()
        .filter(|l| !l.trim().is_empty())
        .count();
    if fields.len() < MIN_FIELDS
        || !distinct
        || blocks.len() * fields.len() * MAX_LINES_PER_FIELD_LINE < nonblank
    {
        return None;
    }
    let records = blocks
        .iter()
        .map(|block| record(block, &fields, &names))
        .collect();
    Some(Blocks {
        start: start.to_owned(),
        heading,
        records,
    })
}

/// One block as a JSON object: each field's value, continuation lines
/// included, trailing whitespace cut.
fn record(block: &[&str], fields: &[&str], names: &[String]) -> String {
    let mut values: Vec<Cow<'_, str>> = Vec::with_capacity(fields.len());
    for line in block {
        match key_of(line) {
            Some((key, value)) if fields.get(values.len()) == Some(&key) => {
                values.push(Cow::Borrowed(value));
            }
            _ => {
                let last = values
                    .last_mut()
                    .expect("a block opens with its first field");
                let last = last.to_mut();
                last.push('\n');
                last.push_str(line);
            }
        }
    }
    let pairs: Vec<String> = names
        .iter()
        .zip(&values)
        .map(|(name, value)| {
            let value = serde_json::to_string(value.trim_end()).expect("a str serializes");
            format!("\"{name}\":{value}")
        })
        .collect();
    format!("{{{}}}", pairs.join(","))
}

/// The text up to the start of block `kept` (0-based) of blocks opened by
/// `start`: what a truncated result keeps of the text, heading included.
pub fn leading_blocks<'t>(text: &'t str, start: &str, kept: usize) -> &'t str {
    let mut seen = 0;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if key_of(bare).is_some_and(|(k, _)| k == start) {
            if seen == kept {
                return &text[..at];
            }
            seen += 1;
        }
        at += line.len();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// What `mcp-server-git` 2026.10.19's `git_log` answers.
    fn git_log(n: usize) -> String {
        let entries: Vec<String> = (0..n)
            .map(|i| {
                let message = if i % 2 == 0 {
                    format!("fix: bump {i}\n")
                } else {
                    format!(
                        "Subject {i}\n\nBody of {i}.\nhttp://example.org/{i}\n\nSigned-off-by: Dev <d@x.org>\n"
                    )
                };
                format!(
                    "Commit: {i:040x}\nAuthor: Dev {}\nDate: 2025-01-0{} 10:00:00+00:00\nMessage: {message}",
                    i % 3,
                    1 + i % 9
                )
            })
            .collect();
        format!("Commit history:\n{}", entries.join("\n"))
    }

    fn parsed(b: &Blocks) -> Vec<Value> {
        b.records
            .iter()
            .map(|r| serde_json::from_str(r).unwrap())
            .collect()
    }

    #[test]
    fn a_git_log_is_one_record_per_commit_with_its_whole_message() {
        let b = parse(&git_log(5)).unwrap();
        assert_eq!(b.start, "Commit");
        assert_eq!(b.heading.as_deref(), Some("Commit history:"));
        let records = parsed(&b);
        assert_eq!(records.len(), 5);
        assert_eq!(
            records[0],
            json!({"commit": format!("{:040x}", 0), "author": "Dev 0",
                   "date": "2025-01-01 10:00:00+00:00", "message": "fix: bump 0"})
        );
        // The body, its URL and the trailer stay in the message.
        assert_eq!(
            records[1]["message"],
            "Subject 1\n\nBody of 1.\nhttp://example.org/1\n\nSigned-off-by: Dev <d@x.org>"
        );
    }

    #[test]
    fn keys_every_block_shares_are_fields_and_the_rest_continue_the_last() {
        let text = (0..4)
            .map(|i| format!("Name: n{i}\nSize: {i}\nNote: first\nExtra{i}: x\n"))
            .collect::<String>();
        let records = parsed(&parse(&text).unwrap());
        assert_eq!(
            records[2],
            json!({"name": "n2", "size": "2", "note": "first\nExtra2: x"})
        );
    }

    #[test]
    fn ambiguous_texts_are_not_blocks() {
        // Too few blocks.
        assert!(parse("A: 1\nB: 2\nA: 3\nB: 4\n").is_none());
        // One field only.
        assert!(parse("A: 1\nA: 2\nA: 3\n").is_none());
        // Two lines before the first block.
        assert!(parse("title\nsubtitle\nA: 1\nB: 1\nA: 2\nB: 2\nA: 3\nB: 3\n").is_none());
        // A block that lacks a field the others have, before the last one.
        assert!(parse("A: 1\nB: 1\nA: 2\nA: 3\nB: 3\n").is_none());
        // Prose with a few key lines.
        let prose = format!(
            "A: 1\nB: 1\nA: 2\nB: 2\nA: 3\nB: 3\n{}",
            "words words\n".repeat(60)
        );
        assert!(parse(&prose).is_none());
        // Keys that name the same field.
        assert!(parse(&"A-b: 1\nA b: 2\n".repeat(3)).is_none());
        // URLs and indented lines are not keys.
        assert_eq!(key_of("http://x.org"), None);
        assert_eq!(key_of("  A: 1"), None);
        assert_eq!(key_of("A:"), Some(("A", "")));
    }

    #[test]
    fn a_truncated_text_keeps_whole_blocks_and_the_heading() {
        let text = git_log(4);
        let two = leading_blocks(&text, "Commit", 2);
        assert!(two.starts_with("Commit history:\nCommit: "));
        assert_eq!(two.matches("\nCommit: ").count(), 2);
        assert_eq!(leading_blocks(&text, "Commit", 0), "Commit history:\n");
        assert_eq!(leading_blocks(&text, "Commit", 9), text);
    }
}

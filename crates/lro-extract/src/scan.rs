//! A byte scanner for compact JSON record lines.
//!
//! The fast path and projection pushdown read a few top-level fields of a
//! record and leave the rest alone. Parsing the whole line would cost more
//! than the query itself, so these helpers only find where a value starts
//! and ends, tracking strings and nesting, and never build a value. They
//! trust the line to be valid JSON (it was written as such) and answer
//! `None` where a scan cannot go on, so that callers fall back to a full
//! parse rather than guess.
//!
//! `lro_core::records` has a similar scanner behind `top_level_value`, but
//! its value ends include trailing whitespace and it reports unterminated
//! strings differently, so it is not reused here.

use std::ops::Range;

/// Index of the first byte at or after `i` that is not JSON whitespace.
pub(crate) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// Index just past the string starting at `b[i] == '"'`.
pub(crate) fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        let k = memchr::memchr2(b'"', b'\\', b.get(j..)?)? + j;
        if b[k] == b'"' {
            return Some(k + 1);
        }
        // A backslash escapes the next byte, which may itself be a quote.
        j = k + 2;
        if j > b.len() {
            return None;
        }
    }
}

/// Index just past the JSON value starting at `i`.
pub(crate) fn value_end(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    // Brackets inside strings must not count towards nesting.
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let len = b[i..]
                .iter()
                .position(|&c| matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(b.len() - i);
            (len > 0).then_some(i + len)
        }
    }
}

/// Walks the members of the object starting at `b[start] == '{'`, calling
/// `member` with each key's bytes (without quotes) and the range of its raw
/// value, in file order. Returns the index just past the closing brace.
///
/// `None` when `b[start]` is not `{`, the object is malformed, a key has an
/// escape (its bytes would not be its text), or `member` returns `None`.
pub(crate) fn object_members<'a>(
    b: &'a [u8],
    start: usize,
    mut member: impl FnMut(&'a [u8], Range<usize>) -> Option<()>,
) -> Option<usize> {
    if b.get(start) != Some(&b'{') {
        return None;
    }
    let mut i = skip_ws(b, start + 1);
    if b.get(i) == Some(&b'}') {
        return Some(i + 1);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(b, i)?;
        let key = &b[i + 1..key_end - 1];
        if key.contains(&b'\\') {
            return None;
        }
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
        let end = value_end(b, i)?;
        member(key, i..end)?;
        i = skip_ws(b, end);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => return Some(i + 1),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_whitespace() {
        assert_eq!(skip_ws(b" \t\r\n x", 0), 5);
        assert_eq!(skip_ws(b"x ", 0), 0);
        assert_eq!(skip_ws(b"  ", 1), 2);
        assert_eq!(skip_ws(b"", 0), 0);
    }

    #[test]
    fn strings_end_past_escapes() {
        assert_eq!(string_end(br#""abc",1"#, 0), Some(5));
        assert_eq!(string_end(br#""a\"b""#, 0), Some(6));
        assert_eq!(string_end(br#""a\\"x"#, 0), Some(5));
        assert_eq!(string_end(br#""\u0022""#, 0), Some(8));
        assert_eq!(string_end(br#"x"ab""#, 1), Some(5));
        assert_eq!(string_end(br#""abc"#, 0), None);
        assert_eq!(string_end(br#""ab\"#, 0), None);
        assert_eq!(string_end(br#""ab\""#, 0), None);
    }

    #[test]
    fn values_end_after_nesting() {
        let end = |s: &str| value_end(s.as_bytes(), 0);
        assert_eq!(end(r#"{"a":[1,{"b":"}]"}]},2"#), Some(20));
        assert_eq!(end(r#"[[],[[]]] "#), Some(9));
        assert_eq!(end(r#""x\"}",1"#), Some(6));
        assert_eq!(end("-1.5e3,"), Some(6));
        assert_eq!(end("true}"), Some(4));
        assert_eq!(end("null\t"), Some(4));
        assert_eq!(end("7"), Some(1));
        assert_eq!(end(r#"{"a":[1"#), None);
        assert_eq!(end(","), None);
        assert_eq!(end(""), None);
        assert_eq!(value_end(b"1,[2, 3]", 2), Some(8));
    }

    #[test]
    fn walks_object_members() {
        let members = |s: &'static str| {
            let mut seen = Vec::new();
            let end = object_members(s.as_bytes(), skip_ws(s.as_bytes(), 0), |k, span| {
                seen.push((std::str::from_utf8(k).unwrap(), &s[span]));
                Some(())
            });
            // The text left after the object shows where the walk stopped.
            end.map(|e| (seen, &s[e..]))
        };
        assert_eq!(
            members(r#"{"a":1,"b":{"c":"}"},"d":"x\"y"}"#),
            Some((
                vec![("a", "1"), ("b", r#"{"c":"}"}"#), ("d", r#""x\"y""#)],
                ""
            ))
        );
        assert_eq!(
            members(" { \"a\" :\t[1, 2] ,\n\"b\":null } tail"),
            Some((vec![("a", "[1, 2]"), ("b", "null")], " tail"))
        );
        assert_eq!(members("{}"), Some((vec![], "")));
        assert_eq!(members("{ }x"), Some((vec![], "x")));
        assert_eq!(members("[1]"), None);
        assert_eq!(members(r#"{"a\u0062":1}"#), None);
        assert_eq!(members(r#"{"a" 1}"#), None);
        assert_eq!(members(r#"{"a":1 "b":2}"#), None);
        assert_eq!(members(r#"{"a":1,}"#), None);
        assert_eq!(members(r#"{"a":1"#), None);
    }

    #[test]
    fn member_callback_can_stop_the_walk() {
        let mut calls = 0;
        let end = object_members(br#"{"a":1,"b":2}"#, 0, |_, _| {
            calls += 1;
            None
        });
        assert_eq!((end, calls), (None, 1));
    }
}

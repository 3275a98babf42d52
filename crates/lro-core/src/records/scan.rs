//! Reading JSON text without a parser: where a string or a value ends, the
//! members of an object, the text of one top-level field, a string with
//! nothing to unescape, and whitespace removed outside strings.
//!
//! The offload's summaries (`top_level_value`) and `lro-extract`'s fast
//! paths, projection and slurp keys read a few top-level fields of every
//! record line; parsing the whole line would cost several times more than
//! what is asked of it. These functions find where a value starts and ends,
//! tracking strings and nesting, and build no value. They trust the text to
//! be valid JSON (a record is serde_json's text or text serde_json read) and
//! answer `None` wherever a scan cannot go on (a cut text, a key with an
//! escape, bytes out of place), so that the caller falls back to serde_json
//! rather than guess. `tests/scan.rs` holds them to serde_json on generated
//! text, cut at every byte.

use std::{borrow::Cow, ops::Range};

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// Index of the first byte at or after `i` that is not JSON whitespace.
#[inline]
pub fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// Index just past the string starting at `b[i] == '"'`; `None` when it is
/// not closed. Long strings are skipped with memchr.
#[inline]
pub fn string_end(b: &[u8], i: usize) -> Option<usize> {
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

/// Index just past the JSON value starting at `i`: a string, an array or
/// object (to its closing bracket, strings skipped), or a scalar (to the
/// next delimiter). `None` when the text ends first.
#[inline]
pub fn value_end(b: &[u8], i: usize) -> Option<usize> {
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
/// `None` when `b[start]` is not `{`, the object is malformed or cut, a key
/// has an escape (its bytes would not be its text), or `member` returns
/// `None`.
pub fn object_members<'a>(
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

/// The raw JSON text of top-level field `key` of a JSON object record, the
/// last one when the key is repeated (as serde_json and jq read it). One
/// scan of the members ([`object_members`]) finds it; summaries read one or
/// two fields of every record, and a full parse of each would cost several
/// times more. A record the scan cannot read (a key with an escape) is
/// parsed.
pub fn top_level_value<'r>(record: &'r str, key: &str) -> Option<&'r str> {
    let b = record.as_bytes();
    let start = skip_ws(b, 0);
    if b.get(start) != Some(&b'{') {
        return None;
    }
    let mut found = None;
    let end = object_members(b, start, |k, span| {
        if k == key.as_bytes() {
            found = Some(span);
        }
        Some(())
    });
    match end {
        Some(end) if skip_ws(b, end) == b.len() => found.map(|span| &record[span]),
        _ => parsed_field(record, key),
    }
}

/// [`top_level_value`] by serde_json.
fn parsed_field<'r>(record: &'r str, key: &str) -> Option<&'r str> {
    let Members(members) = serde_json::from_str(record).ok()?;
    members
        .into_iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.get())
}

/// An object's members as serde_json reads them, in the order they were
/// written, duplicates kept, values unparsed.
#[derive(Debug)]
pub struct Members<'a>(pub Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Ordered;
        impl<'de> Visitor<'de> for Ordered {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(Ordered)
    }
}

/// The string a JSON value's text spells, when it is a string: one with
/// nothing to unescape is borrowed as it is, without a parser.
pub(super) fn json_string(raw: &str) -> Option<Cow<'_, str>> {
    let plain = raw
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .filter(|inner| !inner.bytes().any(|b| b == b'\\' || b == b'"' || b < 0x20));
    match plain {
        Some(inner) => Some(Cow::Borrowed(inner)),
        None => serde_json::from_str(raw).ok(),
    }
}

/// Removes whitespace outside strings from valid JSON text.
pub fn minify(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in json.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_whitespace() {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_strings_read_as_serde_json_reads_them() {
        for raw in [
            r#""plain""#,
            r#""""#,
            r#""a\"b""#,
            r#""tab\tand\\slash""#,
            r#""\u00e9t\u00e9 \ud83d\ude00""#,
            r#""\ud800""#,
            "\"été 😀\"",
            "\"raw\ttab\"",
            "\"new\nline\"",
            r#""\q""#,
            r#"""#,
            r#""open"#,
            "12",
            "-1.5e3",
            "null",
            r#"["a"]"#,
            r#"{"a":"b"}"#,
        ] {
            let serde = serde_json::from_str::<Cow<'_, str>>(raw).ok();
            assert_eq!(json_string(raw), serde, "{raw}");
        }
    }

    #[test]
    fn top_level_scan_ignores_nested_and_string_lookalikes() {
        let r = r#"{"a":{"namespace":"inner"},"s":"\"namespace\":\"x\"","namespace":"outer","score":0.5,"z":[1,{"score":9}]}"#;
        assert_eq!(top_level_value(r, "namespace"), Some("\"outer\""));
        assert_eq!(top_level_value(r, "score"), Some("0.5"));
        assert_eq!(top_level_value(r, "z"), Some("[1,{\"score\":9}]"));
        assert_eq!(top_level_value(r, "a"), Some("{\"namespace\":\"inner\"}"));
        assert_eq!(top_level_value(r, "missing"), None);
        assert_eq!(top_level_value("[1]", "a"), None);
        assert_eq!(
            top_level_value(r#"{"n": "sp aced" }"#, "n"),
            Some("\"sp aced\"")
        );
    }

    #[test]
    fn minify_keeps_string_whitespace_and_escapes() {
        assert_eq!(minify("{ \"a b\" : \"c\\\" d\" }"), "{\"a b\":\"c\\\" d\"}");
    }

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

//! Reading compact JSON text without a parser: the text of one top-level
//! field (what summaries read from every record), a string with nothing to
//! unescape, and whitespace removed outside strings.

use std::borrow::Cow;

/// The raw JSON text of top-level field `key` of a compact JSON object, found
/// by one scan that tracks nesting and strings without building any value.
/// Summaries read one or two fields of every record; a full parse of each
/// record would cost several times more. Keys with escapes never match.
pub fn top_level_value<'r>(record: &'r str, key: &str) -> Option<&'r str> {
    let bytes = record.as_bytes();
    if bytes.first() != Some(&b'{') {
        return None;
    }
    let mut depth = 0usize;
    let mut i = 0;
    // At depth 1, the string after `{` or `,` is a key.
    let mut expect_key = false;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let start = i + 1;
                i = string_end(bytes, start);
                if depth == 1 && expect_key {
                    expect_key = false;
                    if &record[start..i.min(bytes.len())] == key {
                        // Skip past the colon and any whitespace to the value.
                        let mut v = i + 1;
                        while v < bytes.len()
                            && (bytes[v] == b':' || bytes[v].is_ascii_whitespace())
                        {
                            v += 1;
                        }
                        return value_end(bytes, v).map(|end| &record[v..end]);
                    }
                }
            }
            b'{' | b'[' => {
                depth += 1;
                expect_key = depth == 1 && bytes[i] == b'{';
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' => expect_key = depth == 1,
            _ => {}
        }
        i += 1;
    }
    None
}

/// Index of the closing quote of the string whose content starts at `from`
/// (or the length when unterminated). Long strings are skipped with memchr.
fn string_end(bytes: &[u8], mut from: usize) -> usize {
    while let Some(off) = memchr::memchr2(b'"', b'\\', &bytes[from.min(bytes.len())..]) {
        let at = from + off;
        if bytes[at] == b'"' {
            return at;
        }
        from = at + 2;
    }
    bytes.len()
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

/// End (exclusive) of the JSON value starting at `start`.
fn value_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = start;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i = string_end(bytes, i + 1);
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' if depth == 0 => return Some(i),
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b',' if depth == 0 => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
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
}

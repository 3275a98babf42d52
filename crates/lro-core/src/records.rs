//! Turning a tool result into records, one compact JSON text per line.
//!
//! Order of preference (DESIGN.md, "Records"): an array in structured content
//! (or the one array field of a structured object); a JSON array (or an
//! object with exactly one array field) in a text block; JSONL text; otherwise
//! one `{"line": n, "text": "..."}` record per line of text.
//!
//! ```
//! use lro_core::records::{RecordKind, RecordSet};
//!
//! let set = RecordSet::from_text("[{\"id\":1},\n {\"id\":2}]");
//! assert_eq!(set.kind, RecordKind::JsonArray);
//! assert_eq!(set.records, ["{\"id\":1}", "{\"id\":2}"]);
//!
//! let set = RecordSet::from_text("alpha\nbeta");
//! assert_eq!(set.kind, RecordKind::TextLines);
//! assert_eq!(set.records[1], r#"{"line":2,"text":"beta"}"#);
//! ```

use std::{borrow::Cow, collections::BTreeMap};

use serde_json::{Value, value::RawValue};

/// Where the records came from, which decides how a truncated result is
/// rebuilt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordKind {
    /// A JSON array (at the top level, or in the field named here).
    JsonArray,
    /// The array field `field` of a JSON object.
    ObjectField {
        /// Name of the array field.
        field: String,
    },
    /// One JSON value per line.
    JsonLines,
    /// Plain text, one record per line.
    TextLines,
}

/// Records ready to be written, each a single line of JSON.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RecordSet<'a> {
    /// How the records were found.
    pub kind: RecordKind,
    /// The records, compact JSON, no newlines.
    pub records: Vec<Cow<'a, str>>,
}

impl<'a> RecordSet<'a> {
    /// Where the records of structured content are, when it is an array or
    /// an object with exactly one array field: a cheap check that
    /// serializes nothing.
    pub fn structured_kind(value: &Value) -> Option<RecordKind> {
        match value {
            Value::Array(_) => Some(RecordKind::JsonArray),
            Value::Object(map) => {
                let mut arrays = map.iter().filter(|(_, v)| v.is_array());
                let (field, _) = arrays.next()?;
                arrays.next().is_none().then(|| RecordKind::ObjectField {
                    field: field.clone(),
                })
            }
            _ => None,
        }
    }

    /// Records from structured content, when it is an array or an object
    /// with exactly one array field.
    pub fn from_structured(value: &Value) -> Option<RecordSet<'static>> {
        let kind = Self::structured_kind(value)?;
        let items = match (&kind, value) {
            (RecordKind::ObjectField { field }, _) => value[field.as_str()].as_array(),
            _ => value.as_array(),
        }?;
        let records = items
            .iter()
            .map(|v| Cow::Owned(serde_json::to_string(v).expect("a Value always serializes")))
            .collect();
        Some(RecordSet { kind, records })
    }

    /// Records from a text block. Never fails: plain text becomes line records.
    pub fn from_text(text: &'a str) -> Self {
        let trimmed = text.trim();
        if trimmed.starts_with('[')
            && let Ok(items) = serde_json::from_str::<Vec<&'a RawValue>>(trimmed)
        {
            return RecordSet {
                kind: RecordKind::JsonArray,
                records: items.into_iter().map(compact).collect(),
            };
        }
        if trimmed.starts_with('{') {
            if let Some(set) = Self::object_field(trimmed) {
                return set;
            }
            if let Some(set) = Self::json_lines(trimmed) {
                return set;
            }
        }
        Self::text_lines(text)
    }

    fn object_field(text: &'a str) -> Option<Self> {
        let map: BTreeMap<Cow<'a, str>, &'a RawValue> = serde_json::from_str(text).ok()?;
        let mut arrays = map
            .iter()
            .filter(|(_, v)| v.get().trim_start().starts_with('['));
        let (field, raw) = arrays.next()?;
        if arrays.next().is_some() {
            return None;
        }
        let items: Vec<&'a RawValue> = serde_json::from_str(raw.get()).ok()?;
        Some(RecordSet {
            kind: RecordKind::ObjectField {
                field: field.to_string(),
            },
            records: items.into_iter().map(compact).collect(),
        })
    }

    fn json_lines(text: &'a str) -> Option<Self> {
        let mut records = Vec::new();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let raw: &RawValue = serde_json::from_str(line).ok()?;
            records.push(compact(raw));
        }
        (records.len() >= 2).then_some(RecordSet {
            kind: RecordKind::JsonLines,
            records,
        })
    }

    fn text_lines(text: &str) -> Self {
        let records = text
            .lines()
            .enumerate()
            .map(|(i, line)| {
                let escaped = serde_json::to_string(line).expect("a str always serializes");
                Cow::Owned(format!("{{\"line\":{},\"text\":{escaped}}}", i + 1))
            })
            .collect();
        RecordSet {
            kind: RecordKind::TextLines,
            records,
        }
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Parses up to `n` records from the front, for schema inference.
    pub fn sample(&self, n: usize) -> Vec<Value> {
        self.records
            .iter()
            .take(n)
            .filter_map(|r| serde_json::from_str(r).ok())
            .collect()
    }

    /// Namespaces ranked by frequency (ties by name), at most `k`.
    pub fn top_namespaces(&self, k: usize) -> Vec<String> {
        let mut counts: BTreeMap<Cow<'_, str>, usize> = BTreeMap::new();
        for record in &self.records {
            if let Some(raw) = top_level_value(record, "namespace")
                && let Ok(ns) = serde_json::from_str::<Cow<'_, str>>(raw)
            {
                *counts.entry(ns).or_default() += 1;
            }
        }
        let mut ranked: Vec<(Cow<'_, str>, usize)> = counts.into_iter().collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        ranked
            .into_iter()
            .take(k)
            .map(|(ns, _)| ns.into_owned())
            .collect()
    }

    /// `(min, max)` of a numeric top-level `score` field, when records have one.
    pub fn score_range(&self) -> Option<(f64, f64)> {
        let mut range: Option<(f64, f64)> = None;
        for record in &self.records {
            if let Some(s) =
                top_level_value(record, "score").and_then(|raw| raw.parse::<f64>().ok())
            {
                range = Some(match range {
                    None => (s, s),
                    Some((lo, hi)) => (lo.min(s), hi.max(s)),
                });
            }
        }
        range
    }
}

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

fn compact(raw: &RawValue) -> Cow<'_, str> {
    let text = raw.get();
    if text.contains('\n') {
        Cow::Owned(minify(text))
    } else {
        Cow::Borrowed(text)
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
    fn pretty_array_is_minified_per_record() {
        let text = "[\n  {\n    \"a\": \"x y\",\n    \"b\": [1, 2]\n  },\n  3\n]";
        let set = RecordSet::from_text(text);
        assert_eq!(set.kind, RecordKind::JsonArray);
        assert_eq!(set.records, ["{\"a\":\"x y\",\"b\":[1,2]}", "3"]);
    }

    #[test]
    fn object_with_one_array_field() {
        let set = RecordSet::from_text(r#"{"memories": [{"id": 1}], "next_offset": 5}"#);
        assert_eq!(
            set.kind,
            RecordKind::ObjectField {
                field: "memories".into()
            }
        );
        assert_eq!(set.len(), 1);
        // Two array fields are ambiguous: fall back to lines.
        let set = RecordSet::from_text(r#"{"a": [1], "b": [2]}"#);
        assert_eq!(set.kind, RecordKind::TextLines);
    }

    #[test]
    fn jsonl_text() {
        let set = RecordSet::from_text("{\"a\":1}\n{\"a\":2}\n\n{\"a\":3}\n");
        assert_eq!(set.kind, RecordKind::JsonLines);
        assert_eq!(set.len(), 3);
    }

    #[test]
    fn structured_content() {
        let set = RecordSet::from_structured(
            &serde_json::json!({"items": [{"x": 1}, {"x": 2}], "total": 2}),
        )
        .unwrap();
        assert_eq!(
            set.kind,
            RecordKind::ObjectField {
                field: "items".into()
            }
        );
        assert_eq!(set.records, ["{\"x\":1}", "{\"x\":2}"]);
        assert!(RecordSet::from_structured(&serde_json::json!({"x": 1})).is_none());
        assert!(RecordSet::structured_kind(&serde_json::json!({"a": [1], "b": [2]})).is_none());
        assert_eq!(
            RecordSet::structured_kind(&serde_json::json!([1])),
            Some(RecordKind::JsonArray)
        );
    }

    #[test]
    fn text_lines_escape() {
        let set = RecordSet::from_text("say \"hi\"\ttab");
        assert_eq!(set.records, [r#"{"line":1,"text":"say \"hi\"\ttab"}"#]);
    }

    #[test]
    fn summary_helpers() {
        let set = RecordSet::from_text(
            r#"[{"namespace":"b","score":0.5},{"namespace":"a","score":0.9},{"namespace":"b"},{"x":1}]"#,
        );
        assert_eq!(set.top_namespaces(5), ["b", "a"]);
        assert_eq!(set.top_namespaces(1), ["b"]);
        assert_eq!(set.score_range(), Some((0.5, 0.9)));
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

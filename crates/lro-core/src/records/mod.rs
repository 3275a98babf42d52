//! Turning a tool result into records, one compact JSON text per line.
//!
//! Order of preference (DESIGN.md, "Records"): an array in structured content
//! (or the one array field of a structured object); a JSON array (or an
//! object with exactly one array field) in a text block; an object, in
//! structured content or text, that holds several arrays of objects, the
//! records of every array tagged with its name (`arrays.rs`); JSONL text
//! (every non-blank line one JSON value, the first or most of them
//! objects);
//! text of repeated `Key: value` blocks, one record per block (`blocks.rs`);
//! otherwise one `{"line": n, "text": "..."}` record per line of text, byte
//! for byte (`\r` kept). An
//! array of nodes nesting nodes of their own shape (a directory tree) is
//! flattened to one record per node with its path (`tree.rs`).
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
//! assert_eq!(set.what, "lines of text");
//! ```

mod arrays;
mod blocks;
pub mod scan;
mod tree;

use std::{borrow::Cow, collections::BTreeMap, sync::OnceLock};

use serde_json::{Value, value::RawValue};

pub use arrays::{ARRAY_FIELD, untag};
pub use blocks::leading_blocks;
pub use scan::{minify, top_level_value};

use scan::json_string;

use crate::recipes::SAMPLE_SIZE;

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
    /// Text of repeated `Key: value` blocks, one record per block.
    Blocks {
        /// The key that opens every block, as written (`Commit`).
        start: String,
        /// The one line before the first block (`Commit history:`), which
        /// is no record.
        heading: Option<String>,
    },
    /// A JSON array (or an object's one array field) of nested nodes, one
    /// record per node with its path; the nesting is not kept.
    Tree {
        /// The field that held each node's children.
        children: String,
    },
    /// The array fields of a JSON object, each an array of objects: every
    /// array's records in turn, each tagged with its array's name in
    /// [`ARRAY_FIELD`].
    Arrays {
        /// Each array's name and how many records it gave, in the order
        /// of the records.
        names: Vec<(String, usize)>,
    },
}

/// Records ready to be written, each a single line of JSON.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RecordSet<'a> {
    /// How the records were found.
    pub kind: RecordKind,
    /// The records, compact JSON, no newlines.
    pub records: Vec<Cow<'a, str>>,
    /// What the records are, in the plural ("lines of text", "commits",
    /// "tree entries"), for the summary and the guidance.
    pub what: Cow<'static, str>,
    /// The first [`SAMPLE_SIZE`] records parsed, once: the tree check and
    /// the offload's schema and recipes read the same sample.
    head: OnceLock<Vec<Value>>,
}

/// Two sets are equal when their records are: the parsed sample is only a
/// copy of their front.
impl PartialEq for RecordSet<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.records == other.records && self.what == other.what
    }
}

impl<'a> RecordSet<'a> {
    /// Where the records of structured content are, when it is an array,
    /// an object with exactly one array field, or an object whose array
    /// fields all hold objects: a cheap check that serializes nothing.
    pub fn structured_kind(value: &Value) -> Option<RecordKind> {
        match value {
            Value::Array(_) => Some(RecordKind::JsonArray),
            Value::Object(map) => {
                let mut arrays = map.iter().filter(|(_, v)| v.is_array());
                let (field, _) = arrays.next()?;
                if arrays.next().is_none() {
                    return Some(RecordKind::ObjectField {
                        field: field.clone(),
                    });
                }
                let names = arrays::structured(map)?
                    .into_iter()
                    .map(|(name, items)| (name.clone(), items.len()))
                    .collect();
                Some(RecordKind::Arrays { names })
            }
            _ => None,
        }
    }

    /// Records from structured content, when it is an array, an object with
    /// exactly one array field, or an object whose array fields all hold
    /// objects.
    pub fn from_structured(value: &Value) -> Option<RecordSet<'static>> {
        if let Some(arrays) = value.as_object().and_then(arrays::structured) {
            return Some(RecordSet::of_arrays(arrays::from_structured(&arrays)));
        }
        let kind = Self::structured_kind(value)?;
        let items = match (&kind, value) {
            (RecordKind::ObjectField { field }, _) => value[field.as_str()].as_array(),
            _ => value.as_array(),
        }?;
        let records: Vec<String> = items
            .iter()
            .map(|v| serde_json::to_string(v).expect("a Value always serializes"))
            .collect();
        let sample = &items[..items.len().min(SAMPLE_SIZE)];
        if let Some(set) = Self::tree(sample, records.iter().map(String::as_str)) {
            return Some(set);
        }
        let what = array_what(&kind, records.first().map(String::as_str));
        Some(RecordSet {
            head: OnceLock::new(),
            kind,
            records: records.into_iter().map(Cow::Owned).collect(),
            what,
        })
    }

    /// The nodes of a tree, one record each, when `sample` has the shape
    /// of one (see `tree.rs`).
    fn tree<'i>(
        sample: &[Value],
        items: impl IntoIterator<Item = &'i str>,
    ) -> Option<RecordSet<'static>> {
        let shape = tree::shape(sample)?;
        let records = tree::flatten(items, &shape)?;
        Some(RecordSet {
            head: OnceLock::new(),
            kind: RecordKind::Tree {
                children: shape.children,
            },
            records: records.into_iter().map(Cow::Owned).collect(),
            what: Cow::Borrowed("tree entries"),
        })
    }

    /// Records of JSON texts, as a tree when they are one.
    fn from_items(kind: RecordKind, items: Vec<&'a RawValue>) -> Self {
        let records: Vec<Cow<'a, str>> = items.into_iter().map(compact).collect();
        // A tree nests an array of objects; without one in the sample's text
        // (memories, log entries) nothing is parsed here.
        let head = OnceLock::new();
        if records[..records.len().min(SAMPLE_SIZE)]
            .iter()
            .any(|r| nests_objects(r))
        {
            let sample = head.get_or_init(|| parse_front(&records, SAMPLE_SIZE));
            if let Some(set) = Self::tree(sample, records.iter().map(|r| &**r)) {
                return set;
            }
        }
        let what = array_what(&kind, records.first().map(|r| &**r));
        RecordSet {
            head,
            kind,
            records,
            what,
        }
    }

    /// Records from a text block. Never fails: plain text becomes line records.
    pub fn from_text(text: &'a str) -> Self {
        let trimmed = text.trim();
        if trimmed.starts_with('[')
            && let Ok(items) = serde_json::from_str::<Vec<&'a RawValue>>(trimmed)
        {
            return Self::from_items(RecordKind::JsonArray, items);
        }
        if trimmed.starts_with('{')
            && let Some(set) = Self::object_field(trimmed)
        {
            return set;
        }
        if let Some(set) = Self::json_lines(trimmed) {
            return set;
        }
        if let Some(b) = blocks::parse(text) {
            return RecordSet {
                head: OnceLock::new(),
                what: Cow::Owned(crate::quote::cut(&plural(&b.start.to_lowercase()))),
                kind: RecordKind::Blocks {
                    start: b.start,
                    heading: b.heading,
                },
                records: b.records.into_iter().map(Cow::Owned).collect(),
            };
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
            return arrays::from_text(&map).map(Self::of_arrays);
        }
        let items: Vec<&'a RawValue> = serde_json::from_str(raw.get()).ok()?;
        let kind = RecordKind::ObjectField {
            field: field.to_string(),
        };
        Some(Self::from_items(kind, items))
    }

    fn of_arrays(arrays: arrays::Arrays<'a>) -> Self {
        RecordSet {
            head: OnceLock::new(),
            what: Cow::Owned(arrays::what(&arrays.names)),
            kind: RecordKind::Arrays {
                names: arrays.names,
            },
            records: arrays.records,
        }
    }

    /// JSONL: at least two non-blank lines, each one JSON value, the first
    /// of them an object or more than half of them (a list of numbers or
    /// words stays text). A first line that is not an object does not make
    /// it text: jq reads every line alike.
    fn json_lines(text: &'a str) -> Option<Self> {
        let mut records = Vec::new();
        let mut objects = 0usize;
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let raw: &RawValue = serde_json::from_str(line).ok()?;
            objects += usize::from(raw.get().starts_with('{'));
            records.push(compact(raw));
        }
        let first_object = records.first().is_some_and(|r| r.starts_with('{'));
        let what = Cow::Borrowed(if objects == records.len() {
            "JSON objects"
        } else {
            "JSON values"
        });
        let most = first_object || objects * 2 > records.len();
        (records.len() >= 2 && most).then_some(RecordSet {
            head: OnceLock::new(),
            kind: RecordKind::JsonLines,
            records,
            what,
        })
    }

    /// One record per line, byte for byte, as `jq -R` reads lines: split
    /// at `\n`, a `\r` before it kept, blank lines kept, no record after a
    /// last `\n`.
    fn text_lines(text: &str) -> Self {
        let records = text
            .split_terminator('\n')
            .enumerate()
            .map(|(i, line)| {
                let escaped = serde_json::to_string(line).expect("a str always serializes");
                Cow::Owned(format!("{{\"line\":{},\"text\":{escaped}}}", i + 1))
            })
            .collect();
        RecordSet {
            head: OnceLock::new(),
            kind: RecordKind::TextLines,
            records,
            what: Cow::Borrowed(lines_what(text)),
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
        parse_front(&self.records, n)
    }

    /// The first [`SAMPLE_SIZE`] records parsed ([`RecordSet::sample`]),
    /// parsed once however often they are asked for: on the first call, so
    /// a set whose `records` change after it keeps the sample it had.
    pub fn head(&self) -> &[Value] {
        self.head
            .get_or_init(|| parse_front(&self.records, SAMPLE_SIZE))
    }

    /// Like [`RecordSet::sample`], but records of several arrays
    /// ([`RecordKind::Arrays`]) are taken from the front of each array in
    /// turn, so a description of the records (the line schema) covers every
    /// array, not the first one only.
    pub fn spread_sample(&self, n: usize) -> Vec<Value> {
        let RecordKind::Arrays { names } = &self.kind else {
            return self.sample(n);
        };
        let each = (n / names.len().max(1)).max(1);
        let mut start = 0;
        let mut picked = Vec::new();
        for (_, count) in names {
            picked.extend(self.records[start..start + count].iter().take(each));
            start += count;
        }
        picked
            .into_iter()
            .filter_map(|r| serde_json::from_str(r).ok())
            .collect()
    }

    /// Namespaces ranked by frequency (ties by name), at most `k`.
    pub fn top_namespaces(&self, k: usize) -> Vec<String> {
        let mut counts: BTreeMap<Cow<'_, str>, usize> = BTreeMap::new();
        for record in &self.records {
            if let Some(raw) = top_level_value(record, "namespace")
                && let Some(ns) = json_string(raw)
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

/// Up to `n` of `records` from the front that parse, parsed.
fn parse_front(records: &[Cow<'_, str>], n: usize) -> Vec<Value> {
    records
        .iter()
        .take(n)
        .filter_map(|r| serde_json::from_str(r).ok())
        .collect()
}

/// Whether a JSON text has an array opening with an object (`[{`, or with
/// whitespace between), inside a string or not: a cheap test before a parse.
fn nests_objects(json: &str) -> bool {
    json.match_indices('[')
        .any(|(i, _)| json[i + 1..].trim_start().starts_with('{'))
}

/// What the records of a JSON array are: the array field's name
/// when it has one, else objects or values.
fn array_what(kind: &RecordKind, first: Option<&str>) -> Cow<'static, str> {
    match kind {
        RecordKind::ObjectField { field } if !is_wrapper(field) => Cow::Owned(field_what(field)),
        _ if first.is_some_and(|r| r.starts_with('{')) => Cow::Borrowed("JSON objects"),
        _ => Cow::Borrowed("JSON values"),
    }
}

/// Whether `field` names no kind of thing, only a place (`{"result": […]}`,
/// as the Python SDK wraps a list): its items are then told by their type,
/// not "500 result".
fn is_wrapper(field: &str) -> bool {
    [
        "result", "results", "data", "items", "content", "value", "values", "output", "response",
    ]
    .contains(&field.to_ascii_lowercase().as_str())
}

/// What the items of the array field `field` are: its name as words
/// (`search_results`: "search results"), else `items of "name"`, a long
/// name cut.
fn field_what(field: &str) -> String {
    let words = !field.is_empty() && field.chars().all(|c| c.is_alphabetic() || c == '_');
    if words && crate::quote::short_key(field) {
        field.replace('_', " ")
    } else {
        format!("items of {:?}", crate::quote::cut(field))
    }
}

/// What the lines of a text are: paths (`search_files`), lines of a JSON
/// document that could not be split into records (an object holding
/// arrays of other things than objects), or lines of text.
fn lines_what(text: &str) -> &'static str {
    let trimmed = text.trim();
    let json = (trimmed.starts_with('{') || trimmed.starts_with('['))
        && serde_json::from_str::<serde::de::IgnoredAny>(trimmed).is_ok();
    if json {
        "lines of a JSON document"
    } else if text.lines().count() >= 2 && text.lines().all(|l| l.starts_with('/')) {
        "paths"
    } else {
        "lines of text"
    }
}

/// The English plural of a lower-case noun (`commit`, `entry`, `address`).
fn plural(noun: &str) -> String {
    let consonant_y = noun.len() >= 2
        && noun.ends_with('y')
        && !noun[..noun.len() - 1].ends_with(['a', 'e', 'i', 'o', 'u']);
    if consonant_y {
        format!("{}ies", &noun[..noun.len() - 1])
    } else if noun.ends_with(['s', 'x', 'z']) || noun.ends_with("ch") || noun.ends_with("sh") {
        format!("{noun}es")
    } else {
        format!("{noun}s")
    }
}

/// A record's text on one line: a line break between tokens is taken out
/// (whitespace elsewhere is left), a `\r` too, which some readers take for
/// the end of a line.
fn compact(raw: &RawValue) -> Cow<'_, str> {
    let text = raw.get();
    if memchr::memchr2(b'\n', b'\r', text.as_bytes()).is_some() {
        Cow::Owned(minify(text))
    } else {
        Cow::Borrowed(text)
    }
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
    fn the_head_is_the_sample_parsed_once() {
        let text = serde_json::to_string(
            &(0..40)
                .map(|i| serde_json::json!({"n": i, "kids": [{"n": i}]}))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let set = RecordSet::from_text(&text);
        assert_eq!(set.head(), set.sample(SAMPLE_SIZE));
        assert_eq!(set.head().len(), SAMPLE_SIZE);
        let lines = RecordSet::from_text("a\nb");
        assert_eq!(lines.head(), lines.sample(SAMPLE_SIZE));
        assert_eq!(lines, RecordSet::from_text("a\nb"));
    }

    #[test]
    fn what_the_records_are() {
        let what = |text: &str| RecordSet::from_text(text).what;
        assert_eq!(what("fn main() {}\n}"), "lines of text");
        assert_eq!(what("/a/b.rs\n/a/c.rs"), "paths");
        assert_eq!(
            what("{\n  \"entities\": [1],\n  \"relations\": [2]\n}"),
            "lines of a JSON document"
        );
        assert_eq!(what("[{\"a\":1}]"), "JSON objects");
        assert_eq!(what("[1, 2]"), "JSON values");
        assert_eq!(what(r#"{"search_results": [1]}"#), "search results");
        assert_eq!(what(r#"{"a b": [1]}"#), r#"items of "a b""#);
        // A Python SDK list: no "500 result".
        assert_eq!(what(r#"{"result": [{"a": 1}]}"#), "JSON objects");
        assert_eq!(what(r#"{"result": [1]}"#), "JSON values");
        let long = format!(r#"{{"{}": [1]}}"#, "k".repeat(300));
        assert!(what(&long).len() < 60, "{}", what(&long));
        let structured =
            RecordSet::from_structured(&serde_json::json!({"entities": [{"name": "x"}]})).unwrap();
        assert_eq!(structured.what, "entities");
        let log = "Commit: 1\nAuthor: a\n\nCommit: 2\nAuthor: b\n\nCommit: 3\nAuthor: c\n";
        let set = RecordSet::from_text(log);
        assert_eq!(
            set.kind,
            RecordKind::Blocks {
                start: "Commit".into(),
                heading: None
            }
        );
        assert_eq!(set.what, "commits");
        assert_eq!(set.records[2], r#"{"commit":"3","author":"c"}"#);
    }

    #[test]
    fn only_texts_that_nest_objects_in_arrays_are_parsed_for_a_tree() {
        assert!(nests_objects(r#"{"c":[ {"n":1}]}"#));
        assert!(!nests_objects(r#"{"tags":["a"],"p":{"c":1}}"#));
    }

    #[test]
    fn plurals() {
        for (one, many) in [
            ("commit", "commits"),
            ("entry", "entries"),
            ("day", "days"),
            ("address", "addresses"),
            ("match", "matches"),
        ] {
            assert_eq!(plural(one), many);
        }
    }

    #[test]
    fn a_tree_in_text_or_structured_content_is_flattened() {
        // directory_tree's text: pretty JSON, nested entries.
        let text = "[\n  {\n    \"name\": \"src\",\n    \"type\": \"directory\",\n    \"children\": [\n      {\"name\": \"a.rs\", \"type\": \"file\"}\n    ]\n  }\n]";
        let set = RecordSet::from_text(text);
        assert_eq!(
            set.kind,
            RecordKind::Tree {
                children: "children".into()
            }
        );
        assert_eq!(set.what, "tree entries");
        assert_eq!(
            set.records,
            [
                r#"{"path":"src","name":"src","type":"directory"}"#,
                r#"{"path":"src/a.rs","name":"a.rs","type":"file"}"#
            ]
        );
        let value: Value = serde_json::from_str(text).unwrap();
        let structured = RecordSet::from_structured(&serde_json::json!({ "tree": value })).unwrap();
        assert_eq!(structured.records, set.records);
    }
}

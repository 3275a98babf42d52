//! The worked example of the native guidance: one structured `lro_extract`
//! call built from the result's own fields.
//!
//! The paper's hardest tasks were multi-predicate counts ("how many
//! memories in namespace X have priority Y or above and mention Z?"), and
//! models failed them by not composing the query. So the guidance shows
//! one, made of names and values that exist in the file: a field with a
//! prefix, a numeric comparison, a text search, and `count`. Each condition
//! is chosen among the sample records that met the ones before it, so the
//! count is never zero; a result without such fields gets the conditions
//! its fields allow. Names and values too long to quote are never chosen.
//!
//! ```
//! use lro_core::example::WorkedExample;
//! use serde_json::json;
//!
//! let sample = [
//!     json!({"namespace": "_semantic/a", "priority": 4, "content": "Cache warming notes"}),
//!     json!({"namespace": "_semantic/b", "priority": 2, "content": "cache sizing"}),
//!     json!({"namespace": "_episodic/c", "priority": 5, "content": "incident"}),
//! ];
//! let example = WorkedExample::derive(&sample).unwrap();
//! assert_eq!(
//!     example.call(),
//!     r#"where=[{"field":"namespace","op":"prefix","value":"_semantic"},{"field":"priority","op":"gte","value":4},{"field":"content","op":"contains","value":"cache"}], count=true"#
//! );
//! ```

use serde_json::{Value, json};

use crate::{
    frequency::most_frequent,
    quote::{MAX_VALUE_CHARS, short_key, short_value},
};

/// Characters that split a value into a prefix and the rest, for the
/// prefix condition (`_semantic/decisions`, `src/main.rs`, `db:primary`).
const SEPARATORS: &[char] = &['/', ':', '.', '-'];
/// Text fields shorter than this on average are labels, not text.
const MIN_TEXT_CHARS: usize = 16;
/// Shortest word searched for.
const MIN_WORD_CHARS: usize = 5;

/// One condition of the example.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ExampleCondition {
    /// The top-level field.
    pub field: String,
    /// `prefix`, `gte` or `contains`.
    pub op: &'static str,
    /// The operand, as it stands in the records.
    pub value: Value,
}

/// A structured `lro_extract` example for one result (see the module docs).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct WorkedExample {
    /// The conditions, in the order prefix, comparison, text search; one to
    /// three of them.
    pub conditions: Vec<ExampleCondition>,
}

impl WorkedExample {
    /// The example for records like `sample`; `None` when no top-level
    /// field allows any of the three conditions.
    pub fn derive(sample: &[Value]) -> Option<Self> {
        let mut rows: Vec<&serde_json::Map<String, Value>> =
            sample.iter().filter_map(Value::as_object).collect();
        let mut conditions = Vec::new();
        if let Some((field, prefix)) = prefix_condition(&rows) {
            rows.retain(|r| str_of(r, &field).is_some_and(|s| s.starts_with(prefix.as_str())));
            conditions.push(ExampleCondition {
                field,
                op: "prefix",
                value: Value::String(prefix),
            });
        }
        if let Some((field, at_least)) = numeric_condition(&rows) {
            rows.retain(|r| r.get(&field).and_then(Value::as_f64) >= at_least.as_f64());
            conditions.push(ExampleCondition {
                field,
                op: "gte",
                value: at_least,
            });
        }
        if let Some((field, word)) = text_condition(&rows) {
            conditions.push(ExampleCondition {
                field,
                op: "contains",
                value: Value::String(word),
            });
        }
        (!conditions.is_empty()).then_some(Self { conditions })
    }

    /// The call's arguments besides `file_path`, as the guidance shows them.
    pub fn call(&self) -> String {
        let conds: Vec<Value> = self
            .conditions
            .iter()
            .map(|c| json!({"field": c.field, "op": c.op, "value": c.value}))
            .collect();
        // serde_json writes the keys of a `json!` object in sorted order:
        // field, op, value.
        format!("where={}, count=true", Value::Array(conds))
    }
}

fn str_of<'a>(row: &'a serde_json::Map<String, Value>, field: &str) -> Option<&'a str> {
    row.get(field).and_then(Value::as_str)
}

/// Fields in the order the sample first shows them, with `preferred` first;
/// not those whose names are too long to quote.
fn fields<'a>(rows: &[&'a serde_json::Map<String, Value>], preferred: &str) -> Vec<&'a String> {
    let mut seen: Vec<&String> = Vec::new();
    for row in rows {
        for k in row.keys() {
            if !seen.contains(&k) && short_key(k) {
                seen.push(k);
            }
        }
    }
    seen.sort_by_key(|k| *k != preferred);
    seen
}

/// A string field whose values share a leading segment in some records but
/// not all: the segment most of them share.
fn prefix_condition(rows: &[&serde_json::Map<String, Value>]) -> Option<(String, String)> {
    for field in fields(rows, "namespace") {
        let segments = rows.iter().filter_map(|r| {
            let s = str_of(r, field)?;
            let cut = s
                .char_indices()
                .skip(1)
                .find(|(_, c)| SEPARATORS.contains(c))?
                .0;
            Some(&s[..cut]).filter(|p| short_value(p))
        });
        if let Some((segment, n)) = most_frequent(segments)
            && n >= 2
            && n < rows.len()
        {
            return Some((field.clone(), segment.to_owned()));
        }
    }
    None
}

/// A numeric field with at least two values: the median, so about half the
/// rows pass `gte`.
fn numeric_condition(rows: &[&serde_json::Map<String, Value>]) -> Option<(String, Value)> {
    for field in fields(rows, "priority") {
        let mut values: Vec<&Value> = rows
            .iter()
            .filter_map(|r| r.get(field.as_str()))
            .filter(|v| v.is_number())
            .collect();
        values.sort_by(|a, b| {
            a.as_f64()
                .partial_cmp(&b.as_f64())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        values.dedup();
        if values.len() >= 2 && !is_id(field) {
            return Some((field.clone(), values[values.len() / 2].clone()));
        }
    }
    None
}

/// The longest text field, and the word it holds most often. Text has
/// spaces: a commit hash or a path is no text to search words in.
fn text_condition(rows: &[&serde_json::Map<String, Value>]) -> Option<(String, String)> {
    let mut best: Option<(&String, usize)> = None;
    for field in fields(rows, "content") {
        let texts: Vec<&str> = rows.iter().filter_map(|r| str_of(r, field)).collect();
        if !texts.iter().any(|t| t.contains(' ')) {
            continue;
        }
        let mean = texts.iter().map(|t| t.chars().count()).sum::<usize>() / texts.len();
        if mean >= MIN_TEXT_CHARS && best.is_none_or(|(_, m)| mean > m) {
            best = Some((field, mean));
        }
    }
    let (field, _) = best?;
    let words: Vec<String> = rows
        .iter()
        .filter_map(|r| str_of(r, field))
        .flat_map(|t| t.split(|c: char| !c.is_alphabetic()))
        .filter(|w| (MIN_WORD_CHARS..=MAX_VALUE_CHARS).contains(&w.chars().count()))
        .map(str::to_lowercase)
        .collect();
    let (word, _) = most_frequent(words.iter().map(String::as_str))?;
    Some((field.clone(), word.to_owned()))
}

fn is_id(field: &str) -> bool {
    field == "id" || field.ends_with("_id") || field.ends_with("Id")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_condition_narrows_the_records_that_met_the_last() {
        let sample = [
            json!({"id": 1, "namespace": "_a/x", "priority": 1, "content": "alpha beta gamma delta"}),
            json!({"id": 2, "namespace": "_a/y", "priority": 5, "content": "omega words omega stuff"}),
            json!({"id": 3, "namespace": "_a/z", "priority": 4, "content": "omega again and again"}),
            json!({"id": 4, "namespace": "_b/x", "priority": 9, "content": "alpha alpha alpha alpha"}),
        ];
        let e = WorkedExample::derive(&sample).unwrap();
        let ops: Vec<_> = e
            .conditions
            .iter()
            .map(|c| (c.field.as_str(), c.op))
            .collect();
        assert_eq!(
            ops,
            [
                ("namespace", "prefix"),
                ("priority", "gte"),
                ("content", "contains")
            ]
        );
        assert_eq!(e.conditions[0].value, json!("_a"));
        // Among _a: priorities 1, 4, 5; the median is 4.
        assert_eq!(e.conditions[1].value, json!(4));
        // Among _a with priority >= 4: "omega" (3 times), not "alpha".
        assert_eq!(e.conditions[2].value, json!("omega"));
    }

    #[test]
    fn a_result_without_such_fields_gets_what_its_fields_allow() {
        let lines = [
            json!({"line": 1, "text": "fn main() { println!(\"hello world\"); }"}),
            json!({"line": 2, "text": "fn helper() { println!(\"hello again\"); }"}),
        ];
        let e = WorkedExample::derive(&lines).unwrap();
        let ops: Vec<_> = e.conditions.iter().map(|c| c.op).collect();
        assert_eq!(ops, ["gte", "contains"]);
        // Line 2 only (line >= 2): its words, ties in alphabetical order.
        assert_eq!(e.conditions[1].value, json!("again"));
        assert_eq!(WorkedExample::derive(&[json!(1), json!("x")]), None);
        // A long word without spaces (a hash) is no text to search.
        let commits = [
            json!({"commit": "aedeae0123456789aedeae0123456789", "message": "fix: bump"}),
            json!({"commit": "aedeae9876543210aedeae9876543210", "message": "fix: other"}),
        ];
        assert_eq!(WorkedExample::derive(&commits), None);
    }

    #[test]
    fn long_names_and_words_are_never_quoted() {
        let long = "x".repeat(7000);
        let key = "k".repeat(300);
        let sample: Vec<Value> = (0..4)
            .map(|i| json!({&key: format!("a/{i}"), "n": i, "text": format!("{long} {long} word{i} ")}))
            .collect();
        let call = WorkedExample::derive(&sample).unwrap().call();
        assert!(call.len() < 200, "{call}");
        assert!(!call.contains(&key), "{call}");
    }
}

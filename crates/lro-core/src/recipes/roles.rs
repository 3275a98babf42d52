//! The roles of the fields of sample records, which the derived recipes
//! (`generic.rs`) are made from: scalars to browse, a category (a string
//! field whose values repeat), an identifier and a label, a number, a date,
//! a long text, an array of strings.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::values;
use crate::quote::short_key;

/// Names that make a string field the records' label, in order.
const LABELS: [&str; 9] = [
    "title",
    "name",
    "label",
    "summary",
    "subject",
    "message",
    "text",
    "description",
    "content",
];
/// A category has at most this many distinct values in the sample.
const MAX_CATEGORIES: usize = 20;
/// A text field's values are this long on average, in characters.
const MIN_TEXT_CHARS: usize = 16;
/// An identifier's values are at most this long.
const MAX_ID_CHARS: usize = 80;

/// What the recipes need to know about the records' fields.
#[derive(Debug, Default)]
pub(super) struct Fields {
    /// Scalar fields every sampled record has, in the sample's order.
    pub(super) scalars: Vec<String>,
    /// The string fields among them.
    pub(super) strings: Vec<String>,
    /// A string field whose values repeat, with its most common value.
    pub(super) category: Option<(String, String)>,
    /// A field whose values are all different and short.
    pub(super) id: Option<String>,
    /// The field that names or describes a record.
    pub(super) label: Option<String>,
    /// The prose field with the longest values, when they are long.
    pub(super) text: Option<String>,
    /// A numeric field (not the id) with its median.
    pub(super) number: Option<(String, String)>,
    /// A date-like string field.
    pub(super) date: Option<String>,
    /// An array-of-strings field with its most common element.
    pub(super) string_array: Option<(String, String)>,
}

impl Fields {
    /// The roles of the fields of `rows`, leaving out the field `skip` (the
    /// tag of records of several arrays) and keys too long to quote.
    pub(super) fn collect(rows: &[&Map<String, Value>], skip: Option<&str>) -> Self {
        let mut order: Vec<&String> = Vec::new();
        for row in rows {
            for k in row.keys() {
                if !order.contains(&k) && Some(k.as_str()) != skip && short_key(k) {
                    order.push(k);
                }
            }
        }
        let all = |k: &str, pred: fn(&Value) -> bool| {
            !rows.is_empty() && rows.iter().all(|r| r.get(k).is_some_and(pred))
        };
        let strs = |k: &str| -> Vec<&str> { rows.iter().filter_map(|r| r[k].as_str()).collect() };
        let mut f = Fields::default();
        // Fields whose values are all different: identifier candidates.
        let mut unique: Vec<String> = Vec::new();
        for k in order.iter().map(|k| k.as_str()) {
            if all(k, Value::is_string) {
                f.scalars.push(k.to_owned());
                f.strings.push(k.to_owned());
                let values = strs(k);
                let distinct: BTreeSet<&str> = values.iter().copied().collect();
                let top = values::most_common(values.iter().copied()).filter(|t| !t.is_empty());
                if f.category.is_none()
                    && distinct.len() >= 2
                    && distinct.len() < values.len()
                    && distinct.len() <= MAX_CATEGORIES
                    && let Some(top) = top
                {
                    f.category = Some((k.to_owned(), top));
                }
                if f.date.is_none() && values.iter().all(|v| looks_like_date(v)) {
                    f.date = Some(k.to_owned());
                }
                let short_words = values
                    .iter()
                    .all(|v| v.chars().count() <= MAX_ID_CHARS && !v.contains(char::is_whitespace));
                if distinct.len() == values.len() && short_words {
                    unique.push(k.to_owned());
                }
            } else if all(k, Value::is_number) {
                f.scalars.push(k.to_owned());
                let nums: Vec<f64> = rows.iter().filter_map(|r| r[k].as_f64()).collect();
                let distinct: BTreeSet<u64> = nums.iter().map(|n| n.to_bits()).collect();
                let integral = rows.iter().all(|r| r[k].is_i64() || r[k].is_u64());
                if integral && distinct.len() == nums.len() && is_id_name(k) {
                    unique.push(k.to_owned());
                } else if f.number.is_none()
                    && distinct.len() >= 2
                    && let Some(median) = values::median(nums)
                {
                    f.number = Some((k.to_owned(), median));
                }
            } else if all(k, Value::is_boolean) {
                f.scalars.push(k.to_owned());
            } else if f.string_array.is_none()
                && all(k, |v| {
                    v.as_array().is_some_and(|a| a.iter().all(Value::is_string))
                })
                && let Some(top) = values::most_common(
                    rows.iter()
                        .filter_map(|r| r[k].as_array())
                        .flatten()
                        .filter_map(Value::as_str),
                )
            {
                f.string_array = Some((k.to_owned(), top));
            }
        }
        f.id = unique
            .iter()
            .find(|k| is_id_name(k))
            .or(unique.first())
            .cloned();
        let not_id = |k: &&String| Some(*k) != f.id.as_ref();
        f.label = LABELS
            .iter()
            .find_map(|l| {
                f.strings
                    .iter()
                    .filter(not_id)
                    .find(|k| k.eq_ignore_ascii_case(l))
            })
            .or_else(|| {
                f.strings
                    .iter()
                    .filter(not_id)
                    .find(|k| Some(*k) != f.category.as_ref().map(|c| &c.0))
            })
            .cloned();
        // Prose: words with spaces between them, not an id or a date.
        let prose = |k: &&String| {
            not_id(k)
                && Some(*k) != f.date.as_ref()
                && Some(*k) != f.category.as_ref().map(|c| &c.0)
                && strs(k).iter().any(|v| v.contains(' '))
        };
        f.text = f
            .strings
            .iter()
            .filter(prose)
            .map(|k| {
                let values = strs(k);
                let mean = values.iter().map(|v| v.chars().count()).sum::<usize>() / values.len();
                (k, mean)
            })
            .filter(|(_, mean)| *mean >= MIN_TEXT_CHARS)
            .max_by_key(|(_, mean)| *mean)
            .map(|(k, _)| k.clone());
        f
    }

    /// String fields in the order a prefix is looked for: paths and dates
    /// first, where a leading part means something (a folder, a month).
    pub(super) fn prefix_fields(&self, rows: &[&Map<String, Value>]) -> Vec<&String> {
        let mut fields: Vec<&String> = self.strings.iter().collect();
        let meaningful = |k: &String| {
            Some(k) == self.date.as_ref()
                || rows
                    .iter()
                    .any(|r| r[k.as_str()].as_str().is_some_and(|v| v.contains('/')))
        };
        fields.sort_by_key(|k| !meaningful(k));
        fields
    }
}

/// Names of identifiers; a number is an identifier only by its name.
fn is_id_name(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    ["id", "path", "key", "uuid", "sha", "hash", "commit"].contains(&lower.as_str())
        || lower.ends_with("_id")
        || key.ends_with("Id")
}

fn looks_like_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
}

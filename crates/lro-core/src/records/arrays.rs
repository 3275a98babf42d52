//! An object that holds several arrays of objects becomes the records of
//! every array, each tagged with its array's name in the field
//! [`ARRAY_FIELD`], put first.
//!
//! server-memory's `read_graph` answers `{"entities": [...], "relations":
//! [...]}`. With one array field that array would be the records; with two
//! the result stayed pretty-printed JSON, one record per line of text
//! (20,506 of them for 2,000 entities), and `where entityType eq person`
//! found nothing. As records of both arrays, an entity is one line again
//! and a filter, a recipe or the count sees it; the tag keeps apart what
//! the arrays kept apart (`select(.array == "relations")`,
//! `where array eq relations`), so nothing of the result is lost but its
//! other fields (totals, cursors).
//!
//! The shape is taken only where it is unambiguous:
//!
//! - a JSON object with at least two array fields, every one an array of
//!   objects (an empty array counts, and adds no records), holding at least
//!   one record in all;
//! - no object already has a field named [`ARRAY_FIELD`] (a key written
//!   with escapes is not seen; the record would then hold it twice).
//!
//! Arrays are taken in the order of their names, whichever order the tool
//! wrote them in, so text and structured content give the same records.
//! Each array's items are kept as they are (a tree in one is not
//! flattened).

use std::{borrow::Cow, collections::BTreeMap};

use serde_json::{Map, Value, value::RawValue};

pub use crate::fields::ARRAY_FIELD;

use super::{compact, field_what, top_level_value};

/// The arrays and their records, in order.
pub(super) struct Arrays<'a> {
    /// Each array's name and how many records it gave.
    pub names: Vec<(String, usize)>,
    pub records: Vec<Cow<'a, str>>,
}

/// The records of the array fields of `map` (values unparsed), when it has
/// the shape (see the module docs).
pub(super) fn from_text<'a>(map: &BTreeMap<Cow<'a, str>, &'a RawValue>) -> Option<Arrays<'a>> {
    let arrays: Vec<(&Cow<'a, str>, &&'a RawValue)> = map
        .iter()
        .filter(|(_, v)| v.get().trim_start().starts_with('['))
        .collect();
    if arrays.len() < 2 {
        return None;
    }
    let mut out = Arrays {
        names: Vec::with_capacity(arrays.len()),
        records: Vec::new(),
    };
    for (name, raw) in arrays {
        let items: Vec<&'a RawValue> = serde_json::from_str(raw.get()).ok()?;
        let tag = tag(name);
        for item in &items {
            let text = compact(item);
            if !text.starts_with('{') || top_level_value(&text, ARRAY_FIELD).is_some() {
                return None;
            }
            out.records.push(Cow::Owned(tagged(&tag, &text)));
        }
        out.names.push((name.to_string(), items.len()));
    }
    (!out.records.is_empty()).then_some(out)
}

/// The array fields of a structured object, when it has the shape: their
/// names and items, in name order. Serializes nothing.
pub(super) fn structured(map: &Map<String, Value>) -> Option<Vec<(&String, &Vec<Value>)>> {
    let mut arrays: Vec<(&String, &Vec<Value>)> = map
        .iter()
        .filter_map(|(k, v)| Some((k, v.as_array()?)))
        .collect();
    arrays.sort_by(|a, b| a.0.cmp(b.0));
    let objects = arrays.iter().flat_map(|(_, items)| items.iter());
    let fits = arrays.len() >= 2
        && arrays.iter().any(|(_, items)| !items.is_empty())
        && objects
            .map(Value::as_object)
            .all(|o| o.is_some_and(|o| !o.contains_key(ARRAY_FIELD)));
    fits.then_some(arrays)
}

/// The records of a structured object's arrays (from [`structured`]).
pub(super) fn from_structured(arrays: &[(&String, &Vec<Value>)]) -> Arrays<'static> {
    let mut out = Arrays {
        names: Vec::with_capacity(arrays.len()),
        records: Vec::new(),
    };
    for (name, items) in arrays {
        let tag = tag(name);
        for item in *items {
            let text = serde_json::to_string(item).expect("a Value always serializes");
            out.records.push(Cow::Owned(tagged(&tag, &text)));
        }
        out.names.push(((*name).clone(), items.len()));
    }
    out
}

/// What the records are: the arrays' names, "entities and relations".
pub(super) fn what(names: &[(String, usize)]) -> String {
    let words: Vec<String> = names.iter().map(|(n, _)| field_what(n)).collect();
    match words.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// `"array":"name"` as the record's first field.
fn tag(name: &str) -> String {
    let value = serde_json::to_string(name).expect("a str always serializes");
    format!("\"{ARRAY_FIELD}\":{value}")
}

/// The object `text` (compact JSON) with `tag` put first.
fn tagged(tag: &str, text: &str) -> String {
    let rest = &text[1..];
    if rest.trim_start().starts_with('}') {
        format!("{{{tag}}}")
    } else {
        format!("{{{tag},{rest}")
    }
}

/// `records` (the front of a set's records) grouped back into their
/// arrays, in the set's order of `names`, without the tag: what a
/// truncated result keeps of each array.
pub fn untag<'r>(
    names: &[(String, usize)],
    records: impl IntoIterator<Item = &'r str>,
) -> Vec<(String, Vec<Value>)> {
    let mut arrays: Vec<(String, Vec<Value>)> =
        names.iter().map(|(n, _)| (n.clone(), Vec::new())).collect();
    for record in records {
        let Ok(Value::Object(mut map)) = serde_json::from_str::<Value>(record) else {
            continue;
        };
        let Some(Value::String(name)) = map.remove(ARRAY_FIELD) else {
            continue;
        };
        if let Some((_, items)) = arrays.iter_mut().find(|(n, _)| *n == name) {
            items.push(Value::Object(map));
        }
    }
    arrays
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::records::{RecordKind, RecordSet};

    /// Pretty-printed, as server-memory writes it, relations first.
    const GRAPH: &str = r#"{
  "relations": [
    {
      "from": "a", "to": "b", "relationType": "knows"
    }
  ],
  "entities": [
    {
      "name": "a", "entityType": "person", "observations": ["x y"]
    },
    {
    }
  ],
  "total": 3
}"#;

    fn kind(names: &[(&str, usize)]) -> RecordKind {
        RecordKind::Arrays {
            names: names.iter().map(|(n, c)| ((*n).to_owned(), *c)).collect(),
        }
    }

    #[test]
    fn each_array_in_name_order_tagged_first() {
        let set = RecordSet::from_text(GRAPH);
        assert_eq!(set.kind, kind(&[("entities", 2), ("relations", 1)]));
        assert_eq!(
            set.records,
            [
                r#"{"array":"entities","name":"a","entityType":"person","observations":["x y"]}"#,
                r#"{"array":"entities"}"#,
                r#"{"array":"relations","from":"a","to":"b","relationType":"knows"}"#,
            ]
        );
        assert_eq!(set.what, "entities and relations");
        // The same records from structured content (whose objects' keys
        // serde_json keeps in its own order), the tag first there too.
        let value: Value = serde_json::from_str(GRAPH).unwrap();
        assert_eq!(RecordSet::structured_kind(&value), Some(set.kind.clone()));
        let structured = RecordSet::from_structured(&value).unwrap();
        let parsed = |s: &RecordSet<'_>| s.sample(usize::MAX);
        assert_eq!(parsed(&structured), parsed(&set));
        assert!(structured.records[2].starts_with(r#"{"array":"relations","#));
        assert_eq!(structured.what, set.what);
    }

    #[test]
    fn other_shapes_are_not_taken() {
        for text in [
            // An array of something else than objects.
            r#"{"entities": [{"name": "a"}], "tags": ["x"]}"#,
            // A record that has the tag's name already.
            r#"{"a": [{"array": 1}], "b": [{"n": 2}]}"#,
            // Nothing to write.
            r#"{"a": [], "b": []}"#,
        ] {
            let set = RecordSet::from_text(text);
            assert_eq!(set.kind, RecordKind::TextLines, "{text}");
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(RecordSet::structured_kind(&value), None, "{text}");
        }
        // One array field stays that field's records.
        let one = json!({"entities": [{"name": "a"}], "total": 1});
        assert_eq!(
            RecordSet::structured_kind(&one),
            Some(RecordKind::ObjectField {
                field: "entities".into()
            })
        );
    }

    #[test]
    fn names_read_as_a_list() {
        let names = |n: &[&str]| -> Vec<(String, usize)> {
            n.iter().map(|n| ((*n).to_owned(), 1)).collect()
        };
        assert_eq!(
            what(&names(&["a_b", "c", "d e"])),
            r#"a b, c and items of "d e""#
        );
        assert_eq!(what(&names(&["nodes"])), "nodes");
    }

    #[test]
    fn untagged_back_into_their_arrays() {
        let set = RecordSet::from_text(GRAPH);
        let RecordKind::Arrays { names } = &set.kind else {
            panic!("{:?}", set.kind)
        };
        let kept = untag(names, set.records[..2].iter().map(|r| &**r));
        assert_eq!(
            kept,
            [
                (
                    "entities".to_owned(),
                    vec![
                        json!({"name": "a", "entityType": "person", "observations": ["x y"]}),
                        json!({})
                    ]
                ),
                ("relations".to_owned(), vec![])
            ]
        );
    }
}

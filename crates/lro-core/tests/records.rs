//! The offload's record split on generated results: a JSON array becomes
//! its elements, each exactly as written (duplicate keys, escapes and
//! number spellings intact) on one line; JSON lines (the first or most of
//! them objects) become what jq 1.6 reads of each line; `Key: value` blocks,
//! trees and several arrays keep their rules; any other text becomes one
//! record per line, byte for byte. Nothing is lost or reordered.

#[path = "support/json.rs"]
mod json;

use json::Json;
use lro_core::records::{ARRAY_FIELD, RecordKind, RecordSet};
use proptest::prelude::*;
use serde_json::{Value, json as value};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 32,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// What a record of an element written as `text` must be: the text itself
/// when it is on one line, else its compact text.
fn one_line(text: &str, item: &Json) -> String {
    if text.contains(['\n', '\r']) {
        item.compact()
    } else {
        text.to_owned()
    }
}

/// What jq 1.6 prints of `text` with `jq -c .`, and whether it exits 0.
fn jq_values(text: &str) -> (String, bool) {
    use std::io::{Seek, Write};

    // From a file: pipes both ways could both fill.
    let mut input = tempfile::tempfile().unwrap();
    input.write_all(text.as_bytes()).unwrap();
    input.rewind().unwrap();
    let out = std::process::Command::new("jq")
        .arg("-c")
        .arg(".")
        .stdin(input)
        .stderr(std::process::Stdio::null())
        .output()
        .expect("jq 1.6");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.success(),
    )
}

#[test]
fn the_jq_here_is_1_6() {
    let out = std::process::Command::new("jq")
        .arg("--version")
        .output()
        .expect("jq 1.6");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "jq-1.6");
}

#[test]
fn json_lines_whose_first_line_is_no_object() {
    // The checker's case: a scalar first, objects after it.
    let text = "false\n{\"id\":0}\n{\"id\":1}\n[2]\n{\"id\":3}\n";
    let set = RecordSet::from_text(text);
    assert_eq!(set.kind, RecordKind::JsonLines);
    assert_eq!(
        set.records,
        ["false", "{\"id\":0}", "{\"id\":1}", "[2]", "{\"id\":3}"]
    );
    assert_eq!(set.what, "JSON values");
    // A list of numbers or words stays text.
    assert_eq!(
        RecordSet::from_text("1\n2\n3\n").kind,
        RecordKind::TextLines
    );
    assert_eq!(
        RecordSet::from_text("\"a\"\n{}\n\"b\"\n").kind,
        RecordKind::TextLines
    );
}

/// Every record is one line of JSON.
fn assert_lines(set: &RecordSet<'_>) -> Result<(), TestCaseError> {
    for r in &set.records {
        prop_assert!(!r.contains(['\n', '\r']), "{}", r);
        prop_assert!(
            serde_json::from_str::<&serde_json::value::RawValue>(r).is_ok(),
            "{}",
            r
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_json_array_becomes_its_elements_as_written(
        items in prop::collection::vec((json::value(), any::<u64>()), 0..8),
        sep in prop::sample::select(vec![",", ", ", ",\n  ", "\r\n,\t"]),
        pad in prop::sample::select(vec!["", " ", "\n", "\r\n\t"]),
    ) {
        let texts: Vec<String> = items.iter().map(|(item, ws)| item.render(*ws)).collect();
        let text = format!("{pad}[{pad}{}{pad}]{pad}", texts.join(sep));
        let set = RecordSet::from_text(&text);
        // A tree is flattened by its own rule (tests below).
        prop_assume!(!matches!(set.kind, RecordKind::Tree { .. }));
        prop_assert_eq!(&set.kind, &RecordKind::JsonArray);
        let expected: Vec<String> = texts
            .iter()
            .zip(&items)
            .map(|(text, (item, _))| one_line(text, item))
            .collect();
        prop_assert_eq!(&set.records, &expected);
        assert_lines(&set)?;
    }

    #[test]
    fn json_lines_become_their_values_as_written(
        objects in prop::collection::vec((json::object(), any::<u64>()), 2..5),
        end in prop::sample::select(vec!["\n", "\r\n", "\n\n"]),
    ) {
        let texts: Vec<String> = objects
            .iter()
            .map(|(o, ws)| {
                let text = o.render(*ws);
                if text.contains('\n') { o.compact() } else { text }
            })
            .collect();
        let text = texts.iter().map(|t| format!("{t}{end}")).collect::<String>();
        let set = RecordSet::from_text(&text);
        prop_assert_eq!(&set.kind, &RecordKind::JsonLines);
        let expected: Vec<String> = texts
            .iter()
            .zip(&objects)
            .map(|(text, (o, _))| one_line(text, o))
            .collect();
        prop_assert_eq!(&set.records, &expected);
        assert_lines(&set)?;
    }

    #[test]
    fn json_lines_of_any_values_read_as_jq_reads_each_line(
        lines in prop::collection::vec(
            (prop_oneof![3 => json::object(), 1 => json::value()], any::<u64>()),
            2..7,
        ),
        end in prop::sample::select(vec!["\n", "\r\n", "\n\n"]),
    ) {
        let texts: Vec<String> = lines
            .iter()
            .map(|(v, ws)| {
                let text = v.render(*ws);
                if text.contains(['\n', '\r']) { v.compact() } else { text }
            })
            .collect();
        let text = texts.iter().map(|t| format!("{t}{end}")).collect::<String>();
        let set = RecordSet::from_text(&text);
        // The rule: every line one value, the first of them an object or
        // more than half of them.
        let objects = lines.iter().filter(|(v, _)| matches!(v, Json::Object(_))).count();
        let first = matches!(lines[0].0, Json::Object(_));
        let jsonl = first || 2 * objects > lines.len();
        prop_assert_eq!(set.kind == RecordKind::JsonLines, jsonl, "{}", text);
        if jsonl {
            prop_assert_eq!(&set.records, &texts);
            assert_lines(&set)?;
            // jq reads the records as it reads the lines.
            let records = set.records.join("\n");
            prop_assert_eq!(jq_values(&records), jq_values(&text));
        }
    }

    #[test]
    fn text_no_rule_takes_becomes_its_lines_byte_for_byte(text in json::text()) {
        let set = RecordSet::from_text(&text);
        let plain = !text.contains(':')
            && !text.lines().any(|l| l.trim_start().starts_with(['[', '{']));
        if plain {
            prop_assert_eq!(&set.kind, &RecordKind::TextLines);
        }
        if set.kind == RecordKind::TextLines {
            // As `jq -R` reads lines: split at `\n`, `\r` kept.
            let lines: Vec<&str> = text.split_terminator('\n').collect();
            prop_assert_eq!(set.len(), lines.len());
            for (i, (record, line)) in set.records.iter().zip(&lines).enumerate() {
                let v: Value = serde_json::from_str(record).unwrap();
                prop_assert_eq!(v, value!({"line": i + 1, "text": line}));
            }
            assert_lines(&set)?;
        }
    }

    #[test]
    fn key_value_blocks_become_one_record_each(
        keys in prop::sample::subsequence(vec!["Commit", "Author", "Date", "Message", "Files"], 2..5),
        values in prop::collection::vec(prop::collection::vec("[^\n\r:\\s]([^\n\r]{0,30}[^\n\r\\s])?", 5), 3..12),
        eol in prop::sample::select(vec!["\n", "\r\n"]),
        blank in any::<bool>(),
    ) {
        let text: String = values
            .iter()
            .map(|vs| {
                let lines: Vec<String> = keys.iter().zip(vs).map(|(k, v)| format!("{k}: {v}")).collect();
                format!("{}{eol}{}", lines.join(eol), if blank { eol } else { "" })
            })
            .collect();
        let set = RecordSet::from_text(&text);
        prop_assert!(matches!(set.kind, RecordKind::Blocks { .. }), "{:?}", set.kind);
        prop_assert_eq!(set.len(), values.len());
        for (record, vs) in set.records.iter().zip(&values) {
            let expected: serde_json::Map<String, Value> = keys
                .iter()
                .zip(vs)
                .map(|(k, v)| (k.to_lowercase(), Value::String(v.clone())))
                .collect();
            let got: serde_json::Map<String, Value> = serde_json::from_str(record).unwrap();
            prop_assert_eq!(got, expected);
        }
    }

    #[test]
    fn a_tree_becomes_one_record_per_node_in_order(
        tree in tree(),
        ws in any::<u64>(),
    ) {
        let mut paths = Vec::new();
        for node in &tree {
            node_paths(node, "", &mut paths);
        }
        let text = Json::Array(tree.clone()).render(ws);
        let set = RecordSet::from_text(&text);
        prop_assert_eq!(&set.kind, &RecordKind::Tree { children: "children".into() });
        let got: Vec<String> = set
            .records
            .iter()
            .map(|r| serde_json::from_str::<Value>(r).unwrap()["path"].as_str().unwrap().to_owned())
            .collect();
        prop_assert_eq!(got, paths);
        assert_lines(&set)?;
    }

    #[test]
    fn several_arrays_become_their_records_tagged(
        arrays in prop::collection::btree_map("[a-m]{1,8}", prop::collection::vec(plain_object(), 0..6), 2..5),
        ws in any::<u64>(),
    ) {
        prop_assume!(arrays.values().any(|a| !a.is_empty()));
        let mut members: Vec<(String, Json)> = arrays
            .iter()
            .rev()
            .map(|(name, items)| (format!("\"{name}\""), Json::Array(items.clone())))
            .collect();
        members.push(("\"total\"".into(), Json::Scalar("3".into())));
        let text = Json::Object(members).render(ws);
        let set = RecordSet::from_text(&text);
        prop_assert!(matches!(set.kind, RecordKind::Arrays { .. }), "{:?}", set.kind);
        // In the order of the arrays' names, each record its item tagged.
        let expected: Vec<(String, String)> = arrays
            .iter()
            .flat_map(|(name, items)| items.iter().map(move |i| (name.clone(), i.compact())))
            .collect();
        prop_assert_eq!(set.len(), expected.len());
        for (record, (name, item)) in set.records.iter().zip(&expected) {
            let mut got: serde_json::Map<String, Value> = serde_json::from_str(record).unwrap();
            prop_assert_eq!(got.remove(ARRAY_FIELD), Some(Value::String(name.clone())));
            let item: serde_json::Map<String, Value> = serde_json::from_str(item).unwrap();
            prop_assert_eq!(got, item);
        }
        assert_lines(&set)?;
    }
}

/// An object of plain members, none named like the tag.
fn plain_object() -> impl Strategy<Value = Json> {
    let scalar = prop_oneof!["-?(0|[1-9][0-9]{0,4})(\\.[0-9]{1,3})?", "\"[a-z ]{0,8}\""]
        .prop_map(Json::Scalar);
    prop::collection::btree_map("[b-z]{1,6}", scalar, 0..5).prop_map(|members| {
        Json::Object(
            members
                .into_iter()
                .map(|(k, v)| (format!("\"{k}\""), v))
                .collect(),
        )
    })
}

/// Top-level nodes of a directory tree: a name, a type, children.
fn tree() -> impl Strategy<Value = Vec<Json>> {
    let leaf = "[a-z]{1,6}(\\.rs)?".prop_map(|name| node(&name, "file", None));
    let nodes = leaf.prop_recursive(4, 40, 5, |inner| {
        ("[a-z]{1,6}", prop::collection::vec(inner, 0..5))
            .prop_map(|(name, kids)| node(&name, "directory", Some(kids)))
    });
    // At least one directory with a child, so the sample shows the shape.
    (
        prop::collection::vec(nodes, 0..4),
        "[a-z]{1,6}",
        "[a-z]{1,6}",
    )
        .prop_map(|(mut nodes, d, f)| {
            nodes.insert(0, node(&d, "directory", Some(vec![node(&f, "file", None)])));
            nodes
        })
}

fn node(name: &str, kind: &str, children: Option<Vec<Json>>) -> Json {
    let mut members = vec![
        ("\"name\"".to_owned(), Json::Scalar(format!("\"{name}\""))),
        ("\"type\"".to_owned(), Json::Scalar(format!("\"{kind}\""))),
    ];
    if let Some(kids) = children {
        members.push(("\"children\"".to_owned(), Json::Array(kids)));
    }
    Json::Object(members)
}

/// The paths of `node` and its descendants, in order.
fn node_paths(node: &Json, parent: &str, out: &mut Vec<String>) {
    let Json::Object(members) = node else {
        return;
    };
    let name = members
        .iter()
        .find(|(k, _)| k == "\"name\"")
        .and_then(|(_, v)| match v {
            Json::Scalar(s) => Some(s.trim_matches('"').to_owned()),
            _ => None,
        })
        .unwrap_or_default();
    let path = if parent.is_empty() {
        name
    } else {
        format!("{parent}/{name}")
    };
    out.push(path.clone());
    for (k, v) in members {
        if let (true, Json::Array(kids)) = (k == "\"children\"", v) {
            for kid in kids {
                node_paths(kid, &path, out);
            }
        }
    }
}

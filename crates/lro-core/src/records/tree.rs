//! A JSON array of nodes that nest nodes of their own shape (a directory
//! tree: `name`, `type`, and `children` holding more of the same) becomes
//! one record per node, with its `path` from the root.
//!
//! `directory_tree` answers a handful of top-level nodes; kept as they
//! were, its hundreds of nested entries sat inside one record's `children`
//! and no recipe, filter or count could reach them. A recursive walk
//! (`..`) in one recipe would have reached them there, but nothing else
//! would: the count, the structured `where` form and every other recipe
//! see top-level records only. So the tree is flattened: a node's record is
//! its own fields in their order, its children left out (they follow as
//! records of their own), and `path` first (its name joined to its
//! parents' with `/`), unless the nodes carry a `path` already.
//!
//! It is a tree when, in the sample, one field holds arrays of objects, one
//! of them not empty, whose keys are all keys the top-level nodes have, and
//! every node has a name: a string field named like one ([`NAME_KEYS`]).
//! Arrays of other things (an order's `items`) are left as they are.

use std::collections::BTreeSet;

use serde_json::{Map, Value, value::RawValue};

use super::scan::Members;

/// Fields that name a node, in order of preference.
const NAME_KEYS: [&str; 6] = ["path", "name", "title", "label", "id", "key"];
/// The added field, or the nodes' own when they have it.
const PATH: &str = "path";

/// The field that holds a node's children, and the field that names it.
#[derive(Debug, PartialEq)]
pub(super) struct Shape {
    pub children: String,
    pub name: &'static str,
}

/// The tree shape of records like `sample`, if they have one.
pub(super) fn shape(sample: &[Value]) -> Option<Shape> {
    let tops: Vec<&Map<String, Value>> =
        sample.iter().map(Value::as_object).collect::<Option<_>>()?;
    let top_keys = |k: &String| tops.iter().any(|o| o.contains_key(k));
    // Each field is judged once: every record repeats the same ones.
    let mut judged = BTreeSet::new();
    let children = tops
        .iter()
        .flat_map(|o| o.iter())
        .filter(|(_, v)| v.as_array().is_some_and(|a| !a.is_empty()))
        .map(|(k, _)| k)
        .filter(|k| judged.insert(k.as_str()))
        .find(|k| {
            tops.iter().filter_map(|o| o.get(*k)).all(|v| {
                v.as_array().is_some_and(|a| {
                    a.iter()
                        .all(|c| c.as_object().is_some_and(|c| c.keys().all(top_keys)))
                })
            })
        })?
        .clone();
    let kids: Vec<&Map<String, Value>> = tops
        .iter()
        .filter_map(|o| o.get(&children)?.as_array())
        .flatten()
        .filter_map(Value::as_object)
        .collect();
    let name = NAME_KEYS.into_iter().find(|k| {
        tops.iter()
            .chain(&kids)
            .all(|o| o.get(*k).is_some_and(Value::is_string))
    })?;
    Some(Shape { children, name })
}

/// Every node of `items` (top-level nodes, compact JSON, so their values
/// are written as they are) as a record, in
/// document order (a node, then its children); `None` when a node does not
/// fit the shape (not an object, no name, children that are not an array).
pub(super) fn flatten<'a>(
    items: impl IntoIterator<Item = &'a str>,
    shape: &Shape,
) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for item in items {
        node(item, None, shape, &mut out)?;
    }
    Some(out)
}

fn node(raw: &str, parent: Option<&str>, shape: &Shape, out: &mut Vec<String>) -> Option<()> {
    let Members(entries) = serde_json::from_str(raw).ok()?;
    let name: String = entries
        .iter()
        .find(|(k, _)| k == shape.name)
        .and_then(|(_, v)| serde_json::from_str(v.get()).ok())?;
    let path = match parent {
        Some(p) => format!("{p}/{name}"),
        None => name,
    };
    let own_path = shape.name == PATH;
    if !own_path && entries.iter().any(|(k, _)| k == PATH) {
        return None;
    }
    let mut fields: Vec<String> = Vec::with_capacity(entries.len() + 1);
    if !own_path {
        fields.push(format!("\"{PATH}\":{}", serde_json::to_string(&path).ok()?));
    }
    let mut kids: Vec<&RawValue> = Vec::new();
    for (k, v) in &entries {
        if *k == shape.children {
            kids = serde_json::from_str(v.get()).ok()?;
        } else {
            let key = serde_json::to_string(k).ok()?;
            fields.push(format!("{key}:{}", v.get()));
        }
    }
    out.push(format!("{{{}}}", fields.join(",")));
    let base = if own_path { None } else { Some(path.as_str()) };
    for kid in kids {
        node(kid.get(), base, shape, out)?;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tree() -> Vec<Value> {
        vec![
            json!({"name": "src", "type": "directory", "children": [
                {"name": "lib.rs", "type": "file"},
                {"name": "sub", "type": "directory", "children": [{"name": "a.rs", "type": "file"}]},
            ]}),
            json!({"name": "Cargo.toml", "type": "file"}),
        ]
    }

    fn flat(items: &[Value]) -> Option<Vec<Value>> {
        let shape = shape(items)?;
        let texts: Vec<String> = items.iter().map(Value::to_string).collect();
        let records = flatten(texts.iter().map(String::as_str), &shape)?;
        Some(
            records
                .iter()
                .map(|r| serde_json::from_str(r).unwrap())
                .collect(),
        )
    }

    #[test]
    fn a_directory_tree_is_one_record_per_entry_with_its_path() {
        assert_eq!(
            shape(&tree()),
            Some(Shape {
                children: "children".into(),
                name: "name"
            })
        );
        let texts: Vec<String> = tree().iter().map(Value::to_string).collect();
        let records = flatten(texts.iter().map(String::as_str), &shape(&tree()).unwrap()).unwrap();
        // The path first, then the node's own fields in their order.
        assert_eq!(
            records,
            [
                r#"{"path":"src","name":"src","type":"directory"}"#,
                r#"{"path":"src/lib.rs","name":"lib.rs","type":"file"}"#,
                r#"{"path":"src/sub","name":"sub","type":"directory"}"#,
                r#"{"path":"src/sub/a.rs","name":"a.rs","type":"file"}"#,
                r#"{"path":"Cargo.toml","name":"Cargo.toml","type":"file"}"#,
            ]
        );
    }

    #[test]
    fn nodes_that_carry_their_path_keep_it() {
        let items = [json!({"path": "/a", "kids": [{"path": "/a/b"}]})];
        assert_eq!(
            flat(&items).unwrap(),
            [json!({"path": "/a"}), json!({"path": "/a/b"})]
        );
    }

    #[test]
    fn arrays_of_other_things_are_not_trees() {
        // An order's items do not look like orders.
        let orders = [json!({"id": "o1", "items": [{"sku": "x", "qty": 1}]})];
        assert_eq!(shape(&orders), None);
        // Arrays of strings.
        assert_eq!(shape(&[json!({"name": "e", "observations": ["a"]})]), None);
        // No node has children in the sample.
        assert_eq!(shape(&[json!({"name": "f", "type": "file"})]), None);
        // No name.
        assert_eq!(shape(&[json!({"n": 1, "c": [{"n": 2}]})]), None);
        // A node further on without a name: the records stay as they were.
        let mut items = tree();
        items.push(json!({"type": "file"}));
        let shape = shape(&tree()).unwrap();
        let texts: Vec<String> = items.iter().map(Value::to_string).collect();
        assert_eq!(flatten(texts.iter().map(String::as_str), &shape), None);
    }
}

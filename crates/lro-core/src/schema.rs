//! Inferring the `line_schema` (a JSON Schema) from sample records.
//!
//! ```
//! use serde_json::json;
//! use lro_core::schema::infer_line_schema;
//!
//! let schema = infer_line_schema(&[json!({"id": "a", "n": 1}), json!({"id": "b"})]);
//! assert_eq!(schema["type"], "object");
//! assert_eq!(schema["properties"]["n"]["type"], "integer");
//! assert_eq!(schema["required"], json!(["id"]));
//! ```

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// Nesting beyond this depth is described as `{}` (any value), which keeps
/// the descriptor small for deeply nested records.
pub const MAX_DEPTH: usize = 4;

#[derive(Default)]
struct Node {
    seen: usize,
    types: BTreeMap<&'static str, ()>,
    props: BTreeMap<String, Node>,
    items: Option<Box<Node>>,
}

impl Node {
    fn add(&mut self, v: &Value, depth: usize) {
        self.seen += 1;
        let ty = match v {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_f64() => "number",
            Value::Number(_) => "integer",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        self.types.insert(ty, ());
        if depth >= MAX_DEPTH {
            return;
        }
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    self.props
                        .entry(k.clone())
                        .or_default()
                        .add(child, depth + 1);
                }
            }
            Value::Array(items) => {
                let node = self.items.get_or_insert_with(Default::default);
                for item in items {
                    node.add(item, depth + 1);
                }
            }
            _ => {}
        }
    }

    fn objects_seen(&self) -> usize {
        self.seen
    }

    fn to_schema(&self, depth: usize) -> Value {
        let mut out = Map::new();
        let mut types: Vec<&str> = self.types.keys().copied().collect();
        // An integer field that is sometimes fractional is a number.
        if types.contains(&"number") {
            types.retain(|t| *t != "integer");
        }
        match types.as_slice() {
            [] => {}
            [one] => {
                out.insert("type".into(), json!(one));
            }
            many => {
                out.insert("type".into(), json!(many));
            }
        }
        if depth < MAX_DEPTH {
            if !self.props.is_empty() {
                let objects = self.objects_seen();
                let mut props = Map::new();
                let mut required = Vec::new();
                for (k, node) in &self.props {
                    props.insert(k.clone(), node.to_schema(depth + 1));
                    if node.seen == objects {
                        required.push(json!(k));
                    }
                }
                out.insert("properties".into(), Value::Object(props));
                if !required.is_empty() {
                    out.insert("required".into(), Value::Array(required));
                }
            }
            if let Some(items) = &self.items {
                out.insert("items".into(), items.to_schema(depth + 1));
            }
        }
        Value::Object(out)
    }
}

/// A JSON Schema for the given records. `required` lists the fields present
/// in every sampled object.
pub fn infer_line_schema(sample: &[Value]) -> Value {
    let mut root = Node::default();
    for record in sample {
        root.add(record, 0);
    }
    root.to_schema(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_objects_and_arrays() {
        let schema = infer_line_schema(&[
            json!({"p": {"c": 0.5}, "tags": ["a"], "x": null}),
            json!({"p": {"c": 1}, "tags": [], "x": "s"}),
        ]);
        assert_eq!(
            schema["properties"]["p"]["properties"]["c"]["type"],
            "number"
        );
        assert_eq!(schema["properties"]["tags"]["items"]["type"], "string");
        assert_eq!(schema["properties"]["x"]["type"], json!(["null", "string"]));
        assert_eq!(schema["required"], json!(["p", "tags", "x"]));
    }

    #[test]
    fn empty_sample_is_an_empty_schema() {
        assert_eq!(infer_line_schema(&[]), json!({}));
    }

    #[test]
    fn depth_is_bounded() {
        let deep = json!({"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}});
        let s = infer_line_schema(&[deep]).to_string();
        assert!(!s.contains("\"f\""), "{s}");
    }
}

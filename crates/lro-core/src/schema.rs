//! Inferring the `line_schema` (a JSON Schema) from sample records.
//!
//! [`infer_line_schema`] is the whole schema, with `required`, for tools
//! such as `lro inspect`. [`descriptor_line_schema`] is what the descriptor
//! carries: types only, with nesting cut until it fits a budget, because the
//! model reads it on every offloaded result.
//!
//! ```
//! use serde_json::json;
//! use lro_core::schema::{descriptor_line_schema, infer_line_schema};
//!
//! let sample = [json!({"id": "a", "n": 1, "p": {"c": 0.5}}), json!({"id": "b", "p": {"c": 1}})];
//! let schema = infer_line_schema(&sample);
//! assert_eq!(schema["type"], "object");
//! assert_eq!(schema["properties"]["n"]["type"], "integer");
//! assert_eq!(schema["required"], json!(["id", "p"]));
//!
//! let compact = descriptor_line_schema(&sample, 1000);
//! assert_eq!(compact["properties"]["p"]["properties"]["c"]["type"], "number");
//! assert!(compact.get("required").is_none());
//! // Over the budget, nested properties go first; top-level fields stay.
//! let cut = descriptor_line_schema(&sample, 10);
//! assert_eq!(cut["properties"]["p"], json!({"type": "object"}));
//! ```

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// Nesting beyond this depth is described by its type alone, which keeps
/// the schema small for deeply nested records.
pub const MAX_DEPTH: usize = 4;

/// How many characters of compact JSON the descriptor's line schema may take
/// (about 120 tokens). A full-detail MIF memory needs about 1,300 characters
/// with every level and `required`, which alone was a third of the
/// descriptor.
pub const DESCRIPTOR_SCHEMA_CHARS: usize = 480;

/// What a schema spells out.
#[derive(Clone, Copy)]
struct Shape {
    /// Levels of `properties`/`items` below the root.
    depth: usize,
    /// Whether objects list their always-present fields.
    required: bool,
}

/// JSON Schema's type names, in the order a schema lists them.
const TYPES: [&str; 7] = [
    "array", "boolean", "integer", "null", "number", "object", "string",
];

#[derive(Default)]
struct Node {
    seen: usize,
    /// Bit `i` set: a value of type `TYPES[i]` was seen.
    types: u8,
    props: BTreeMap<String, Node>,
    items: Option<Box<Node>>,
}

impl Node {
    fn add(&mut self, v: &Value, depth: usize) {
        self.seen += 1;
        let ty = match v {
            Value::Array(_) => 0,
            Value::Bool(_) => 1,
            Value::Number(n) if n.is_f64() => 4,
            Value::Number(_) => 2,
            Value::Null => 3,
            Value::Object(_) => 5,
            Value::String(_) => 6,
        };
        self.types |= 1 << ty;
        if depth >= MAX_DEPTH {
            return;
        }
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    // The key is copied only the first time it is seen.
                    if let Some(node) = self.props.get_mut(k) {
                        node.add(child, depth + 1);
                    } else {
                        let mut node = Node::default();
                        node.add(child, depth + 1);
                        self.props.insert(k.clone(), node);
                    }
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

    fn to_schema(&self, depth: usize, shape: Shape) -> Value {
        let mut out = Map::new();
        let mut types: Vec<&str> = (0..TYPES.len())
            .filter(|i| self.types & (1 << i) != 0)
            .map(|i| TYPES[i])
            .collect();
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
        if depth < shape.depth {
            if !self.props.is_empty() {
                let objects = self.objects_seen();
                let mut props = Map::new();
                let mut required = Vec::new();
                for (k, node) in &self.props {
                    props.insert(k.clone(), node.to_schema(depth + 1, shape));
                    if shape.required && node.seen == objects {
                        required.push(json!(k));
                    }
                }
                out.insert("properties".into(), Value::Object(props));
                if !required.is_empty() {
                    out.insert("required".into(), Value::Array(required));
                }
            }
            if let Some(items) = &self.items {
                out.insert("items".into(), items.to_schema(depth + 1, shape));
            }
        }
        Value::Object(out)
    }
}

fn infer(sample: &[Value]) -> Node {
    let mut root = Node::default();
    for record in sample {
        root.add(record, 0);
    }
    root
}

/// A JSON Schema for the given records. `required` lists the fields present
/// in every sampled object.
pub fn infer_line_schema(sample: &[Value]) -> Value {
    infer(sample).to_schema(
        0,
        Shape {
            depth: MAX_DEPTH,
            required: true,
        },
    )
}

/// The descriptor's JSON Schema for the given records: types only (no
/// `required`), as deep as fits in `max_chars` of compact JSON. Nesting is
/// cut one level at a time, deepest first; the top-level fields and their
/// types are always listed, even over the budget. Leaving keywords out only
/// loosens the schema, so every record the full schema accepts still
/// validates against it.
pub fn descriptor_line_schema(sample: &[Value], max_chars: usize) -> Value {
    let root = infer(sample);
    let mut depth = MAX_DEPTH;
    loop {
        let schema = root.to_schema(
            0,
            Shape {
                depth,
                required: false,
            },
        );
        if depth == 1 || schema.to_string().len() <= max_chars {
            return schema;
        }
        depth -= 1;
    }
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
    fn several_types_are_listed_in_name_order() {
        let sample: Vec<Value> = [
            json!("s"),
            json!({}),
            json!(1.5),
            json!(null),
            json!(2),
            json!(true),
            json!([]),
        ]
        .into_iter()
        .map(|v| json!({ "x": v }))
        .collect();
        assert_eq!(
            infer_line_schema(&sample)["properties"]["x"]["type"],
            json!(["array", "boolean", "null", "number", "object", "string"])
        );
        let ints = [json!({"x": 1}), json!({"x": null})];
        assert_eq!(
            infer_line_schema(&ints)["properties"]["x"]["type"],
            json!(["integer", "null"])
        );
    }

    #[test]
    fn empty_sample_is_an_empty_schema() {
        assert_eq!(infer_line_schema(&[]), json!({}));
    }

    #[test]
    fn descriptor_schema_is_types_only_and_cut_to_the_budget() {
        let sample = [json!({"a": "x", "o": {"b": {"c": 1}}, "t": ["s"]})];
        let whole = descriptor_line_schema(&sample, usize::MAX);
        assert!(!whole.to_string().contains("required"), "{whole}");
        assert_eq!(
            whole["properties"]["o"]["properties"]["b"]["properties"]["c"]["type"],
            "integer"
        );
        let len = |v: &Value| v.to_string().len();
        // One level less fits when the budget is one character short.
        let cut = descriptor_line_schema(&sample, len(&whole) - 1);
        assert_eq!(
            cut["properties"]["o"]["properties"]["b"],
            json!({"type": "object"})
        );
        assert!(len(&cut) < len(&whole));
        let top = descriptor_line_schema(&sample, 0);
        assert_eq!(
            top,
            json!({"type": "object", "properties": {
                "a": {"type": "string"}, "o": {"type": "object"}, "t": {"type": "array"}}})
        );
    }

    #[test]
    fn depth_is_bounded() {
        let deep = json!({"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}});
        let s = infer_line_schema(&[deep]).to_string();
        assert!(!s.contains("\"f\""), "{s}");
    }
}

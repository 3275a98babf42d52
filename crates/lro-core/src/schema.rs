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
//! // Over the budget, nested properties go first, and the schema says so.
//! let deep = [json!({"id": "a", "p": {"c": 1, "source": "x", "trust": "high", "at": "2025"}})];
//! let cut = descriptor_line_schema(&deep, 130);
//! assert_eq!(cut["properties"]["p"], json!({"type": "object"}));
//! assert_eq!(cut["$comment"], "deeper nesting not shown");
//! ```

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::quote::short_key;

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

#[derive(Default, Clone)]
struct Node {
    seen: usize,
    /// Whether nesting below this node was left out at [`MAX_DEPTH`].
    deeper: bool,
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
            self.deeper |= match v {
                Value::Object(map) => !map.is_empty(),
                Value::Array(items) => !items.is_empty(),
                _ => false,
            };
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

    /// Whether a schema `limit` levels deep leaves out nesting the sample
    /// has below this node, which is at `depth`.
    fn cut_below(&self, depth: usize, limit: usize) -> bool {
        if depth >= limit {
            return self.deeper || !self.props.is_empty() || self.items.is_some();
        }
        self.props.values().any(|n| n.cut_below(depth + 1, limit))
            || self
                .items
                .as_ref()
                .is_some_and(|n| n.cut_below(depth + 1, limit))
    }

    /// This node with the top-level fields it lists cut to the `keep` most
    /// frequent (ties by name) whose names are short enough to quote.
    fn with_fields(&self, keep: usize) -> Node {
        let mut ranked: Vec<(&String, &Node)> =
            self.props.iter().filter(|(k, _)| short_key(k)).collect();
        ranked.sort_by(|a, b| b.1.seen.cmp(&a.1.seen).then_with(|| a.0.cmp(b.0)));
        Node {
            props: ranked
                .into_iter()
                .take(keep)
                .map(|(k, n)| (k.clone(), n.clone()))
                .collect(),
            items: self.items.clone(),
            ..*self
        }
    }

    /// The type names [`Node::to_schema`] lists.
    fn type_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        // An integer field that is sometimes fractional is a number.
        let number = self.types & (1 << 4) != 0;
        (0..TYPES.len())
            .filter(move |&i| self.types & (1 << i) != 0 && !(number && i == 2))
            .map(|i| TYPES[i])
    }

    /// The length of [`Node::to_schema`] as compact JSON, counted without
    /// building it: the descriptor tries depths until one fits its budget.
    fn schema_len(&self, depth: usize, shape: Shape) -> usize {
        // Braces, and a comma between each two of the object's fields.
        let mut len = 2;
        let mut fields = 0usize;
        let types: Vec<&str> = self.type_names().collect();
        if !types.is_empty() {
            fields += 1;
            len += r#""type":"#.len() + list_len(types.iter().map(|t| t.len() + 2));
            if types.len() == 1 {
                len -= 2;
            }
        }
        if depth < shape.depth {
            if !self.props.is_empty() {
                fields += 1;
                let props = self
                    .props
                    .iter()
                    .map(|(k, node)| quoted_len(k) + 1 + node.schema_len(depth + 1, shape));
                len += r#""properties":"#.len() + list_len(props);
                let objects = self.objects_seen();
                let required: Vec<usize> = self
                    .props
                    .iter()
                    .filter(|(_, node)| shape.required && node.seen == objects)
                    .map(|(k, _)| quoted_len(k))
                    .collect();
                if !required.is_empty() {
                    fields += 1;
                    len += r#""required":"#.len() + list_len(required.into_iter());
                }
            }
            if let Some(items) = &self.items {
                fields += 1;
                len += r#""items":"#.len() + items.schema_len(depth + 1, shape);
            }
        }
        len + fields.saturating_sub(1)
    }

    fn to_schema(&self, depth: usize, shape: Shape) -> Value {
        let mut out = Map::new();
        let types: Vec<&str> = self.type_names().collect();
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

/// The length of a JSON array or object whose items are `items` long:
/// brackets and the commas between them.
fn list_len(items: impl Iterator<Item = usize>) -> usize {
    let (mut len, mut n) = (2, 0usize);
    for item in items {
        len += item;
        n += 1;
    }
    len + n.saturating_sub(1)
}

/// The length of `s` as a JSON string, escaped as serde_json escapes it.
fn quoted_len(s: &str) -> usize {
    let escapes: usize = s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\x08' | b'\x0c' | b'\n' | b'\r' | b'\t' => 1,
            0..0x20 => 5,
            _ => 0,
        })
        .sum();
    s.len() + escapes + 2
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
/// cut one level at a time, deepest first; when the top-level fields alone
/// do not fit, the most frequent are listed (ties by name), as many as fit.
/// A field whose name is longer than 40 characters is never listed. What
/// is left out, the schema says in `$comment`: how many fields of how many,
/// how to list them all, the level below which nesting is not shown.
/// Leaving keywords out only loosens the schema, so every record the full
/// schema accepts still validates against it.
pub fn descriptor_line_schema(sample: &[Value], max_chars: usize) -> Value {
    let root = infer(sample);
    let shape = |depth| Shape {
        depth,
        required: false,
    };
    let total = root.props.len();
    let listable = root.props.keys().filter(|k| short_key(k)).count();
    let fits = |node: &Node, depth: usize| {
        let comment = comment(node.props.len(), total, node.cut_below(0, depth));
        let extra = comment
            .as_ref()
            .map_or(0, |c| quoted_len(c) + r#","$comment":"#.len());
        node.schema_len(0, shape(depth)) + extra <= max_chars
    };
    let whole = root.with_fields(listable);
    let mut depth = MAX_DEPTH;
    while depth > 1 && !fits(&whole, depth) {
        depth -= 1;
    }
    let node = if fits(&whole, depth) {
        whole
    } else {
        // The most fields that fit: fitting shrinks as fields are added.
        let (mut lo, mut hi) = (0, listable);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if fits(&root.with_fields(mid), 1) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        root.with_fields(lo)
    };
    let mut schema = node.to_schema(0, shape(depth));
    if let (Some(c), Value::Object(map)) = (
        comment(node.props.len(), total, node.cut_below(0, depth)),
        &mut schema,
    ) {
        map.insert("$comment".into(), Value::String(c));
    }
    schema
}

/// What the descriptor's schema leaves out, when it leaves something out.
fn comment(shown: usize, total: usize, deeper: bool) -> Option<String> {
    let fields = (shown < total).then(|| {
        format!(
            "{shown} of {total} fields, the most frequent; all: jq -s '[.[] | keys[]?] | unique'"
        )
    });
    let nesting = deeper.then_some("deeper nesting not shown");
    match (fields, nesting) {
        (Some(f), Some(n)) => Some(format!("{f}; {n}")),
        (Some(f), None) => Some(f),
        (None, Some(n)) => Some(n.to_owned()),
        (None, None) => None,
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
        // Under the whole schema's length, nesting is cut and the cut said.
        for budget in [len(&whole) - 1, 140] {
            let cut = descriptor_line_schema(&sample, budget);
            assert!(len(&cut) <= budget, "{cut}");
            assert_eq!(cut["$comment"], "deeper nesting not shown", "{cut}");
            assert_eq!(cut["properties"]["t"]["type"], "array", "{cut}");
        }
        // Not even the top-level fields fit: as many as do, the most
        // frequent first, and how to list them all.
        let top = descriptor_line_schema(&sample, 0);
        assert_eq!(top["type"], "object");
        assert!(top.get("properties").is_none(), "{top}");
        assert!(
            top["$comment"]
                .as_str()
                .unwrap()
                .starts_with("0 of 3 fields, the most frequent; all: jq -s"),
            "{top}"
        );
    }

    #[test]
    fn wide_records_list_their_most_frequent_fields() {
        let sample: Vec<Value> = (0..50)
            .map(|i| {
                // Custom fields in 40 records of 50: `id`, in all, comes first.
                let mut o: Map<String, Value> = (0..400)
                    .filter(|_| i >= 10)
                    .map(|f| (format!("custom_field_{f}"), json!(f)))
                    .collect();
                o.insert("id".into(), json!(i));
                if i % 2 == 0 {
                    o.insert("rare".into(), json!("x"));
                }
                o.insert("k".repeat(300), json!(1));
                Value::Object(o)
            })
            .collect();
        let schema = descriptor_line_schema(&sample, DESCRIPTOR_SCHEMA_CHARS);
        let text = schema.to_string();
        assert!(text.len() <= DESCRIPTOR_SCHEMA_CHARS, "{text}");
        assert!(schema["properties"]["id"].is_object(), "{text}");
        assert!(schema["properties"].get("rare").is_none(), "{text}");
        assert!(!text.contains("kkkk"), "{text}");
        let shown = schema["properties"].as_object().unwrap().len();
        assert!(shown >= 5, "{text}");
        assert!(
            schema["$comment"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{shown} of 403 fields")),
            "{text}"
        );
    }

    #[test]
    fn lengths_are_counted_as_serde_json_writes_them() {
        let odd = "q\"b\\s\u{8}\u{c}\n\r\t\u{1}\u{1f}\u{7f} é 日本 😀";
        let samples = [
            vec![
                json!({"a": [[{"b": null}]], "c": [], "d": {}}),
                Value::Object(Map::from_iter([(
                    odd.to_owned(),
                    Value::Object(Map::from_iter([(odd.to_owned(), json!([1, 2.5]))])),
                )])),
            ],
            vec![
                json!({"x": 1, "y": {"z": [true, "s"]}}),
                json!({"x": 1.5, "y": {"z": []}, "w": "s"}),
                json!([1, {"k": 2}]),
                json!("top"),
            ],
            vec![json!({"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}})],
            vec![],
        ];
        for sample in &samples {
            let root = infer(sample);
            for depth in 0..=MAX_DEPTH + 1 {
                for required in [false, true] {
                    let shape = Shape { depth, required };
                    assert_eq!(
                        root.schema_len(0, shape),
                        root.to_schema(0, shape).to_string().len(),
                        "{sample:?} at depth {depth}, required {required}"
                    );
                }
            }
        }
    }

    #[test]
    fn depth_is_bounded() {
        let deep = json!({"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}});
        let s = infer_line_schema(&[deep]).to_string();
        assert!(!s.contains("\"f\""), "{s}");
    }
}

//! Reading a `CallToolResult` from outside: its text, its size in the
//! spec's tokens, the records it holds inline, and the offload descriptor
//! when it is one.

use serde_json::{Map, Value};

/// The text blocks of a result.
pub(crate) fn texts(result: &Value) -> Vec<&str> {
    result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect()
}

/// Whether the result is a tool error (`isError: true`).
pub(crate) fn is_error(result: &Value) -> bool {
    result.get("isError").and_then(Value::as_bool) == Some(true)
}

/// The spec's estimate, characters / 4 rounded up, of what the model
/// reads: the text blocks, or the structured content when there is none.
pub(crate) fn tokens(result: &Value) -> u64 {
    let texts = texts(result);
    let chars: usize = if texts.is_empty() {
        result
            .get("structuredContent")
            .map_or(0, |v| v.to_string().chars().count())
    } else {
        texts.iter().map(|t| t.chars().count()).sum()
    };
    tokens_of_chars(chars)
}

/// Characters / 4, rounded up.
pub(crate) fn tokens_of_chars(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

/// The offload descriptor: the structured content or a text block that is
/// a JSON object with an `offloaded` key.
pub(crate) fn descriptor(result: &Value) -> Option<Map<String, Value>> {
    let has_flag = |v: &Value| {
        v.as_object()
            .filter(|m| m.contains_key("offloaded"))
            .cloned()
    };
    if let Some(d) = result.get("structuredContent").and_then(has_flag) {
        return Some(d);
    }
    texts(result)
        .into_iter()
        .filter_map(|t| serde_json::from_str::<Value>(t).ok())
        .find_map(|v| has_flag(&v))
}

/// Whether the result is an offload: a descriptor with `offloaded: true`.
pub(crate) fn is_offload(result: &Value) -> bool {
    descriptor(result).is_some_and(|d| d.get("offloaded") == Some(&Value::Bool(true)))
}

/// The records an inline result holds, read as an offloading server
/// would split it: a JSON array; in a JSON object, the items of all its
/// arrays when it holds two or more and every one holds objects (a graph's
/// entities and relations), else its longest array (`{"memories": [...],
/// "total": n}`); these in the first text block that is JSON, else in the
/// structured content. Any other text is records one a line (its non-blank
/// lines, as strings): a file's lines, a log's entries, each a small part
/// of the whole.
pub(crate) fn records(result: &Value) -> Vec<Value> {
    let from = |v: Value| match v {
        Value::Array(items) => Some(items),
        Value::Object(map) => {
            let arrays: Vec<Vec<Value>> = map
                .into_iter()
                .filter_map(|(_, v)| match v {
                    Value::Array(items) => Some(items),
                    _ => None,
                })
                .collect();
            let all_objects = arrays.iter().flatten().all(Value::is_object);
            if arrays.len() >= 2 && all_objects {
                Some(arrays.into_iter().flatten().collect())
            } else {
                arrays.into_iter().max_by_key(Vec::len)
            }
        }
        _ => None,
    };
    let texts = texts(result);
    texts
        .iter()
        .filter_map(|t| serde_json::from_str::<Value>(t).ok())
        .find_map(from)
        .or_else(|| result.get("structuredContent").cloned().and_then(from))
        .unwrap_or_else(|| {
            texts
                .iter()
                .flat_map(|t| t.lines())
                .filter(|l| !l.trim().is_empty())
                .map(|l| Value::String(l.to_owned()))
                .collect()
        })
}

/// Whether two answers carry the same content: text blocks equal as text
/// or, when both are JSON, as JSON values (key order and whitespace aside),
/// and the same structured content.
pub(crate) fn same_answer(a: &Value, b: &Value) -> bool {
    let (ta, tb) = (texts(a), texts(b));
    let same_text = |x: &&str, y: &&str| {
        x == y
            || matches!(
                (serde_json::from_str::<Value>(x), serde_json::from_str::<Value>(y)),
                (Ok(vx), Ok(vy)) if vx == vy
            )
    };
    ta.len() == tb.len()
        && ta.iter().zip(&tb).all(|(x, y)| same_text(x, y))
        && a.get("structuredContent") == b.get("structuredContent")
}

/// The text of the result shortened for evidence.
pub(crate) fn excerpt(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn text(t: &str) -> Value {
        json!({"content": [{"type": "text", "text": t}]})
    }

    #[test]
    fn records_of_arrays_and_wrappers() {
        assert_eq!(records(&text("[1,2,3]")).len(), 3);
        assert_eq!(
            records(&text(r#"{"memories":[{},{}],"tags":["a"],"total":2}"#)).len(),
            2
        );
        let structured = json!({"content": [], "structuredContent": {"rows": [1]}});
        assert_eq!(records(&structured).len(), 1);
        assert!(records(&json!({"content": []})).is_empty());
    }

    #[test]
    fn records_of_several_arrays_and_of_text() {
        // A graph: every entity and relation.
        let graph = r#"{"entities":[{"n":1},{"n":2}],"relations":[{"f":1}],"total":3}"#;
        assert_eq!(records(&text(graph)).len(), 3);
        // Arrays of other things: the longest one, as before.
        assert_eq!(records(&text(r#"{"a":[1,2],"b":[{}]}"#)).len(), 2);
        // Text: its non-blank lines.
        let log = "Commit: a\nAuthor: x\n\nCommit: b\nAuthor: y\n";
        assert_eq!(
            records(&text(log)),
            ["Commit: a", "Author: x", "Commit: b", "Author: y"]
        );
        // A JSON object without arrays is lines too.
        assert_eq!(records(&text("{\n  \"a\": 1\n}")).len(), 3);
    }

    #[test]
    fn descriptor_from_text_or_structured() {
        let d = text(r#"{"offloaded":true,"file_path":"/tmp/x"}"#);
        assert!(is_offload(&d));
        assert_eq!(descriptor(&d).unwrap()["file_path"], "/tmp/x");
        assert!(!is_offload(&text("[1]")));
        let s = json!({"content": [{"type":"text","text":"see file"}],
                       "structuredContent": {"offloaded": true}});
        assert!(is_offload(&s));
    }

    #[test]
    fn tokens_round_up() {
        assert_eq!(tokens(&text("abcde")), 2);
        assert_eq!(tokens(&json!({"structuredContent": {"a": 1}})), 2);
        assert_eq!(excerpt("abcdef", 3), "abc…");
    }
}

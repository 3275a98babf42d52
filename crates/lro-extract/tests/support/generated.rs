//! Generated records as any server might write them: mixed element types,
//! duplicate keys at any depth, escapes, non-ASCII text, `-0`, big and
//! small numbers and every legal spelling of them, with or without spaces.

use proptest::prelude::*;

/// Number spellings that jq 1.6 reads as doubles, several printing
/// differently from how they are written.
const NUMBERS: [&str; 24] = [
    "0",
    "-0",
    "-0.0",
    "1",
    "1.0",
    "1.50",
    "-1.5e3",
    "1E+2",
    "2e-7",
    "0.1",
    "1e-5",
    "0.0001",
    "100000000000000000001",
    "9007199254740993",
    "12345678901234567890",
    "123456789012345678",
    "1e17",
    "1E400",
    "-1e400",
    "5e-324",
    "1.7976931348623157e308",
    "3.14159265358979323846",
    "-42",
    "7",
];

/// String bodies (JSON-escaped as written in a file); a lone low surrogate
/// escape is legal JSON, which jq 1.6 reads as U+FFFD.
const TEXTS: [&str; 20] = [
    "x\\udc00y",
    "\\udfff",
    "x",
    "y",
    "café",
    "caf\\u00e9",
    "日本",
    "😀",
    "\\ud83d\\ude00",
    "q\\\"uote",
    "back\\\\slash",
    "tab\\there",
    "new\\nline",
    "nul\\u0000",
    "del\u{7f}",
    "esc\\u007F",
    "sl\\/ash",
    "\\u0078",
    "",
    "a b",
];

/// Keys, few enough to repeat; `\u006b` is `k` spelled another way, and
/// `\udc00` is U+FFFD to jq 1.6.
const KEYS: [&str; 8] = ["k", "n", "o", "tags", "é", "\\u006b", "a", "\\udc00"];

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(&NUMBERS[..]).prop_map(str::to_owned),
        1 => any::<i64>().prop_map(|i| i.to_string()),
        1 => any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:e}")),
        1 => (-1000i32..1000, 0u32..1000).prop_map(|(a, b)| format!("{a}.{b:03}")),
    ]
}

fn string() -> impl Strategy<Value = String> {
    proptest::sample::select(&TEXTS[..]).prop_map(|t| format!("\"{t}\""))
}

fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => Just("null".to_owned()),
        1 => any::<bool>().prop_map(|b| b.to_string()),
        3 => number(),
        3 => string(),
    ]
}

fn key() -> impl Strategy<Value = String> {
    proptest::sample::select(&KEYS[..]).prop_map(|k| format!("\"{k}\""))
}

/// `items` joined as a JSON array or object body, with or without spaces.
fn joined(items: Vec<String>, spaced: bool) -> String {
    items.join(if spaced { ", " } else { "," })
}

fn object_of(value: impl Strategy<Value = String>) -> impl Strategy<Value = String> {
    (
        proptest::collection::vec((key(), value), 0..6),
        any::<bool>(),
    )
        .prop_map(|(members, spaced)| {
            let colon = if spaced { ": " } else { ":" };
            let members = members
                .into_iter()
                .map(|(k, v)| format!("{k}{colon}{v}"))
                .collect();
            format!("{{{}}}", joined(members, spaced))
        })
}

/// Any JSON value, nested a few levels.
pub fn value() -> impl Strategy<Value = String> {
    scalar().prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            (
                proptest::collection::vec(inner.clone(), 0..5),
                any::<bool>()
            )
                .prop_map(|(items, spaced)| format!("[{}]", joined(items, spaced))),
            object_of(inner),
        ]
    })
}

/// One record: mostly an object holding the fields filters read (often
/// twice), sometimes any other value.
pub fn record() -> impl Strategy<Value = String> {
    prop_oneof![
        5 => object_of(value()),
        1 => value(),
    ]
}

/// A JSON array of records, as a tool's result.
pub fn records(max: usize) -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(record(), 1..max)
}

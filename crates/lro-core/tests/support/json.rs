//! JSON text as tools write it, for the property tests of every JSON
//! scanner and of the record split (and the fuzz targets' seeds): every
//! legal spelling of numbers and strings, whitespace between any two
//! tokens, duplicate keys, mixed element types, nesting past depth 100,
//! records of hundreds of fields, long keys and long lines; and the same
//! text broken (cut, a byte changed, added or dropped, non-UTF-8).
//!
//! A value is kept as a tree of its tokens' spellings, so a test knows the
//! exact text of every element and member without a parser, and the
//! oracle (serde_json) is never also the generator.
//!
//! Other crates' tests include this file by path (`#[path = ...]`).

#![allow(dead_code)]

use proptest::prelude::*;

/// A JSON value as written.
#[derive(Debug, Clone)]
pub(crate) enum Json {
    /// A number, `true`, `false`, `null` or a string literal, as written.
    Scalar(String),
    /// The elements in order.
    Array(Vec<Json>),
    /// The members in order, each key a string literal as written.
    Object(Vec<(String, Json)>),
}

/// Whitespace put between tokens; the empty string most often.
const WS: [&str; 10] = ["", "", "", " ", "\t", "\n", "\r\n", "  ", "\r", " \n\t\r "];

impl Json {
    /// The text, with whitespace between tokens picked by `ws` (a seed;
    /// `0` writes none).
    pub(crate) fn render(&self, ws: u64) -> String {
        let mut out = String::new();
        let mut gaps = Gaps(ws);
        self.write(&mut out, &mut gaps);
        out
    }

    /// The text without whitespace.
    pub(crate) fn compact(&self) -> String {
        self.render(0)
    }

    fn write(&self, out: &mut String, gaps: &mut Gaps) {
        match self {
            Json::Scalar(s) => out.push_str(s),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(gaps.next());
                        out.push(',');
                    }
                    out.push_str(gaps.next());
                    item.write(out, gaps);
                }
                out.push_str(gaps.next());
                out.push(']');
            }
            Json::Object(members) => {
                out.push('{');
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push_str(gaps.next());
                        out.push(',');
                    }
                    out.push_str(gaps.next());
                    out.push_str(key);
                    out.push_str(gaps.next());
                    out.push(':');
                    out.push_str(gaps.next());
                    value.write(out, gaps);
                }
                out.push_str(gaps.next());
                out.push('}');
            }
        }
    }
}

/// Whitespace picked by a xorshift generator, none for seed 0.
struct Gaps(u64);

impl Gaps {
    fn next(&mut self) -> &'static str {
        if self.0 == 0 {
            return "";
        }
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        WS[(self.0 % WS.len() as u64) as usize]
    }
}

/// Every legal spelling of a JSON number: signs, `-0`, fractions,
/// exponents of both cases and signs, integers past 2^64, out of f64 range.
pub(crate) fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "-?(0|[1-9][0-9]{0,3})",
        4 => "-?(0|[1-9][0-9]{0,24})(\\.[0-9]{1,8})?([eE][+-]?[0-9]{1,3})?",
        1 => prop::sample::select(vec![
            "-0", "0.0", "-0.0", "1e5", "1E+5", "0.5e-3", "1E400", "-1e-400",
            "18446744073709551616", "-9223372036854775809", "1.50", "100e-2",
        ])
        .prop_map(str::to_owned),
    ]
}

/// A string literal (quotes included) with every escape, `\u` of both
/// cases (surrogate pairs, now and then a lone surrogate), any Unicode, and
/// now and then a long run.
pub(crate) fn string_literal() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        6 => "[a-zA-Z0-9 _.:/,{}\\[\\]-]{1,12}",
        3 => any::<char>()
            .prop_filter("needs an escape", |c| *c != '"' && *c != '\\' && *c >= ' ')
            .prop_map(String::from),
        3 => prop::sample::select(vec![
            "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\u00e9", "\\u00E9",
            "\\ud83d\\ude00", "\\uD83D\\uDE00", "\\u0000", "\\u001f", "\\u0022", "\\u005c",
            "é", "😀", "\u{7f}",
        ])
        .prop_map(str::to_owned),
        1 => "\\\\u[0-9a-fA-F]{4}",
        1 => ("[a-z ]{8}", 25..400usize).prop_map(|(run, n)| run.repeat(n)),
    ];
    prop::collection::vec(piece, 0..6).prop_map(|pieces| format!("\"{}\"", pieces.concat()))
}

/// A key: from a small set, so that keys repeat within an object and name
/// the fields the summaries read, or any string, or a long one.
pub(crate) fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(vec![
            "\"id\"", "\"namespace\"", "\"score\"", "\"a\"", "\"tags\"", "\"x y\"", "\"\"",
            "\"n\\u00e9\"", "\"namesp\\u0061ce\"", "\"é\"",
        ])
        .prop_map(str::to_owned),
        3 => string_literal(),
        1 => ("[a-z]{4}", 25..100usize).prop_map(|(run, n)| format!("\"k{}\"", run.repeat(n))),
    ]
}

/// A number, string, boolean or null.
pub(crate) fn scalar() -> impl Strategy<Value = Json> {
    prop_oneof![
        3 => number(),
        4 => string_literal(),
        1 => prop::sample::select(vec!["true", "false", "null"]).prop_map(str::to_owned),
    ]
    .prop_map(Json::Scalar)
}

/// Nested arrays and objects of mixed values, a few levels deep.
pub(crate) fn nested() -> impl Strategy<Value = Json> {
    scalar().prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Json::Array),
            prop::collection::vec((key(), inner), 0..6).prop_map(Json::Object),
        ]
    })
}

/// Arrays and objects nested `depth` deep around a scalar. serde_json
/// reads at most 128 levels; deeper text is refused by every reader here.
pub(crate) fn deep(depth: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Json> {
    (depth, scalar(), key(), any::<u64>()).prop_map(|(depth, leaf, key, shape)| {
        (0..depth).fold(leaf, |inner, level| {
            if shape.rotate_left(level as u32) & 1 == 0 {
                Json::Array(vec![inner])
            } else {
                Json::Object(vec![(key.clone(), inner)])
            }
        })
    })
}

/// An object of hundreds of members.
pub(crate) fn wide() -> impl Strategy<Value = Json> {
    prop::collection::vec((key(), scalar()), 100..300).prop_map(Json::Object)
}

/// Any value: mostly nested, now and then deep (to 120 levels) or wide.
pub(crate) fn value() -> impl Strategy<Value = Json> {
    prop_oneof![
        8 => nested(),
        1 => deep(1..=120),
        1 => wide(),
    ]
}

/// An object: members of any value, or hundreds of members.
pub(crate) fn object() -> impl Strategy<Value = Json> {
    prop_oneof![
        8 => prop::collection::vec((key(), value()), 0..8).prop_map(Json::Object),
        1 => wide(),
    ]
}

/// A top-level array of mixed values.
pub(crate) fn array() -> impl Strategy<Value = Json> {
    prop::collection::vec(value(), 0..12).prop_map(Json::Array)
}

/// A change that breaks a text.
#[derive(Debug, Clone)]
pub(crate) enum Break {
    /// Cut at a byte.
    Cut(prop::sample::Index),
    /// A byte replaced.
    Replace(prop::sample::Index, u8),
    /// A byte put in.
    Insert(prop::sample::Index, u8),
    /// A byte taken out.
    Delete(prop::sample::Index),
}

fn a_break() -> impl Strategy<Value = Break> {
    // Bytes that matter to a scanner, and any byte (non-UTF-8 among them).
    let byte = prop_oneof![
        prop::sample::select(b"\"\\{}[],: \n0e-.tfn".to_vec()),
        any::<u8>()
    ];
    prop_oneof![
        any::<prop::sample::Index>().prop_map(Break::Cut),
        (any::<prop::sample::Index>(), byte.clone()).prop_map(|(i, b)| Break::Replace(i, b)),
        (any::<prop::sample::Index>(), byte).prop_map(|(i, b)| Break::Insert(i, b)),
        any::<prop::sample::Index>().prop_map(Break::Delete),
    ]
}

/// `text` with `breaks` applied, in order.
pub(crate) fn broken(text: &[u8], breaks: &[Break]) -> Vec<u8> {
    let mut bytes = text.to_vec();
    for b in breaks {
        if bytes.is_empty() {
            break;
        }
        match b {
            Break::Cut(i) => bytes.truncate(i.index(bytes.len())),
            Break::Replace(i, b) => {
                let at = i.index(bytes.len());
                bytes[at] = *b;
            }
            Break::Insert(i, b) => {
                let at = i.index(bytes.len() + 1);
                bytes.insert(at, *b);
            }
            Break::Delete(i) => {
                bytes.remove(i.index(bytes.len()));
            }
        }
    }
    bytes
}

/// Up to three breaks.
pub(crate) fn breaks() -> impl Strategy<Value = Vec<Break>> {
    prop::collection::vec(a_break(), 1..4)
}

/// Text that is no JSON: lines of any characters (tabs, `\r`, Unicode),
/// blank lines, long lines, lines that start like JSON.
pub(crate) fn text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        4 => "[^\n]{0,40}",
        2 => Just(String::new()),
        1 => "[^\n]{0,20}\r",
        1 => ("[a-z ]{10}", 50..500usize).prop_map(|(run, n)| run.repeat(n)),
        1 => "[\\[{][^\n]{0,30}",
    ];
    (prop::collection::vec(line, 0..30), any::<bool>()).prop_map(|(lines, newline)| {
        let mut text = lines.join("\n");
        if newline {
            text.push('\n');
        }
        text
    })
}

//! jaq's runtime errors in jq 1.6's words: `lro extract` prints what jq
//! prints on its error stream, and the tool's notice quotes the same text.
//!
//! jaq builds its type, index and arithmetic errors from parts (fixed words
//! and the values involved); the parts are private, but its `Display` writes
//! the words through the formatter (which honours width and precision) and
//! the values through `write!` (which does not). Formatting with precision 0
//! and width 1 therefore turns every word into one `\u{1}` and leaves the
//! values as they are: the values come back apart, and are read again to be
//! named and printed as jq does. The errors jaq makes from a text (`error`,
//! `length` of a boolean) are matched by that text.

use jaq_core::Error;
use jaq_json::Val;

use super::{convert::write_json, originals::NoOriginals, read};
use crate::failures::Message;

/// jq 1.6's report of `e`; `None` for an error whose value is null, not a
/// failure (jq 1.6's `error(null)` is `empty`, as `rewrite.rs` makes it).
pub(crate) fn jq_message(e: Error<Val>) -> Option<Message> {
    let marked = format!("{e:\u{1}<1.0}");
    if !marked.contains('\u{1}') {
        // A value: `error(v)`, or a text jaq made.
        return match e.into_val() {
            Val::Null => None,
            Val::TStr(s) | Val::BStr(s) => Some(Message::Text(from_text(
                String::from_utf8_lossy(&s).into_owned(),
            ))),
            other => Some(Message::NotAString(dump(&other))),
        };
    }
    let whole = e.to_string();
    let vals: Vec<Val> = marked
        .split('\u{1}')
        .filter(|p| !p.is_empty())
        .map(reread)
        .collect();
    Some(Message::Text(from_parts(&whole, &vals).unwrap_or(whole)))
}

/// The jq 1.6 text of an error jaq built from words and `vals`.
fn from_parts(whole: &str, vals: &[Val]) -> Option<String> {
    match vals {
        [l, r] if whole.starts_with("cannot index ") => Some(match r {
            Val::TStr(k) | Val::BStr(k) => format!(
                "Cannot index {} with string \"{}\"",
                kind(l),
                String::from_utf8_lossy(k)
            ),
            r => format!("Cannot index {} with {}", kind(l), kind(r)),
        }),
        // jaq says this of a math function's input (and of `-x`, which
        // `rewrite.rs` makes ours, failing as jq's).
        [v] if whole.ends_with(" as number") => Some(format!("{} number required", described(v))),
        [v] if whole.ends_with(" as rangeable (array or string)") => {
            Some(format!("Cannot index {} with object", kind(v)))
        }
        [v] if whole.ends_with(" as iterable (array or object)") => {
            Some(format!("Cannot iterate over {}", described(v)))
        }
        [l, r] if whole.starts_with("cannot calculate ") => {
            let op = whole.strip_prefix("cannot calculate ")?;
            let op = op
                .split(' ')
                .find(|w| ["+", "-", "*", "/", "%"].contains(w))?;
            let verb = match op {
                "+" => "added",
                "-" => "subtracted",
                "*" => "multiplied",
                "/" => "divided",
                _ => "divided (remainder)",
            };
            let zero = matches!((l, r, op), (Val::Num(_), Val::Num(_), "/" | "%"));
            let why = if zero {
                " because the divisor is zero"
            } else {
                ""
            };
            Some(format!(
                "{} and {} cannot be {verb}{why}",
                described(l),
                described(r)
            ))
        }
        _ => None,
    }
}

/// The jq 1.6 text of a message jaq made as a text.
fn from_text(text: String) -> String {
    if let Some(v) = text.strip_suffix(" has no length") {
        return format!("{} has no length", described(&reread(v)));
    }
    if let Some(why) = text.strip_prefix("invalid regex: ") {
        return regex_failure(why);
    }
    text
}

/// jq 1.6's words (Oniguruma's) for why a pattern does not compile, from
/// the regex crates' (ours and jaq's say it differently); a reason with no
/// counterpart here keeps the crate's words after jq's `Regex failure: `.
fn regex_failure(why: &str) -> String {
    let why = why.rsplit("error: ").next().unwrap_or(why);
    const WORDS: [(&str, &str); 7] = [
        ("unclosed group", "end pattern with unmatched parenthesis"),
        (
            "without closing ')'",
            "end pattern with unmatched parenthesis",
        ),
        ("without matching '('", "unmatched close parenthesis"),
        ("unopened group", "unmatched close parenthesis"),
        ("unclosed character class", "premature end of char-class"),
        (
            "missing expression",
            "target of repeat operator is not specified",
        ),
        (
            "invalid repetition count range",
            "upper is smaller than lower in repeat range",
        ),
    ];
    let onig = WORDS
        .iter()
        .find(|(ours, _)| why.contains(ours))
        .map(|(_, onig)| *onig)
        .or_else(|| {
            why.contains("invalid character class range")
                .then_some("empty range in char class")
        })
        .unwrap_or(why);
    format!("Regex failure: {onig}")
}

/// A value as jaq displays it, read back (a text that is not JSON, such
/// as `NaN`, stays a string of itself).
fn reread(text: &str) -> Val {
    read::parse(text.as_bytes()).unwrap_or_else(|_| Val::utf8_str(text.as_bytes().to_vec()))
}

/// jq's `number (5)`: the kind and the value, cut as jq cuts it.
pub(crate) fn described(v: &Val) -> String {
    format!("{} ({})", kind(v), truncated(v))
}

/// jq's name of a value's kind.
pub(crate) fn kind(v: &Val) -> &'static str {
    match v {
        Val::Null => "null",
        Val::Bool(_) => "boolean",
        Val::Num(_) => "number",
        Val::TStr(_) | Val::BStr(_) => "string",
        Val::Arr(_) => "array",
        Val::Obj(_) => "object",
    }
}

/// A value as jq prints it, for an error's text (and the unit tests).
pub(super) fn dump(v: &Val) -> String {
    let mut out = Vec::new();
    // Only a value nested past the render limit fails: say so instead.
    match write_json(&mut out, v, 0, usize::MAX, &NoOriginals) {
        Ok(_) => String::from_utf8_lossy(&out).into_owned(),
        Err(e) => e.to_string(),
    }
}

/// jq 1.6's dump of a value in an error (`jv_dump_string_trunc` into 15
/// bytes): past 14 bytes, the first 11 and `...`, cut inside a character
/// if it falls there (jq then prints U+FFFD, as this does).
fn truncated(v: &Val) -> String {
    let mut out = Vec::new();
    // Only the first bytes are kept: stop rendering soon after them.
    let _ = write_json(&mut out, v, 0, 15, &NoOriginals);
    if out.len() > 14 {
        out.truncate(11);
        out.extend_from_slice(b"...");
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ExtractError, jq::eval_values};
    use serde_json::json;

    /// The message `filter` fails with on `input`.
    fn error_of(filter: &str, input: serde_json::Value) -> String {
        match eval_values(filter, &[input]) {
            Err(ExtractError::Runtime { message, .. }) => message,
            other => format!("no error: {other:?}"),
        }
    }

    #[test]
    fn errors_read_as_jq_1_6_s() {
        let long = json!({"abcdefgh": 12345});
        let cases = [
            (".a", json!(true), "Cannot index boolean with string \"a\""),
            (".id", json!([1]), "Cannot index array with string \"id\""),
            (".[0]", json!("s"), "Cannot index string with number"),
            (".[{}]", json!(1), "Cannot index number with object"),
            (".[]", json!(null), "Cannot iterate over null (null)"),
            (".[]", json!(5), "Cannot iterate over number (5)"),
            (".[]", json!(1e-5), "Cannot iterate over number (1e-05)"),
            (
                ".[]",
                json!("abcdefghijklmnopqrstuvwxyz"),
                "Cannot iterate over string (\"abcdefghij...)",
            ),
            (
                ". + []",
                long.clone(),
                "object ({\"abcdefgh\"...) and array ([]) cannot be added",
            ),
            (
                ". - 1",
                json!({"a": [1, 2, 3, 4, 5, 6, 7, 8]}),
                "object ({\"a\":[1,2,3...) and number (1) cannot be subtracted",
            ),
            (
                ". * [1]",
                json!({"a": 1}),
                "object ({\"a\":1}) and array ([1]) cannot be multiplied",
            ),
            (
                ". / 0",
                json!("a"),
                "string (\"a\") and number (0) cannot be divided",
            ),
            (
                ". % 0",
                json!(1),
                "number (1) and number (0) cannot be divided (remainder) because the divisor is zero",
            ),
            ("length", json!(true), "boolean (true) has no length"),
            (
                "@csv",
                json!(1),
                "number (1) cannot be csv-formatted, only array",
            ),
            ("@tsv", json!([{}]), "object ({}) is not valid in a csv row"),
            (
                "test(\"a\")",
                json!(1),
                "number (1) cannot be matched, as it is not a string",
            ),
            ("error(\"x\")", json!(1), "x"),
            (
                "tonumber",
                json!({}),
                "object ({}) cannot be parsed as a number",
            ),
            (
                "tonumber",
                json!("[1]"),
                "string (\"[1]\") cannot be parsed as a number",
            ),
            (
                "tonumber",
                json!("abc"),
                "Invalid numeric literal at EOF at line 1, column 3 (while parsing 'abc')",
            ),
            (
                "fromjson",
                json!(1),
                "number (1) only strings can be parsed",
            ),
            ("ascii_downcase", json!(1), "explode input must be a string"),
            ("explode", json!(null), "explode input must be a string"),
            ("implode", json!("a"), "implode input must be an array"),
            (
                "split(\",\")",
                json!(1),
                "split input and separator must be strings",
            ),
            ("join(\",\")", json!(1), "Cannot iterate over number (1)"),
            (
                "join(\",\")",
                json!([[1]]),
                "string (\"\") and array ([1]) cannot be added",
            ),
            (
                "has(\"a\")",
                json!([1]),
                "Cannot check whether array has a string key",
            ),
            (
                "has(0)",
                json!({}),
                "Cannot check whether object has a number key",
            ),
            (".[1:2]", json!({}), "Cannot index object with object"),
            (".[1:2]", json!(true), "Cannot index boolean with object"),
            ("floor", json!("a"), "string (\"a\") number required"),
            ("sqrt", json!({}), "object ({}) number required"),
            ("-.", json!("a"), "string (\"a\") cannot be negated"),
            (
                "match(\"(\")",
                json!(1),
                "number (1) cannot be matched, as it is not a string",
            ),
            (
                "test(\"(\")",
                json!("a"),
                "Regex failure: end pattern with unmatched parenthesis",
            ),
            (
                "sub(\")\"; \"x\")",
                json!("a"),
                "Regex failure: unmatched close parenthesis",
            ),
            (
                "match(\"[\")",
                json!("a"),
                "Regex failure: premature end of char-class",
            ),
            (
                "test(\"*\")",
                json!("a"),
                "Regex failure: target of repeat operator is not specified",
            ),
            (
                "test(\"a{2,1}\")",
                json!("a"),
                "Regex failure: upper is smaller than lower in repeat range",
            ),
            (
                "test(\"[b-a]\")",
                json!("a"),
                "Regex failure: empty range in char class",
            ),
            ("error({a: 1})", json!(1), "{\"a\":1} (not a string)"),
        ];
        let wrong: Vec<_> = cases
            .into_iter()
            .map(|(filter, input, jq)| (filter, error_of(filter, input), jq))
            .filter(|(_, ours, jq)| ours != jq)
            .collect();
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    #[test]
    fn error_null_is_no_failure() {
        // jq 1.6's `error(null)` is `empty`.
        assert_eq!(
            eval_values("1, error(null), 2", &[json!(0)]).unwrap(),
            [json!(1), json!(2)]
        );
        assert_eq!(
            jq_message(Error::new(json_val(r#"{"a":"é"}"#))),
            Some(Message::NotAString(r#"{"a":"é"}"#.to_owned()))
        );
    }

    #[test]
    fn a_cut_character_is_a_replacement_character() {
        let v = json_val(r#""aéééééé""#);
        assert_eq!(described(&v), "string (\"aéééé\u{fffd}...)");
    }

    fn json_val(text: &str) -> Val {
        read::parse(text.as_bytes()).unwrap()
    }
}

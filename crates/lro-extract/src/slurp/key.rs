//! Sort and group keys read from raw record lines, ordered as jq 1.6
//! orders values.
//!
//! Only scalars are keys here: null, booleans, numbers (compared as
//! doubles, as jq 1.6 holds them) and strings (compared byte by byte on
//! their UTF-8 text, as jq 1.6's `memcmp` does). An array or object key,
//! or a path jq would fail on, is `None`: the caller leaves the filter to
//! jaq.

use std::{borrow::Cow, cmp::Ordering};

use crate::scan;

/// A scalar key, in jq's order: null < false < true < numbers < strings.
#[derive(Debug, Clone)]
pub(crate) enum Key<'a> {
    Null,
    False,
    True,
    Num(f64),
    /// The text's first 16 bytes as a number (zero-padded), which orders
    /// most pairs without a call to `memcmp`, and the text.
    Str(u128, Cow<'a, [u8]>),
}

impl<'a> Key<'a> {
    /// A string key of UTF-8 `text`.
    pub(crate) fn str(text: Cow<'a, [u8]>) -> Self {
        let mut head = [0u8; 16];
        let n = text.len().min(16);
        head[..n].copy_from_slice(&text[..n]);
        Key::Str(u128::from_be_bytes(head), text)
    }

    fn rank(&self) -> u8 {
        match self {
            Key::Null => 0,
            Key::False => 1,
            Key::True => 2,
            Key::Num(_) => 3,
            Key::Str(..) => 4,
        }
    }

    /// `-key` as jq evaluates it: numbers only (jq errors on the rest).
    pub(crate) fn negated(self) -> Option<Self> {
        match self {
            Key::Num(x) => Some(Key::Num(-x)),
            _ => None,
        }
    }
}

impl Ord for Key<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            // Numbers from JSON text are never NaN.
            (Key::Num(a), Key::Num(b)) => a.partial_cmp(b).unwrap_or(Ordering::Equal),
            // Equal heads leave the order to the whole texts (padding
            // cannot tell "a" from "a\0").
            (Key::Str(ha, a), Key::Str(hb, b)) => ha.cmp(hb).then_with(|| a.cmp(b)),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for Key<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Key<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Key<'_> {}

/// The raw JSON text at `path` in an object line: `Some(None)` when jq
/// reads null there without an error (a missing key, or a null on the
/// way), `None` when the line is not a plain object or jq would fail
/// (indexing a number, string, boolean or array).
pub(crate) fn raw_at<'a>(line: &'a [u8], path: &[String]) -> Option<Option<&'a [u8]>> {
    let mut object = line.trim_ascii();
    let mut raw: Option<&[u8]> = None;
    for (depth, name) in path.iter().enumerate() {
        if depth > 0 {
            match raw {
                None | Some(b"null") => return Some(None),
                Some(inner) if inner.first() == Some(&b'{') => object = inner,
                Some(_) => return None,
            }
        }
        let mut found = None;
        // Every member is visited: the last of duplicate keys wins, as in jq.
        let end = scan::object_members(object, 0, |key, span| {
            if key == name.as_bytes() {
                found = Some(&object[span]);
            }
            Some(())
        })?;
        if depth == 0 && end != object.len() {
            return None;
        }
        raw = found;
    }
    Some(raw)
}

/// The key of raw JSON text (`None` for a missing value: null).
pub(crate) fn key_of(raw: Option<&[u8]>) -> Option<Key<'_>> {
    let Some(raw) = raw else {
        return Some(Key::Null);
    };
    Some(match raw {
        b"null" => Key::Null,
        b"false" => Key::False,
        b"true" => Key::True,
        [b'"', ..] => Key::str(string(raw)?),
        [b'-' | b'0'..=b'9', ..] => Key::Num(std::str::from_utf8(raw).ok()?.parse().ok()?),
        _ => return None,
    })
}

/// The UTF-8 text of a JSON string literal (with its quotes).
fn string(raw: &[u8]) -> Option<Cow<'_, [u8]>> {
    let inner = raw.get(1..raw.len().checked_sub(1)?)?;
    if inner.contains(&b'\\') {
        // Lone surrogates fail here; jq would replace them, so jaq decides.
        let s: String = serde_json::from_slice(raw).ok()?;
        Some(Cow::Owned(s.into_bytes()))
    } else {
        std::str::from_utf8(inner).ok()?;
        Some(Cow::Borrowed(inner))
    }
}

#[cfg(test)]
#[path = "../../../lro-core/tests/support/json.rs"]
mod json;

#[cfg(test)]
mod tests {
    use lro_core::records::scan::Members;
    use proptest::prelude::*;

    use super::*;

    fn key(raw: &str) -> Key<'_> {
        key_of(Some(raw.as_bytes())).unwrap()
    }

    fn path(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn orders_as_jq_does() {
        let sorted = [
            "null", "false", "true", "-1e3", "-0.5", "0", "1e-05", "1", "2.5", r#""""#, r#""A""#,
            r#""a""#, r#""ab""#, r#""é""#,
        ];
        for pair in sorted.windows(2) {
            assert!(key(pair[0]) < key(pair[1]), "{} < {}", pair[0], pair[1]);
        }
        assert_eq!(key("1"), key("1.0"));
        assert_eq!(key("1e0"), key("1"));
        assert_eq!(key("-0"), key("0"));
        assert_eq!(key(r#""caf\u00e9""#), key(r#""café""#));
        assert_eq!(key(r#""a\"b""#), Key::str(Cow::Borrowed(b"a\"b")));
        // Beyond the 16 bytes of the head, and padding against a NUL.
        assert!(key(r#""2025-01-02T21:49:32Z""#) < key(r#""2025-01-02T21:49:33Z""#));
        assert!(key(r#""a""#) < key(r#""a\u0000""#));
        assert!(key(r#""a\u0000""#) < key(r#""a\u0001""#));
        // Past 2^53 integers are doubles, as in jq 1.6.
        assert_eq!(key("12345678901234567890"), key("12345678901234567891"));
        assert_eq!(key_of(None), Some(Key::Null));
        assert!(key_of(Some(b"[1]")).is_none());
        assert!(key_of(Some(b"{}")).is_none());
        assert!(key_of(Some(br#""\ud800""#)).is_none());
        assert_eq!(key("3").negated(), Some(key("-3")));
        assert!(key("null").negated().is_none());
        assert!(key(r#""x""#).negated().is_none());
    }

    #[test]
    fn reads_the_value_at_a_path() {
        let line = br#"{"a":1,"p":{"c":0.5,"n":null},"s":"x","a":2,"z":null}"#;
        let at = |p: &[&str]| raw_at(line, &path(p)).map(|r| r.map(|b| b.to_vec()));
        assert_eq!(at(&["a"]), Some(Some(b"2".to_vec())));
        assert_eq!(at(&["p", "c"]), Some(Some(b"0.5".to_vec())));
        assert_eq!(at(&["missing"]), Some(None));
        assert_eq!(at(&["p", "missing"]), Some(None));
        assert_eq!(at(&["z", "x"]), Some(None));
        assert_eq!(at(&["missing", "x"]), Some(None));
        assert_eq!(at(&["p", "n", "x"]), Some(None));
        // jq fails on these: not ours to answer.
        assert_eq!(at(&["s", "x"]), None);
        assert_eq!(at(&["a", "x"]), None);
        assert_eq!(raw_at(b"[1]", &path(&["a"])), None);
        assert_eq!(raw_at(b"{\"a\":1} x", &path(&["a"])), None);
        assert_eq!(raw_at(br#"{"a\u0062":1}"#, &path(&["ab"])), None);
    }

    /// [`raw_at`] by serde_json: the last of duplicate keys at each step.
    fn serde_raw_at<'a>(line: &'a str, path: &[String]) -> Option<Option<&'a str>> {
        let mut object = line.trim_matches([' ', '\t', '\n', '\r']);
        let mut raw: Option<&str> = None;
        for (depth, name) in path.iter().enumerate() {
            if depth > 0 {
                match raw {
                    None | Some("null") => return Some(None),
                    Some(inner) if inner.starts_with('{') => object = inner,
                    Some(_) => return None,
                }
            }
            let Members(members) = serde_json::from_str(object).ok()?;
            raw = members
                .into_iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.get());
        }
        Some(raw)
    }

    /// The key serde_json reads in a scalar's text.
    fn serde_key(raw: &str) -> Option<Key<'static>> {
        Some(match serde_json::from_str::<serde_json::Value>(raw).ok()? {
            serde_json::Value::Null => Key::Null,
            serde_json::Value::Bool(false) => Key::False,
            serde_json::Value::Bool(true) => Key::True,
            serde_json::Value::Number(n) => Key::Num(n.as_f64()?),
            serde_json::Value::String(s) => Key::str(Cow::Owned(s.into_bytes())),
            _ => return None,
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 48,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn values_at_a_path_are_read_as_serde_json_reads_them(
            line in json::object(),
            ws in any::<u64>(),
            path in prop::collection::vec(
                prop::sample::select(vec!["id", "a", "namespace", "tags", "x y", "é", "né"]),
                1..3,
            ),
        ) {
            let line = line.render(ws);
            let path: Vec<String> = path.into_iter().map(str::to_owned).collect();
            let got = raw_at(line.as_bytes(), &path);
            let expected = serde_raw_at(&line, &path).map(|r| r.map(str::as_bytes));
            // Declined (the caller runs jaq) only for a key with an escape.
            prop_assert!(got == expected || (got.is_none() && line.contains('\\')), "{} {:?}", line, path);
        }

        #[test]
        fn scalar_keys_are_read_as_serde_json_reads_them(s in json::scalar()) {
            let json::Json::Scalar(raw) = s else {
                unreachable!("a scalar")
            };
            let got = key_of(Some(raw.as_bytes()));
            // Out of f64's range (jq reads the largest double) or a lone
            // surrogate (jaq decides): serde_json reads no key, no claim.
            match (got, serde_key(&raw)) {
                // serde_json's default parse of a float may be one unit in
                // the last place off (1061e23: 1.0609999999999998e26); the
                // key is the correctly rounded double, as jq 1.6's strtod.
                (Some(Key::Num(a)), Some(Key::Num(b))) => {
                    prop_assert!((a - b).abs() <= a.abs() * f64::EPSILON, "{} {} {}", raw, a, b);
                }
                (got, Some(expected)) => prop_assert_eq!(got, Some(expected), "{}", raw),
                (_, None) => {}
            }
        }
    }
}

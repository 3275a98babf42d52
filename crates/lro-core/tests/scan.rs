//! The record scanner (`lro_core::records::scan`) against serde_json on
//! generated text: on valid JSON it agrees with serde_json or declines (its
//! caller then parses); cut at any byte it still agrees or declines; broken
//! text never panics it.

#[path = "support/json.rs"]
mod json;

use std::{borrow::Cow, collections::HashMap};

use json::Json;
use lro_core::records::scan::{
    Members, minify, object_members, skip_ws, string_end, top_level_value, value_end,
};
use proptest::prelude::*;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

/// The end of the first value of `b` after `i`, by serde_json.
fn serde_value_end(b: &[u8], i: usize) -> Option<usize> {
    let mut values = serde_json::Deserializer::from_slice(&b[i..]).into_iter::<IgnoredAny>();
    values.next()?.ok()?;
    Some(i + values.byte_offset())
}

/// The text of top-level field `key` (the last of duplicates: a map keeps
/// the last value put in), by serde_json.
fn serde_field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let mut map: HashMap<Cow<'a, str>, &'a RawValue> = serde_json::from_str(text).ok()?;
    map.remove(key).map(RawValue::get)
}

/// Keys' bytes and values' text, in order.
type Scanned<'a> = Vec<(&'a [u8], &'a [u8])>;

/// The members `object_members` walks, and where it stopped.
fn scanned(b: &[u8]) -> Option<(Scanned<'_>, usize)> {
    let mut seen = Vec::new();
    let end = object_members(b, skip_ws(b, 0), |k, span| {
        seen.push((k, &b[span]));
        Some(())
    })?;
    Some((seen, end))
}

/// Keys the summaries and the tests ask for, and the first keys of `json`.
fn keys_of(json: &Json) -> Vec<String> {
    let mut keys: Vec<String> = ["id", "namespace", "score", "a", "né", "missing"]
        .map(str::to_owned)
        .to_vec();
    if let Json::Object(members) = json {
        keys.extend(
            members
                .iter()
                .take(4)
                .filter_map(|(k, _)| serde_json::from_str::<String>(k).ok()),
        );
    }
    keys
}

/// Byte positions to cut `len` bytes at: every one of a short text, about
/// 40 of a long one (a fuzz target cuts at every byte).
fn cuts(len: usize) -> impl Iterator<Item = usize> {
    (0..=len).step_by((len / 40).max(1))
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 32,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn value_ends_agree_with_serde_json(v in json::value(), ws in any::<u64>()) {
        let text = v.render(ws);
        let b = text.as_bytes();
        prop_assert_eq!(value_end(b, 0), serde_value_end(b, 0), "{}", text);
        let followed = format!("{text},1]");
        prop_assert_eq!(value_end(followed.as_bytes(), 0), Some(text.len()));
    }

    #[test]
    fn object_members_agree_with_serde_json(o in json::object(), ws in any::<u64>()) {
        let text = o.render(ws);
        let serde = serde_json::from_str::<Members<'_>>(&text);
        let Ok(Members(expected)) = serde else {
            // A key serde_json cannot decode (a lone surrogate) has an
            // escape, which the scan declines.
            prop_assert!(scanned(text.as_bytes()).is_none(), "{}", text);
            return Ok(());
        };
        match scanned(text.as_bytes()) {
            Some((members, end)) => {
                prop_assert_eq!(end, text.len());
                prop_assert_eq!(members.len(), expected.len());
                for ((k, v), (ek, ev)) in members.iter().zip(&expected) {
                    prop_assert_eq!(std::str::from_utf8(k).unwrap(), ek.as_ref());
                    prop_assert_eq!(*v, ev.get().as_bytes());
                }
            }
            // Declined: only where a key has an escape.
            None => prop_assert!(text.contains('\\'), "{}", text),
        }
    }

    #[test]
    fn top_level_values_agree_with_serde_json(
        o in json::object(),
        ws in any::<u64>(),
        pad in prop::sample::select(vec!["", " ", "\n", "\r\n\t"]),
    ) {
        let text = format!("{pad}{}{pad}", o.render(ws));
        for key in keys_of(&o) {
            prop_assert_eq!(top_level_value(&text, &key), serde_field(&text, &key), "{}", key);
        }
    }

    #[test]
    fn cut_text_is_declined_or_read_as_serde_json_reads_it(o in json::object(), ws in any::<u64>()) {
        let text = o.render(ws);
        let keys = &keys_of(&o)[1..=3];
        for cut in cuts(text.len()) {
            let b = &text.as_bytes()[..cut];
            if let Some(end) = value_end(b, 0) {
                prop_assert_eq!(Some(end), serde_value_end(b, 0), "cut at {}", cut);
            }
            if let Some((members, end)) = scanned(b) {
                let Members(expected) = serde_json::from_slice(&b[..end]).unwrap();
                prop_assert_eq!(members.len(), expected.len());
            }
            if let Some(prefix) = text.get(..cut) {
                for key in keys {
                    prop_assert_eq!(top_level_value(prefix, key), serde_field(prefix, key));
                }
            }
        }
    }

    #[test]
    fn broken_text_never_panics_the_scanner(
        o in json::object(),
        ws in any::<u64>(),
        breaks in json::breaks(),
    ) {
        let b = json::broken(o.render(ws).as_bytes(), &breaks);
        for i in 0..b.len().min(64) {
            let _ = value_end(&b, i);
            if b[i] == b'"' {
                let _ = string_end(&b, i);
            }
        }
        let _ = scanned(&b);
        if let Ok(text) = std::str::from_utf8(&b) {
            let _ = minify(text);
            for key in keys_of(&o) {
                let found = top_level_value(text, &key);
                // Where serde_json reads the text as an object, the same field.
                if serde_json::from_str::<Members<'_>>(text).is_ok() {
                    prop_assert_eq!(found, serde_field(text, &key));
                }
            }
        }
    }

    #[test]
    fn minified_text_is_the_compact_text(v in json::value(), ws in any::<u64>()) {
        prop_assert_eq!(minify(&v.render(ws)), v.compact());
    }

    #[test]
    fn string_ends_agree_with_serde_json(s in json::string_literal(), breaks in json::breaks()) {
        let b = s.as_bytes();
        prop_assert_eq!(string_end(b, 0), serde_value_end(b, 0));
        let broken = json::broken(b, &breaks);
        if broken.first() == Some(&b'"') && string_end(&broken, 0).is_some() {
            // A closed string: serde_json ends it there too, or refuses it
            // (a raw control byte, a bad escape).
            let end = string_end(&broken, 0);
            let serde = serde_value_end(&broken, 0);
            prop_assert!(serde.is_none() || serde == end, "{:?}", broken);
        }
    }
}

#[test]
fn values_deeper_than_serde_json_reads_are_still_walked() {
    // serde_json stops at 128 levels; the scanner has no limit and no
    // recursion, so a record it is given (already read by serde_json) can
    // never be too deep for it.
    let deep = format!("{{\"a\":{}1{}}}", "[".repeat(5000), "]".repeat(5000));
    assert_eq!(value_end(deep.as_bytes(), 0), Some(deep.len()));
    assert_eq!(top_level_value(&deep, "a").map(str::len), Some(10001));
}

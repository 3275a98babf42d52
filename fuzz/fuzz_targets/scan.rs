//! The record scanner (`lro_core::records::scan`) against serde_json on any
//! bytes: on text serde_json reads as one value the scanner finds the same
//! end, members and fields; cut at any byte it declines or agrees; on
//! anything else it never panics.

#![no_main]

use std::{borrow::Cow, collections::HashMap};

use libfuzzer_sys::fuzz_target;
use lro_core::records::scan::{
    Members, minify, object_members, skip_ws, string_end, top_level_value, value_end,
};
use serde_json::value::RawValue;

/// The end of the first value of `b` after `i`, by serde_json.
fn serde_value_end(b: &[u8], i: usize) -> Option<usize> {
    let mut values = serde_json::Deserializer::from_slice(&b[i..]).into_iter::<&RawValue>();
    values.next()?.ok()?;
    Some(i + values.byte_offset())
}

fuzz_target!(|data: &[u8]| {
    for i in 0..data.len().min(64) {
        let _ = value_end(data, i);
        if data[i] == b'"' {
            let _ = string_end(data, i);
        }
    }
    let _ = object_members(data, skip_ws(data, 0), |_, _| Some(()));
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = minify(text);
    let _ = top_level_value(text, "id");
    if serde_json::from_slice::<&RawValue>(data).is_err() {
        return;
    }
    let start = skip_ws(data, 0);
    let end = text.trim_end_matches([' ', '\t', '\n', '\r']).len();
    assert_eq!(value_end(data, start), Some(end), "value end");
    for cut in start..=end.min(start + 4096) {
        if let Some(e) = value_end(&data[..cut], start) {
            assert_eq!(
                Some(e),
                serde_value_end(&data[..cut], start),
                "cut at {cut}"
            );
        }
    }
    let compact = minify(text);
    assert_eq!(minify(&compact), compact, "minify twice");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&compact).ok(),
        serde_json::from_str::<serde_json::Value>(text).ok(),
        "minified value"
    );
    let Ok(Members(expected)) = serde_json::from_str::<Members<'_>>(text) else {
        return;
    };
    let mut seen = Vec::new();
    let walked = object_members(data, start, |k, span| {
        seen.push((k, &text[span]));
        Some(())
    });
    match walked {
        Some(e) => {
            assert_eq!(e, end, "object end");
            assert_eq!(seen.len(), expected.len(), "member count");
            for ((k, v), (ek, ev)) in seen.iter().zip(&expected) {
                assert_eq!(k, &ek.as_bytes(), "key");
                assert_eq!(*v, ev.get(), "value");
            }
        }
        None => {
            assert!(expected.iter().any(|(k, _)| matches!(k, Cow::Owned(_))) || text.contains('\\'))
        }
    }
    let fields: HashMap<Cow<'_, str>, &RawValue> = serde_json::from_str(text).unwrap();
    for (key, _) in expected.iter().take(8) {
        assert_eq!(
            top_level_value(text, key),
            fields.get(key).map(|v| v.get()),
            "field {key}"
        );
    }
});

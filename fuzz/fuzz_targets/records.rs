//! The offload's record split on any text: every record is one line of
//! JSON; a JSON array's records are its elements in order, as written (up
//! to whitespace); text no rule takes is one record per line, byte for byte.

#![no_main]

use libfuzzer_sys::fuzz_target;
use lro_core::records::{RecordKind, RecordSet, minify};
use serde_json::value::RawValue;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let set = RecordSet::from_text(text);
    for record in &set.records {
        assert!(!record.contains(['\n', '\r']), "a record on several lines");
        assert!(
            serde_json::from_str::<&RawValue>(record).is_ok(),
            "a record that is not JSON: {record}"
        );
    }
    match set.kind {
        RecordKind::JsonArray => {
            let items: Vec<&RawValue> = serde_json::from_str(text.trim()).expect("an array");
            assert_eq!(set.len(), items.len());
            for (record, item) in set.records.iter().zip(&items) {
                assert_eq!(minify(record), minify(item.get()));
            }
        }
        RecordKind::TextLines => {
            let lines: Vec<&str> = text.split_terminator('\n').collect();
            assert_eq!(set.len(), lines.len());
            for (n, (record, line)) in set.records.iter().zip(&lines).enumerate() {
                let expected = format!(
                    "{{\"line\":{},\"text\":{}}}",
                    n + 1,
                    serde_json::to_string(line).unwrap()
                );
                assert_eq!(record, &expected);
            }
        }
        _ => {}
    }
});

//! The slurping fast paths (`sort_by`, `group_by(..) | map({.., count:
//! length})`) against the real jq on records made to trip them: ties,
//! missing keys and nulls, one number in several spellings, strings with
//! escapes and non-ASCII text, keys of every scalar type mixed; and the
//! keys they leave to jaq (arrays, objects).

mod support;

use lro_extract::{ExtractConfig, ExtractRequest, Extractor};
use support::*;

/// Sort keys as other serializers may write them; equal values in
/// different spellings are there on purpose.
const KEYS: [&str; 24] = [
    "null",
    "false",
    "true",
    "1",
    "1.0",
    "1e0",
    "10E-1",
    "-0",
    "0",
    "0.5",
    "-2.5e3",
    "12345678901234567890",
    "12345678901234567891",
    r#""a""#,
    r#""\u0061""#,
    r#""café""#,
    r#""caf\u00e9""#,
    r#""b\"q""#,
    r#""tab\there""#,
    r#""日本""#,
    r#""\ud83d\ude00""#,
    r#""""#,
    r#""A""#,
    r#""é""#,
];

const NUMBERS: [&str; 8] = ["1", "1.0", "1e0", "-0", "0.25", "2.50", "-1E2", "0.1"];

/// A record whose fields `k`, `n` and `p.c` are picked from the lists
/// above, some missing; `i` shows where each record came from.
fn record(rng: &mut Rng, i: usize) -> String {
    let mut fields = Vec::new();
    if rng.below(8) > 0 {
        fields.push(format!("\"k\":{}", KEYS[rng.below(KEYS.len())]));
    }
    fields.push(format!("\"n\": {}", NUMBERS[rng.below(NUMBERS.len())]));
    match rng.below(4) {
        0 => {}
        1 => fields.push("\"p\":null".to_owned()),
        2 => fields.push("\"p\":{}".to_owned()),
        _ => fields.push(format!(
            "\"p\":{{\"x\":[1,\"}}\"],\"c\":{}}}",
            KEYS[rng.below(KEYS.len())]
        )),
    }
    fields.push(format!("\"i\":{i}"));
    if rng.below(3) == 0 {
        fields.reverse();
    }
    format!("{{{}}}", fields.join(","))
}

fn run(ex: &Extractor, file: &str, query: &str) -> String {
    let req = ExtractRequest::new(file).query(query).slurp(true);
    let out = ex.run(&req).unwrap_or_else(|e| panic!("{query}: {e}"));
    assert!(!out.truncated, "{query}: truncated");
    out.results().to_owned()
}

fn jq(path: &std::path::Path, query: &str) -> String {
    jq_stdout(path, &["-s".to_owned(), "-c".to_owned(), query.to_owned()])
}

#[test]
fn sorts_and_counts_as_jq_does_on_tricky_keys() {
    assert!(have_jq(), "the jq binary is required");
    let dir = tempfile::tempdir().unwrap();
    let ex = Extractor::new(ExtractConfig::new(dir.path()));
    let queries = [
        "sort_by(.k)",
        "sort_by(-.n)",
        "sort_by(.n)",
        "sort_by(.p.c)",
        "group_by(.k) | map({k: .[0].k, count: length})",
        "group_by(.n) | map({count: length, n: (.[0] | .n)})",
        "group_by(.p.c) | map({c: .[0].p.c, count: length})",
    ];
    let mut records_compared = 0;
    for seed in 0..8u64 {
        let mut rng = Rng::new(seed);
        let text: Vec<String> = (0..120).map(|i| record(&mut rng, i)).collect();
        let path = offload_text(dir.path(), &text.join("\n"));
        let file = path.to_string_lossy().into_owned();
        for query in queries {
            let native = run(&ex, &file, query);
            let expected = jq(&path, query);
            assert_same_text(&native, &expected, &format!("seed {seed}, {query}"));
            records_compared += native.matches("\"i\":").count();
        }
    }
    assert!(
        records_compared > 3000,
        "{records_compared} records compared"
    );
}

#[test]
fn keys_left_to_jaq_still_give_jq_output() {
    assert!(have_jq(), "the jq binary is required");
    let dir = tempfile::tempdir().unwrap();
    let ex = Extractor::new(ExtractConfig::new(dir.path()));
    let text = [
        r#"{"k":[2],"i":0}"#,
        r#"{"k":{"a":1},"i":1}"#,
        r#"{"k":"s","i":2}"#,
        r#"{"k":[1,2],"i":3}"#,
        r#"{"k":null,"i":4}"#,
        r#"{"k":[1],"i":5}"#,
    ];
    let path = offload_text(dir.path(), &text.join("\n"));
    let file = path.to_string_lossy().into_owned();
    for query in [
        "sort_by(.k)",
        "group_by(.k) | map({k: .[0].k, count: length})",
    ] {
        assert_same_text(&run(&ex, &file, query), &jq(&path, query), query);
    }
    // jq fails on `-"s"` and on `"s".c`; so does the engine, and says so.
    for query in ["sort_by(-.k)", "sort_by(.k.c)"] {
        let req = ExtractRequest::new(&file).query(query).slurp(true);
        let out = ex.run(&req).unwrap();
        assert_eq!(
            (out.count, out.failed, out.last_failed),
            (0, 1, true),
            "{query}"
        );
        let notice = out.notice.unwrap_or_default();
        assert!(
            notice.starts_with("the filter failed: "),
            "{query}: {notice}"
        );
    }
}

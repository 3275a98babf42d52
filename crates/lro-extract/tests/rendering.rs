//! One rendering of a value, whichever path serves the filter: the raw-line
//! fast paths, projection and the plain jaq path print the same bytes, and
//! those bytes are what jq prints (strings byte for byte, numbers by value).

mod support;

use lro_extract::{ExtractConfig, ExtractRequest, Extractor};
use serde_json::json;
use support::*;

fn engines(dir: &std::path::Path) -> (Extractor, Extractor) {
    let cfg = ExtractConfig::new(dir);
    (
        Extractor::new(cfg.clone()),
        Extractor::new(cfg.fast_paths(false)),
    )
}

fn run(ex: &Extractor, file: &str, query: &str, vars: &[(&str, &str)]) -> String {
    let mut req = ExtractRequest::new(file).query(query);
    for (k, v) in vars {
        req = req.param(*k, json!(v));
    }
    let out = ex.run(&req).unwrap_or_else(|e| panic!("{query}: {e}"));
    out.results().to_owned()
}

/// Records as another tool might write them: escapes for plain letters,
/// exponents, trailing zeros, big integers, spaces.
const ODD: &str = r#"{"id": "caf\u00e9", "n": -1.5e3, "x": 1.0, "tags": ["a\/b", "\u0041"]}
{"id":"plain","n":12345678901234567890,"x":1e17,"tags":[],"nest":{"deep":[1.50,"\u00fc"]}}
{"id":"\u00fcber","n":0.10,"x":-0.0,"s":"tab\tand\u007f","tags":["x"]}
{"id":"big","n":1E400,"x":123456789012345678,"tags":[]}"#;

#[test]
fn the_issue_table_prints_as_jq_does_on_every_path() {
    assert!(have_jq(), "the jq binary is required");
    let dir = tempfile::tempdir().unwrap();
    let path = offload_text(dir.path(), ODD);
    let file = path.to_string_lossy().into_owned();
    let (fast, plain) = engines(dir.path());
    for query in [
        ".id",
        ".n",
        "[.n]",
        "[.n,(keys|length)]",
        "{id,n}",
        "{id,n,x:1}",
        "select(.id == \"café\")",
        ".",
        ".tags",
        ".nest",
        "{id, x}",
        "select(.x > 0) | .x",
        "select(.tags | index(\"x\"))",
    ] {
        let a = run(&fast, &file, query, &[]);
        let b = run(&plain, &file, query, &[]);
        assert_eq!(a, b, "{query}: fast paths and plain jaq differ");
        let jq = jq_stdout(&path, &["-c".to_owned(), query.to_owned()]);
        assert_same_text(&a, &jq, query);
    }
    // The table of the issue, byte for byte.
    assert_eq!(
        run(&fast, &file, ".id", &[]).lines().next(),
        Some("\"café\"")
    );
    assert_eq!(run(&fast, &file, ".n", &[]).lines().next(), Some("-1500"));
    assert_eq!(
        run(&fast, &file, "[.n]", &[]).lines().next(),
        Some("[-1500]")
    );
    assert_eq!(
        run(&fast, &file, "{id,n,x:1}", &[]).lines().next(),
        Some(r#"{"id":"café","n":-1500,"x":1}"#)
    );
}

/// A generated record, written with a random choice of equivalent forms.
fn record(rng: &mut Rng, i: usize) -> String {
    const WORDS: [&str; 6] = ["café", "naïve", "plain", "日本", "tab\there", "q\"uote"];
    let number = |rng: &mut Rng| -> String {
        match rng.below(9) {
            0 => format!("{}", rng.below(1000)),
            1 => format!("-{}.{}e{}", rng.below(9) + 1, rng.below(100), rng.below(6)),
            2 => format!("{}.{:02}0", rng.below(100), rng.below(100)),
            3 => "12345678901234567890".to_owned(),
            4 => format!("{}E-{}", rng.below(9) + 1, rng.below(8) + 1),
            5 => "-0.0".to_owned(),
            6 => format!("{}.0", rng.below(50)),
            7 => "1e17".to_owned(),
            _ => format!("0.{}", rng.below(1000)),
        }
    };
    let string = |rng: &mut Rng| -> String {
        let word = WORDS[rng.below(WORDS.len())];
        // Escape some characters the way other serializers do.
        let mut s = String::from("\"");
        for c in word.chars() {
            match c {
                '"' => s.push_str("\\\""),
                '\t' => s.push_str("\\t"),
                c if !c.is_ascii() && rng.below(2) == 0 => {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        s.push_str(&format!("\\u{u:04x}"));
                    }
                }
                'a' if rng.below(3) == 0 => s.push_str("\\u0061"),
                c => s.push(c),
            }
        }
        s.push('"');
        s
    };
    let sp = |rng: &mut Rng| if rng.below(3) == 0 { " " } else { "" };
    let mut fields = vec![format!("\"id\":{}", string(rng))];
    if rng.below(4) > 0 {
        fields.push(format!("\"n\":{}{}", sp(rng), number(rng)));
    }
    // Always there: jq errors on the string filters over a missing field.
    fields.push(format!("\"kind\":{}", string(rng)));
    if rng.below(2) == 0 {
        fields.push(format!(
            "\"nest\":{{\"deep\":[{},{}{}],\"k\":{}}}",
            number(rng),
            sp(rng),
            string(rng),
            string(rng)
        ));
    }
    fields.push(format!("\"tags\":[{},{}]", string(rng), string(rng)));
    fields.push(format!("\"i\":{i}"));
    format!("{{{}}}", fields.join(&format!(",{}", sp(rng))))
}

#[test]
fn fast_paths_print_exactly_what_jaq_prints_on_generated_records() {
    let dir = tempfile::tempdir().unwrap();
    let (fast, plain) = engines(dir.path());
    let queries: &[(&str, &[(&str, &str)])] = &[
        (".id", &[]),
        (".n", &[]),
        (".nest", &[]),
        (".nest.deep", &[]),
        ("{id,n}", &[]),
        ("{id,nest,tags}", &[]),
        ("{id, m: .n}", &[]),
        (".", &[]),
        ("select(.id == $v)", &[("v", "café")]),
        ("select(.kind | startswith($p))", &[("p", "na")]),
        ("select(.tags | index($t))", &[("t", "plain")]),
        ("select(.id | test(\"é\"))", &[]),
        ("[.id, .n]", &[]),
    ];
    let mut lines_compared = 0;
    for seed in 0..12u64 {
        let mut rng = Rng::new(seed);
        let text: Vec<String> = (0..60).map(|i| record(&mut rng, i)).collect();
        let path = offload_text(dir.path(), &text.join("\n"));
        let file = path.to_string_lossy().into_owned();
        for (query, vars) in queries {
            let a = run(&fast, &file, query, vars);
            let b = run(&plain, &file, query, vars);
            assert_eq!(a, b, "seed {seed}, {query}");
            lines_compared += a.lines().count();
        }
    }
    assert!(lines_compared > 3000, "{lines_compared} lines compared");
}

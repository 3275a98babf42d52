//! How many tokens the descriptor costs, and the ceilings it must stay under.
//!
//! The setting: the demo's 500 memories offloaded by an authenticated
//! caller's recall into its folder `p-{digest}` of an output directory, 63
//! characters in all, the longest the ceilings are promised for, measured
//! with the `ScriptAware` estimator (characters / 4 on this ASCII text).
//! The path appears once per spec recipe, so its length moves every figure.
//!
//! `cargo test -p memory-server --test descriptor_size -- --nocapture`
//! prints the table.

use lro_core::{
    DescriptorProfile, Detail, GuidanceStyle, OffloadInput, OffloadResponse, Offloader, RecordSet,
    ScriptAware, TokenEstimator,
    fit::{COMPACT_CEILING_TOKENS, SPEC_CEILING_TOKENS},
    principal::Principal,
    tokens::Bpe,
};
use lro_corpus::Corpus;
use lro_store::DirSink;
use serde_json::Value;

/// The output directory's length the figures are quoted for, the caller's
/// `p-{digest}` included.
const DIR_CHARS: usize = 63;

struct Measured {
    detail: Detail,
    native: bool,
    style: GuidanceStyle,
    tokens: usize,
    /// The same text's o200k count.
    o200k: usize,
}

fn template(native: bool) -> &'static str {
    if native { "native" } else { "shell" }
}

/// Whether `v` satisfies `schema`, for the keywords the line schema uses.
fn validates(schema: &Value, v: &Value) -> bool {
    let type_ok = |t: &Value| match t.as_str() {
        Some("object") => v.is_object(),
        Some("array") => v.is_array(),
        Some("string") => v.is_string(),
        Some("boolean") => v.is_boolean(),
        Some("null") => v.is_null(),
        Some("number") => v.is_number(),
        Some("integer") => v.as_f64().is_some_and(|n| n.fract() == 0.0),
        _ => false,
    };
    let types_ok = match &schema["type"] {
        Value::Null => true,
        Value::Array(many) => many.iter().any(type_ok),
        one => type_ok(one),
    };
    let props_ok = match (schema["properties"].as_object(), v.as_object()) {
        (Some(props), Some(obj)) => props
            .iter()
            .all(|(k, s)| obj.get(k).is_none_or(|child| validates(s, child))),
        _ => true,
    };
    let items_ok = match (schema.get("items"), v.as_array()) {
        (Some(s), Some(items)) => items.iter().all(|item| validates(s, item)),
        _ => true,
    };
    let required_ok = match (schema["required"].as_array(), v.as_object()) {
        (Some(keys), Some(obj)) => keys
            .iter()
            .all(|k| k.as_str().is_some_and(|k| obj.contains_key(k))),
        _ => true,
    };
    types_ok && props_ok && items_ok && required_ok
}

/// Checks what the spec requires of a full descriptor (or, compact, what
/// that profile promises), returns its tokens.
fn check_full(
    text: &str,
    path: &str,
    (detail, native, style): (Detail, bool, GuidanceStyle),
    whole_guidance: bool,
    records: &[Value],
) -> usize {
    let d: OffloadResponse = serde_json::from_str(text).expect("an OffloadResponse");
    assert_eq!(d.file_path, path);
    assert_eq!(d.summary.count, 500);
    assert_eq!(d.summary.detail, detail);
    assert_eq!(d.jq_recipes.len(), 10);
    for r in &d.jq_recipes {
        assert!(!r.description.is_empty());
    }
    assert_eq!(d.guidance.contains("lro_extract"), native, "{}", d.guidance);
    if style == GuidanceStyle::Compact {
        assert_eq!(text.matches(path).count(), 1, "the path once: {text}");
        assert!(d.line_schema.is_null(), "no line schema");
        for needle in ["500 memories", &format!("detail: {detail}"), "file_path"] {
            assert!(d.guidance.contains(needle), "{needle} in {}", d.guidance);
        }
        // Each recipe runs as the guidance says, with the path put back.
        for r in &d.jq_recipes {
            let command = format!("tail -n +2 {path} | jq {}", r.command);
            let out = std::process::Command::new("sh")
                .args(["-c", &command])
                .output()
                .expect("sh and jq");
            assert!(out.status.success(), "{command}: {out:?}");
        }
        return ScriptAware.estimate(text);
    }
    for r in &d.jq_recipes {
        assert!(r.command.contains(path), "{}", r.command);
    }
    // At the default directory's length the guidance is the template's
    // whole; at 63 characters it may be brief, without the worked example
    // or the list of patterns (`lro_core::fit`).
    if whole_guidance {
        let whole = if native {
            "- Count with conditions: "
        } else {
            "Common patterns:"
        };
        assert!(d.guidance.contains(whole), "{}", d.guidance);
    }
    if native && style == GuidanceStyle::Spec && d.guidance.contains("- Count with conditions: ") {
        run_worked_example(&d.guidance, path, records);
    }
    for needle in ["500 memories", &format!("Detail level: {detail}"), path] {
        assert!(d.guidance.contains(needle), "{needle} in {}", d.guidance);
    }
    // Cut to the room left, the schema says what it leaves out.
    assert!(
        d.line_schema["properties"]["namespace"].is_object()
            || d.line_schema["$comment"].is_string(),
        "{}",
        d.line_schema
    );
    for record in records {
        assert!(validates(&d.line_schema, record), "{record}");
    }
    ScriptAware.estimate(text)
}

/// Runs the guidance's worked example verbatim through the extractor, and
/// checks it counts what its conditions say, over the records themselves.
fn run_worked_example(guidance: &str, path: &str, records: &[Value]) {
    let line = guidance
        .lines()
        .find_map(|l| l.strip_prefix("- Count with conditions: "))
        .unwrap_or_else(|| panic!("a worked example in {guidance}"));
    let conds = line
        .strip_prefix("where=")
        .and_then(|l| l.strip_suffix(", count=true"))
        .unwrap_or_else(|| panic!("where=[...], count=true: {line}"));
    let conds: Vec<Value> = serde_json::from_str(conds).unwrap();
    assert_eq!(conds.len(), 3, "prefix, comparison and text search: {line}");
    let request: lro_extract::ExtractRequest = serde_json::from_value(
        serde_json::json!({"file_path": path, "where": conds, "count": true}),
    )
    .unwrap();
    let root = std::path::Path::new(path).parent().unwrap();
    let out = lro_extract::Extractor::new(lro_extract::ExtractConfig::new(root))
        .run(&request)
        .unwrap();
    let got: Value = serde_json::from_str(out.text.trim()).unwrap();
    let holds = |r: &Value, c: &Value| {
        let field = &r[c["field"].as_str().unwrap()];
        match c["op"].as_str().unwrap() {
            "prefix" => field
                .as_str()
                .is_some_and(|s| s.starts_with(c["value"].as_str().unwrap())),
            "gte" => field
                .as_f64()
                .is_some_and(|n| n >= c["value"].as_f64().unwrap()),
            "contains" => field.as_str().is_some_and(|s| {
                s.to_lowercase()
                    .contains(&c["value"].as_str().unwrap().to_lowercase())
            }),
            op => panic!("unexpected op {op}"),
        }
    };
    let truth = records
        .iter()
        .filter(|r| conds.iter().all(|c| holds(r, c)))
        .count();
    assert!(truth > 0, "the example counts something: {line}");
    assert_eq!(got["count"], truth, "{line}");
}

#[test]
fn descriptors_stay_under_their_ceilings() {
    let tmp = tempfile::tempdir().unwrap();
    // "lro-" and seven random characters: as long as the default directory,
    // the per-user `/tmp/lro-{uid}`, for any uid below 10^7.
    let short = tempfile::Builder::new()
        .prefix("lro-")
        .rand_bytes(7)
        .tempdir_in("/tmp")
        .unwrap();
    let caller = Principal::new("alice");
    let folder = caller.dir(std::path::Path::new("")).to_str().unwrap().len();
    let pad = DIR_CHARS - tmp.path().to_str().unwrap().len() - 2 - folder;
    let root = tmp.path().join("d".repeat(pad));
    assert_eq!(caller.dir(&root).to_str().unwrap().len(), DIR_CHARS);
    for (setting, root, caller, whole_guidance) in [
        (
            "the default directory's length, 16 characters",
            short.path(),
            Principal::anonymous(),
            true,
        ),
        (
            "a 63-character directory, `p-{digest}` included",
            root.as_path(),
            caller,
            false,
        ),
    ] {
        println!("\nAt {setting}:\n");
        measure(root, &caller, whole_guidance);
    }
}

/// Offloads the corpus at each detail level in every guidance style, checks
/// each descriptor and its ceiling, and prints the figures.
fn measure(root: &std::path::Path, caller: &Principal, whole_guidance: bool) {
    let corpus = Corpus::default_corpus();
    let tokens_of = |v: &Value| ScriptAware.estimate(&v.to_string());
    let mut rows = Vec::new();
    let mut minimal = Vec::new();
    let mut parts = Vec::new();
    for detail in Detail::ALL {
        let text = Corpus::to_json_array(corpus.memories(), detail);
        let records = RecordSet::from_text(&text);
        let parsed: Vec<Value> = serde_json::from_str(&text).unwrap();
        let tokens = ScriptAware.estimate(&text);
        let input = || {
            OffloadInput::new("recall_memories", "recall", &records, tokens)
                .principal(caller.clone())
                .detail(Some(detail))
                .query(Some("caching".to_owned()))
                .score_range(Some((0.1667, 1.0)))
        };
        for style in [GuidanceStyle::Spec, GuidanceStyle::Compact] {
            for native in [false, true] {
                let out = Offloader::new(DirSink::new(root))
                    .native_extract(native)
                    .guidance(style)
                    .offload(input(), &|| false)
                    .unwrap();
                let path = out.result.path.to_str().unwrap();
                let tokens = check_full(
                    &out.text,
                    path,
                    (detail, native, style),
                    whole_guidance,
                    &parsed,
                );
                if style == GuidanceStyle::Spec && !native {
                    let d: Value = serde_json::from_str(&out.text).unwrap();
                    let commands: Vec<&str> = d["jq_recipes"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|r| r["command"].as_str().unwrap())
                        .collect();
                    parts.push(format!(
                        "{detail}: summary {}, line_schema {}, jq_recipes {} (commands {}), guidance {}",
                        tokens_of(&d["summary"]),
                        tokens_of(&d["line_schema"]),
                        tokens_of(&d["jq_recipes"]),
                        ScriptAware.estimate_parts(&commands),
                        tokens_of(&d["guidance"]),
                    ));
                }
                rows.push(Measured {
                    detail,
                    native,
                    style,
                    tokens,
                    o200k: Bpe::O200k.estimate(&out.text),
                });
            }
        }
        let out = Offloader::new(DirSink::new(root))
            .profile(DescriptorProfile::Minimal)
            .offload(input(), &|| false)
            .unwrap();
        minimal.push(ScriptAware.estimate(&out.text).to_string());
    }

    println!("| guidance | template | light | medium | full |");
    println!("|---|---|---|---|---|");
    for style in [GuidanceStyle::Spec, GuidanceStyle::Compact] {
        for native in [false, true] {
            let figures: Vec<String> = Detail::ALL
                .iter()
                .map(|d| {
                    let row = rows
                        .iter()
                        .find(|r| r.detail == *d && r.native == native && r.style == style)
                        .unwrap();
                    format!("{} ({})", row.tokens, row.o200k)
                })
                .collect();
            println!(
                "| {} | {} | {} |",
                format!("{style:?}").to_lowercase(),
                template(native),
                figures.join(" | ")
            );
        }
    }
    println!("| minimal profile | | {} |", minimal.join(" | "));
    println!("\nParts of the spec-guidance shell descriptor:");
    for line in &parts {
        println!("- {line}");
    }

    for r in &rows {
        let ceiling = match r.style {
            GuidanceStyle::Spec => SPEC_CEILING_TOKENS,
            GuidanceStyle::Compact => COMPACT_CEILING_TOKENS,
        };
        assert!(
            r.tokens <= ceiling,
            "{:?} {} guidance at {}: {} tokens, ceiling {ceiling}",
            r.style,
            template(r.native),
            r.detail,
            r.tokens
        );
    }
}

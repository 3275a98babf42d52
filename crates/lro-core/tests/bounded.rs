//! Every descriptor stays within its ceiling, and every recipe runs as
//! given, whatever the records: generated arrays of mixed element types,
//! missing and type-changing fields, empty arrays and objects, unicode and
//! very long keys, long values, hundreds of fields, deep nesting, one-line
//! blobs and long log lines, two arrays of wide records, offloaded into
//! an output directory of 63 characters with an authenticated caller's
//! `p-{digest}/`, by a tool of a short name and by one of the longest
//! operation name a file name holds (48 characters).
//!
//! The recipes run through the real jq 1.6 (`/usr/bin/jq`; the test fails
//! when it is missing or another version), one process per recipe, for a
//! few cases; the ceilings are checked for many more.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use lro_core::{
    Detail, GuidanceStyle, OffloadInput, Offloader, RecordSet,
    fit::{COMPACT_CEILING_TOKENS, SPEC_CEILING_TOKENS, descriptor_tokens},
    principal::Principal,
    tokens::{Bpe, TokenEstimator},
};
use proptest::{prelude::*, test_runner::Config};
use serde_json::{Map, Value, json};

#[path = "support/sink.rs"]
mod sink;

/// The longest output directory the ceilings hold for, `p-{digest}` included.
const DIR_CHARS: usize = 63;
const JQ: &str = "/usr/bin/jq";
/// A tool whose name is the longest operation a file name holds, 48
/// characters (`lro_core::file::MAX_OPERATION_LEN`).
const LONG_TOOL: &str = "list_every_issue_with_all_custom_fields_in_repos";

fn tool() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["recall", LONG_TOOL])
}

/// A root whose caller's folder, `root/p-{16 hex}`, is [`DIR_CHARS`] long.
fn root(tmp: &Path) -> PathBuf {
    let caller = Principal::new("alice").dir(Path::new(""));
    let pad = DIR_CHARS - tmp.to_str().unwrap().len() - 2 - caller.to_str().unwrap().len();
    let root = tmp.join("d".repeat(pad));
    assert_eq!(
        Principal::new("alice").dir(&root).to_str().unwrap().len(),
        DIR_CHARS
    );
    root
}

fn keys() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "id", "name", "title", "namespace", "memory_type", "level", "msg", "ts", "tags",
            "count", "score", "path", "created", "content", "type", "a b", "é", "日本語",
            "ключ", "k\"q", "",
        ])
        .prop_map(str::to_owned),
        1 => "[a-z]{1,8}",
        1 => (80usize..300).prop_map(|n| "long_key_".repeat(n / 9)),
    ]
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        (-1e6f64..1e6).prop_map(|n| json!(n)),
        prop::sample::select(vec![
            "warn",
            "info",
            "_semantic/x",
            "a b c",
            "2025-01-02",
            ""
        ])
        .prop_map(|s| json!(s)),
        "[ -~]{0,30}".prop_map(Value::String),
        "\\PC{0,12}".prop_map(Value::String),
        (100usize..7000).prop_map(|n| json!("x".repeat(n))),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(8, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(keys(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn object() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(keys(), value(), 0..8)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

/// Records of 100 to 400 fields, a tracker's issues with custom fields.
fn wide() -> impl Strategy<Value = Value> {
    (100usize..400, any::<u8>()).prop_map(|(n, seed)| {
        let o: Map<String, Value> = (0..n)
            .map(|f| {
                (
                    format!("customfield_{f}"),
                    json!(format!("v{}", (f + seed as usize) % 7)),
                )
            })
            .collect();
        Value::Object(o)
    })
}

/// Memories as the spec shapes them, some fields of other types.
fn memory() -> impl Strategy<Value = Value> {
    (0u8..6, scalar(), scalar()).prop_map(|(i, odd, other)| {
        json!({"id": format!("m{i}"), "title": format!("Cache note {i}"), "namespace": "_semantic/x",
               "memory_type": if i == 5 { odd } else { json!("semantic") },
               "tags": if i == 4 { other } else { json!(["perf"]) },
               "created": "2025-01-01", "content": "text", "provenance": {"confidence": i}})
    })
}

fn element(family: u8) -> BoxedStrategy<Value> {
    let main = match family {
        0 => object().boxed(),
        1 => wide().boxed(),
        _ => memory().boxed(),
    };
    // A few elements of other types among the family's.
    prop_oneof![8 => main, 1 => value()].boxed()
}

/// A result's text: a JSON array, or text with long lines.
fn result() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (0u8..3).prop_flat_map(|family| {
            (prop::collection::vec(element(family), 1..50), any::<bool>()).prop_map(|(v, pretty)| {
                if pretty {
                    serde_json::to_string_pretty(&v).unwrap()
                } else {
                    serde_json::to_string(&v).unwrap()
                }
            })
        }),
        2 => (prop::collection::vec(element(1), 1..40), prop::collection::vec(object(), 1..30))
            .prop_map(|(entities, relations)| {
                serde_json::to_string(&json!({"entities": entities, "relations": relations})).unwrap()
            }),
        1 => (100usize..7000).prop_map(|n| format!("[1,2,] {}", "x".repeat(n))),
        1 => prop::collection::vec((0usize..3000, "[a-z ]{0,20}"), 1..30).prop_map(|lines| {
            lines
                .into_iter()
                .map(|(n, word)| format!("2025-01-01T00:00:00Z INFO {word} {}", "y".repeat(n)))
                .collect::<Vec<_>>()
                .join("\n")
        }),
    ]
}

/// One offload of what `tool` answered per style and template (the tool's
/// name is in the file's); the descriptors, and each's file.
fn offload_as(root: &Path, text: &str, tool: &str) -> Vec<(GuidanceStyle, bool, String, String)> {
    let records = RecordSet::from_text(text);
    let mut out = Vec::new();
    for style in [GuidanceStyle::Spec, GuidanceStyle::Compact] {
        for native in [false, true] {
            let input = OffloadInput::new(tool, tool, &records, 123_456_789)
                .principal(Principal::new("alice"))
                .detail(Some(Detail::Full));
            let o = Offloader::new(sink::Files(root.to_owned()))
                .native_extract(native)
                .guidance(style)
                .offload(input, &|| false)
                .unwrap();
            let file = o.result.path.to_str().unwrap().to_owned();
            out.push((style, native, o.text, file));
        }
    }
    out
}

/// Every descriptor within its ceiling, and every spec recipe a shell
/// command on the file's path.
fn check_ceilings(root: &Path, text: &str, tool: &str) -> Result<(), TestCaseError> {
    for (style, native, descriptor, file) in offload_as(root, text, tool) {
        let ceiling = match style {
            GuidanceStyle::Spec => SPEC_CEILING_TOKENS,
            GuidanceStyle::Compact => COMPACT_CEILING_TOKENS,
        };
        let tokens = descriptor_tokens(&descriptor);
        prop_assert!(
            tokens <= ceiling,
            "{style:?} native={native}: {tokens} tokens over {ceiling}: {descriptor}"
        );
        if style == GuidanceStyle::Spec {
            let d: Value = serde_json::from_str(&descriptor).unwrap();
            let head = format!("tail -n +2 {file} | jq ");
            for r in d["jq_recipes"].as_array().unwrap() {
                let command = r["command"].as_str().unwrap();
                prop_assert!(command.starts_with(&head), "{command}");
            }
        }
    }
    Ok(())
}

fn jq_is_1_6() {
    let out = Command::new(JQ)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("{JQ} is needed: {e}"));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "jq-1.6");
}

/// Runs every recipe of every descriptor exactly as given: the spec's
/// shell commands whole, the compact ones after `tail -n +2 FILE | jq`.
/// A recipe that another descriptor of the same file has is run once.
fn check_recipes(root: &Path, text: &str) -> Result<(), TestCaseError> {
    check_recipes_of(root, text, "recall")
}

/// [`check_recipes`] of what `tool` answered.
fn check_recipes_of(root: &Path, text: &str, tool: &str) -> Result<(), TestCaseError> {
    let mut run = std::collections::BTreeSet::new();
    for (style, _, descriptor, file) in offload_as(root, text, tool) {
        let d: Value = serde_json::from_str(&descriptor).unwrap();
        for r in d["jq_recipes"].as_array().unwrap() {
            let command = r["command"].as_str().unwrap();
            let args = command
                .rsplit_once(".jsonl | jq ")
                .map_or(command, |(_, a)| a);
            if !run.insert(args.to_owned()) {
                continue;
            }
            let command = if command.starts_with("tail ") {
                command.replace("| jq ", &format!("| {JQ} "))
            } else {
                format!("tail -n +2 '{file}' | {JQ} {command}")
            };
            prop_assert!(style == GuidanceStyle::Compact || command.contains(&file));
            let out = Command::new("sh").args(["-c", &command]).output().unwrap();
            prop_assert!(
                out.status.success() && out.stderr.is_empty(),
                "{command}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(Config { cases: 24, failure_persistence: None, ..Config::default() })]

    #[test]
    fn descriptors_stay_within_their_ceilings(text in result(), tool in tool()) {
        let tmp = tempfile::tempdir().unwrap();
        check_ceilings(&root(tmp.path()), &text, tool)?;
    }
}

proptest! {
    #![proptest_config(Config { cases: 4, failure_persistence: None, ..Config::default() })]

    #[test]
    fn every_recipe_runs_as_given_with_jq_1_6(text in result(), tool in tool()) {
        jq_is_1_6();
        let tmp = tempfile::tempdir().unwrap();
        check_recipes_of(&root(tmp.path()), &text, tool)?;
    }
}

/// The shapes the issue measured, each within its ceilings; `--nocapture`
/// prints the figures docs/descriptor-sizing.md gives.
#[test]
fn the_issues_shapes_fit() {
    let wide = |records: usize, fields: usize| {
        let v: Vec<Value> = (0..records)
            .map(|i| {
                let o: Map<String, Value> = (0..fields)
                    .map(|f| {
                        (
                            format!("customfield_{f:05}"),
                            json!(format!("value {}", (i + f) % 9)),
                        )
                    })
                    .collect();
                Value::Object(o)
            })
            .collect();
        serde_json::to_string(&v).unwrap()
    };
    let long_keys: Vec<Value> = (0..60)
        .map(|i| {
            json!({
                "k".repeat(80): format!("{} {i}", "v".repeat(300)),
                format!("{}_{}", "key".repeat(100), i % 3): "w".repeat(200),
                "id": i,
            })
        })
        .collect();
    let mut deep = json!("leaf");
    for i in 0..12 {
        deep = json!({ format!("level{i}"): deep, "n": i });
    }
    let deep: Vec<Value> = (0..80).map(|_| deep.clone()).collect();
    let mixed: Vec<Value> = (0..80)
        .map(|i| match i % 10 {
            3 => json!("a string"),
            7 => json!([1, {"id": 2}]),
            _ => json!({"id": i, "name": format!("item {i}"), "level": (["warn", "info"][i % 2])}),
        })
        .collect();
    // The outside checker's seed 3: 39 issues of up to 237 fields (an
    // identifier, custom fields) and 26 relations.
    let entities: Vec<Value> = (0..39)
        .map(|i| {
            let mut o = Map::new();
            o.insert("id".into(), json!(i));
            for f in 0..(120 + i * 3) {
                let key = if f % 7 == 0 {
                    format!("customfield_{}", 10_000 + f)
                } else {
                    format!("field_{f:03}")
                };
                o.insert(
                    key,
                    [json!("alpha"), json!("gamma"), json!(240), Value::Null][(i + f) % 4].clone(),
                );
            }
            Value::Object(o)
        })
        .collect();
    let relations: Vec<Value> = (0..26)
        .map(
            |i| json!({"from": format!("e{i}"), "to": format!("e{}", i * 7 % 39), "rel": "blocks"}),
        )
        .collect();
    let shapes = [
        ("50 records of 400 fields", wide(50, 400)),
        ("200 records of 120 fields", wide(200, 120)),
        (
            "keys of 80 to 300 characters",
            serde_json::to_string(&long_keys).unwrap(),
        ),
        (
            "one line of 7,007 characters",
            format!("[1,2,] {}", "x".repeat(7000)),
        ),
        (
            "nesting 12 levels deep",
            serde_json::to_string(&deep).unwrap(),
        ),
        (
            "strings and arrays among objects",
            serde_json::to_string(&mixed).unwrap(),
        ),
        (
            "two arrays: 39 of up to 237 fields, 26",
            json!({"entities": entities, "relations": relations}).to_string(),
        ),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let root = root(tmp.path());
    for tool in ["recall", LONG_TOOL] {
        println!("\n{tool}: tokens (o200k), recipes when fewer than 10\n");
        println!("| records | spec shell | spec native | compact shell | compact native |");
        println!("|---|---|---|---|---|");
        for (name, text) in &shapes {
            let figures: Vec<String> = offload_as(&root, text, tool)
                .iter()
                .map(|(style, _, d, _)| {
                    let tokens = descriptor_tokens(d);
                    let ceiling = match style {
                        GuidanceStyle::Spec => SPEC_CEILING_TOKENS,
                        GuidanceStyle::Compact => COMPACT_CEILING_TOKENS,
                    };
                    assert!(tokens <= ceiling, "{name}: {tokens} over {ceiling}: {d}");
                    let v: Value = serde_json::from_str(d).unwrap();
                    let kept = v["jq_recipes"].as_array().unwrap().len();
                    let fewer = if kept < 10 {
                        format!(", {kept}")
                    } else {
                        String::new()
                    };
                    format!("{tokens} ({}){fewer}", Bpe::O200k.estimate(d))
                })
                .collect();
            println!("| {name} | {} |", figures.join(" | "));
        }
    }
    jq_is_1_6();
    check_recipes(&root, &shapes[5].1).unwrap();
    check_recipes_of(&root, &shapes[6].1, LONG_TOOL).unwrap();
}

/// A scalar before records with a string array (the proptest's find,
/// `[false, {…"tags": [...]}]`): the distinct-values recipe reads the array
/// as `.tags?[]?`, so jq 1.6 stops at no record.
#[test]
fn a_scalar_before_records_with_a_string_array_stops_no_recipe() {
    jq_is_1_6();
    let tmp = tempfile::tempdir().unwrap();
    let mut records = vec![json!(false)];
    records.extend((0..12).map(|i| {
        json!({"id": format!("m{i}"), "title": "t", "namespace": "_semantic", "content": "c",
            "provenance": {"confidence": 0.9}, "created": "2026-01-01T00:00:00Z", "tags": ["a"]})
    }));
    check_recipes(&root(tmp.path()), &serde_json::to_string(&records).unwrap()).unwrap();
}

/// Line records (what the sample of 32 shows) that change shape further
/// on: a string, fields of other types, a missing field, an array, null.
/// Every line recipe still runs as given.
#[test]
fn line_recipes_run_on_records_that_change_shape() {
    let mut records: Vec<Value> = (1..=40)
        .map(|i| json!({"line": i, "text": format!("/src/file{}.rs error {i}", i % 4)}))
        .collect();
    records.extend([
        json!("a string"),
        json!({"line": "x", "text": 5}),
        json!({"line": 43, "text": {"a": 1}}),
        json!({"text": "no line"}),
        json!([1, "two"]),
        json!(null),
        json!({"line": 47, "text": ["a"]}),
        json!({}),
        json!({"line": 49, "text": "/no/extension"}),
    ]);
    let text = serde_json::to_string(&records).unwrap();
    jq_is_1_6();
    let tmp = tempfile::tempdir().unwrap();
    let root = root(tmp.path());
    check_recipes(&root, &text).unwrap();
    // Not all paths: the other line recipes.
    let mut other = records.clone();
    for (i, r) in other.iter_mut().take(40).enumerate() {
        r["text"] = json!(format!("warning {} at step {i}", i % 3));
    }
    check_recipes(&root, &serde_json::to_string(&other).unwrap()).unwrap();
}

/// What server-filesystem answers the interop tests (test_not_memories.py)
/// with `search_files` (one absolute path a line, under pytest's temporary
/// folder) and `read_text_file` (a source file of ours): at a 63-character
/// directory, the spec descriptors fit their ceiling with the file's path
/// in every recipe, so the recipes run as given, all ten of them; from a
/// tool of the longest name, the first ones that fit.
#[test]
fn lines_fit_with_the_path_in_every_recipe() {
    let project = "/tmp/pytest-of-maintainer/pytest-123/third-party0/project";
    let mut paths = Vec::new();
    for c in 0..10 {
        let src = format!("{project}/crate-{c}/src");
        paths.push(format!("{src}/lib.rs"));
        paths.extend((0..10).map(|m| format!("{src}/module_{m}.rs")));
        paths.extend((0..5).map(|n| format!("{src}/nested/part_{n}.rs")));
        paths.push(format!("{project}/crate-{c}/tests/it.rs"));
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = root(tmp.path());
    jq_is_1_6();
    let (paths, source) = (paths.join("\n"), include_str!("../src/offload/mod.rs"));
    for (tool, text) in [
        ("search_files", paths.as_str()),
        (LONG_TOOL, &paths),
        ("read_text_file", source),
        (LONG_TOOL, source),
    ] {
        for (style, native, descriptor, file) in offload_as(&root, text, tool) {
            let tokens = descriptor_tokens(&descriptor);
            let d: Value = serde_json::from_str(&descriptor).unwrap();
            let given = d["jq_recipes"].as_array().unwrap();
            println!(
                "{tool} {style:?} native={native}: {tokens} ({}), {} recipes",
                Bpe::O200k.estimate(&descriptor),
                given.len()
            );
            if tool != LONG_TOOL {
                assert_eq!(given.len(), 10, "{descriptor}");
            }
            if style == GuidanceStyle::Spec {
                assert!(tokens <= SPEC_CEILING_TOKENS, "{tokens}: {descriptor}");
                for r in given {
                    let command = r["command"].as_str().unwrap();
                    assert!(
                        command.starts_with(&format!("tail -n +2 {file} | jq ")),
                        "{command}"
                    );
                }
            }
        }
        check_recipes_of(&root, text, tool).unwrap();
    }
}

/// Past the 63 characters of directory the ceilings are promised for, a
/// spec descriptor gives fewer recipes, the first ones, each still a
/// whole command on the file's path, never its jq arguments alone.
#[test]
fn past_the_promise_recipes_are_left_out_not_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let pad = 200 - tmp.path().to_str().unwrap().len() - 1;
    let root = tmp.path().join("d".repeat(pad));
    let mixed: Vec<Value> = (0..40)
        .map(|i| json!({"id": i, "name": format!("item {i}"), "level": (["warn", "info"][i % 2])}))
        .collect();
    let text = serde_json::to_string(&mixed).unwrap();
    let records = RecordSet::from_text(&text);
    for native in [false, true] {
        let o = Offloader::new(sink::Files(root.clone()))
            .native_extract(native)
            .offload(
                OffloadInput::new(LONG_TOOL, LONG_TOOL, &records, 9_000),
                &|| false,
            )
            .unwrap();
        assert!(
            descriptor_tokens(&o.text) <= SPEC_CEILING_TOKENS,
            "{}",
            o.text
        );
        let d: Value = serde_json::from_str(&o.text).unwrap();
        let given = d["jq_recipes"].as_array().unwrap();
        assert!((1..10).contains(&given.len()), "{}", o.text);
        let file = o.result.path.to_str().unwrap();
        for (r, recipe) in given.iter().zip(&o.recipes.recipes) {
            assert_eq!(r["command"], recipe.command(file));
        }
    }
}

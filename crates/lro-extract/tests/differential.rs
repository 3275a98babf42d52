//! The native engine against the real jq binary: every recipe at every
//! detail level, and custom queries with params, must give the same values.

mod support;

use std::collections::BTreeMap;

use lro_core::descriptor::Detail;
use lro_extract::{ExtractConfig, ExtractRequest, Extractor};
use serde_json::{Value, json};
use support::*;

fn extractor(dir: &std::path::Path) -> Extractor {
    Extractor::new(
        ExtractConfig::new(dir)
            .max_output_bytes(usize::MAX / 2)
            .max_output_values(usize::MAX / 2),
    )
}

/// Runs recipe `n` natively and with jq; compares values (or raw lines).
fn compare_recipe(ex: &Extractor, file: &Offloaded, n: u8, params: &BTreeMap<String, String>) {
    let recipe = file.recipes.get(n).unwrap();
    let expected = jq_stdout(&file.path, &recipe.jq_args(params));
    let mut req = ExtractRequest::new(file.path.to_string_lossy()).recipe(n);
    for (k, v) in params {
        req = req.param(k.clone(), Value::String(v.clone()));
    }
    let out = ex.run(&req).unwrap_or_else(|e| panic!("recipe {n}: {e}"));
    assert!(!out.truncated, "recipe {n} was truncated");
    assert_eq!(out.raw, recipe.raw);
    if recipe.raw {
        let native: Vec<String> = out
            .values
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string())
            })
            .collect();
        let jq: Vec<String> = expected.lines().map(str::to_owned).collect();
        assert_eq!(native, jq, "recipe {n} ({})", recipe.filter);
        assert_eq!(out.text, expected, "raw text of recipe {n}");
    } else {
        let jq = json_values(&expected);
        let what = format!("recipe {n} ({}) {params:?}", recipe.filter);
        assert_same_values(&out.values, &jq, &what);
        // The text prints the same values exactly: strings byte for byte,
        // numbers by value.
        assert_same_text(out.results(), &expected, &format!("text of {what}"));
    }
}

#[test]
fn every_recipe_at_every_detail_matches_jq() {
    assert!(
        have_jq(),
        "the jq binary is required for the differential test"
    );
    let dir = tempfile::tempdir().unwrap();
    let ex = extractor(dir.path());
    for detail in Detail::ALL {
        let file = offload_memories(dir.path(), "recall", 300, 42, detail);
        assert!(file.recipes.memories);
        for n in 1..=10u8 {
            compare_recipe(&ex, &file, n, &BTreeMap::new());
        }
        // Every parameterized recipe with a non-default value too.
        for (n, name, value) in [
            (2u8, "namespace", "_episodic"),
            (3, "keyword", "CACHING"),
            (5, "memory_type", "procedural"),
            (7, "tag", "security"),
        ] {
            compare_recipe(&ex, &file, n, &str_params(&[(name, value)]));
        }
        if detail != Detail::Light {
            compare_recipe(&ex, &file, 10, &str_params(&[("pattern", "time(out)?")]));
        }
    }
}

#[test]
fn recipe_outputs_are_not_trivial() {
    // Guards the differential test against comparing empty outputs.
    let dir = tempfile::tempdir().unwrap();
    let ex = extractor(dir.path());
    let file = offload_memories(dir.path(), "recall", 300, 42, Detail::Full);
    for n in 1..=10u8 {
        let mut req = ExtractRequest::new(file.path.to_string_lossy()).recipe(n);
        if n == 10 {
            // The default keyword comes from titles; contents use other words.
            req = req.param("pattern", json!("cache"));
        }
        let out = ex.run(&req).unwrap();
        assert!(out.count > 0, "recipe {n} produced nothing");
    }
}

#[test]
fn custom_queries_with_params_match_jq() {
    let dir = tempfile::tempdir().unwrap();
    let ex = extractor(dir.path());
    let file = offload_memories(dir.path(), "search", 200, 7, Detail::Full);
    type Case<'a> = (&'a str, bool, &'a [(&'a str, &'a str)]);
    let cases: [Case; 6] = [
        (
            "select(.priority >= ($min | tonumber)) | {id, priority}",
            false,
            &[("min", "4")],
        ),
        (
            "select(.namespace == $ns and (.tags | index($tag))) | .id",
            false,
            &[("ns", "_episodic/incidents"), ("tag", "incident")],
        ),
        (
            "map(select(.provenance.confidence > 0.8)) | length",
            true,
            &[],
        ),
        (
            "group_by(.provenance.agent) | map({agent: .[0].provenance.agent, n: length, mean: (map(.priority) | add / length)})",
            true,
            &[],
        ),
        (
            "[.[] | select(.content | test($word; \"i\"))] | map(.id) | .[0:5]",
            true,
            &[("word", "cobalt")],
        ),
        (
            "{id, n: (.entities | length), tags: (.tags | join(\",\"))}",
            false,
            &[],
        ),
    ];
    for (query, slurp, params) in cases {
        let mut args = Vec::new();
        if slurp {
            args.push("-s".to_owned());
        }
        args.push("-c".to_owned());
        for (k, v) in params {
            args.extend(["--arg".to_owned(), (*k).to_owned(), (*v).to_owned()]);
        }
        args.push(query.to_owned());
        let expected = json_values(&jq_stdout(&file.path, &args));
        assert!(!expected.is_empty(), "{query} gives nothing with jq");
        let mut req = ExtractRequest::new(file.path.to_string_lossy()).query(query);
        if slurp {
            req = req.slurp(true);
        }
        for (k, v) in params {
            req = req.param(*k, json!(v));
        }
        let out = ex.run(&req).unwrap_or_else(|e| panic!("{query}: {e}"));
        assert_same_values(&out.values, &expected, query);
        assert_same_text(out.results(), &jq_stdout(&file.path, &args), query);
    }
}

#[test]
fn numeric_params_are_strings_like_jq_arg() {
    let dir = tempfile::tempdir().unwrap();
    let ex = extractor(dir.path());
    let file = offload_memories(dir.path(), "list", 50, 1, Detail::Light);
    let req = ExtractRequest::new(file.path.to_string_lossy())
        .query("$n | type")
        .param("n", json!(3));
    let out = ex.run(&req).unwrap();
    assert_eq!(out.values[0], json!("string"));
    assert_eq!(out.count, 50);
}

#[test]
fn unknown_recipe_params_list_the_accepted_ones() {
    let dir = tempfile::tempdir().unwrap();
    let ex = extractor(dir.path());
    let file = offload_memories(dir.path(), "list", 20, 3, Detail::Light);
    let req = ExtractRequest::new(file.path.to_string_lossy())
        .recipe(2)
        .param("keyword", json!("x"));
    let e = ex.run(&req).unwrap_err().to_string();
    assert!(
        e.contains("has no param \"keyword\"; it accepts: namespace"),
        "{e}"
    );
    let req = req.recipe(1);
    let e = ex.run(&req).unwrap_err().to_string();
    assert!(e.contains("takes no params"), "{e}");
}

/// Runs recipe `n` with the layer's default budget (1600 tokens) and checks
/// that what is shown is a prefix of jq's output, cut between values (an
/// array between elements), and that every line parses.
fn shown_is_a_prefix_of_jq(ex: &Extractor, file: &Offloaded, n: u8) -> usize {
    let recipe = file.recipes.get(n).unwrap();
    let expected = jq_stdout(&file.path, &recipe.jq_args(&BTreeMap::new()));
    let req = ExtractRequest::new(file.path.to_string_lossy()).recipe(n);
    let out = ex.run(&req).unwrap_or_else(|e| panic!("recipe {n}: {e}"));
    let shown: Vec<&str> = out.results().lines().collect();
    let jq_lines: Vec<&str> = expected.lines().collect();
    let what = format!("recipe {n} ({})", recipe.filter);
    if recipe.slurp {
        // One array: the shown elements are jq's first elements.
        assert_eq!(shown.len(), 1, "{what}");
        let ours: Vec<&serde_json::value::RawValue> = serde_json::from_str(shown[0]).unwrap();
        let theirs: Vec<&serde_json::value::RawValue> = serde_json::from_str(jq_lines[0]).unwrap();
        assert!(ours.len() <= theirs.len(), "{what}");
        let prefix: Vec<&str> = theirs[..ours.len()].iter().map(|r| r.get()).collect();
        assert_same_text(shown[0], &format!("[{}]", prefix.join(",")), &what);
        if ours.len() < theirs.len() {
            let notice = out.notice.as_deref().unwrap_or_default();
            let want = format!("showing {} of {} elements", ours.len(), theirs.len());
            assert!(notice.contains(&want), "{what}: {notice}");
        }
        ours.len()
    } else {
        assert!(shown.len() <= jq_lines.len(), "{what}");
        for (i, line) in shown.iter().enumerate() {
            if recipe.raw {
                assert_eq!(*line, jq_lines[i], "{what}, raw line {i}");
            } else {
                serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_same_text(line, jq_lines[i], &format!("{what}, result {i}"));
            }
        }
        assert_eq!(out.truncated, shown.len() < jq_lines.len(), "{what}");
        shown.len()
    }
}

#[test]
fn output_over_the_budget_is_a_valid_prefix_of_jq_at_every_detail() {
    let dir = tempfile::tempdir().unwrap();
    let ex = Extractor::new(ExtractConfig::new(dir.path()).max_output_tokens(1600));
    let mut cut = 0;
    for detail in Detail::ALL {
        let file = offload_memories(dir.path(), "recall", 500, 9, detail);
        for n in 1..=10u8 {
            let shown = shown_is_a_prefix_of_jq(&ex, &file, n);
            cut += usize::from(shown < 500);
        }
    }
    assert!(cut >= 20, "the budget bites: {cut} recipe runs were cut");
}

/// 200 full-detail memories, and an extractor with the layer's default
/// budget of 1600 tokens.
fn budgeted_full_file() -> (tempfile::TempDir, Extractor, Offloaded) {
    let dir = tempfile::tempdir().unwrap();
    let ex = Extractor::new(ExtractConfig::new(dir.path()).max_output_tokens(1600));
    let file = offload_memories(dir.path(), "recall", 200, 5, Detail::Full);
    (dir, ex, file)
}

#[test]
fn next_parts_page_through_the_whole_result() {
    let (_dir, ex, file) = budgeted_full_file();
    // A slurped array (recipe 8, sort by created) and a stream (recipe 4).
    for n in [8u8, 4] {
        let recipe = file.recipes.get(n).unwrap();
        let expected = jq_stdout(&file.path, &recipe.jq_args(&BTreeMap::new()));
        let mut req = ExtractRequest::new(file.path.to_string_lossy()).recipe(n);
        let mut parts = Vec::new();
        let mut calls = 0;
        loop {
            let out = ex.run(&req).unwrap();
            calls += 1;
            parts.push(out.results().to_owned());
            match out.next {
                Some(next) => {
                    // The notice names the same request.
                    let notice = out.notice.unwrap();
                    assert!(
                        notice.contains(&serde_json::to_string(&next).unwrap()),
                        "{notice}"
                    );
                    req = next;
                }
                None => break,
            }
            assert!(calls < 100, "paging ends");
        }
        assert!(calls > 2, "recipe {n} needed several parts");
        let joined = if recipe.slurp {
            let elements: Vec<String> = parts
                .iter()
                .flat_map(|p| {
                    serde_json::from_str::<Vec<&serde_json::value::RawValue>>(p.trim())
                        .unwrap()
                        .into_iter()
                        .map(|r| r.get().to_owned())
                        .collect::<Vec<_>>()
                })
                .collect();
            format!("[{}]", elements.join(","))
        } else {
            parts.concat()
        };
        assert_same_text(&joined, &expected, &format!("recipe {n} paged"));
    }
}

#[test]
fn next_parts_are_only_offered_where_offset_and_limit_mean_them() {
    let (_dir, ex, file) = budgeted_full_file();
    // Two results, the first an array too big to show whole: offset/limit
    // would page the results, not its elements, so no next part is offered.
    let req = ExtractRequest::new(file.path.to_string_lossy())
        .query("., length")
        .slurp(true);
    let out = ex.run(&req).unwrap();
    assert!(out.truncated);
    assert!(out.next.is_none(), "{:?}", out.next);
    assert!(out.notice.unwrap().contains("showing "));
    // A full page is not a cut: not truncated, and the next page is offered.
    let req = ExtractRequest::new(file.path.to_string_lossy())
        .recipe(4)
        .limit(3);
    let out = ex.run(&req).unwrap();
    assert_eq!(out.count, 3);
    assert!(!out.truncated);
    assert_eq!(out.next.as_ref().and_then(|n| n.offset), Some(3));
}

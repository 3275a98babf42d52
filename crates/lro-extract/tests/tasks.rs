//! The paper's evaluation tasks, each answered by one extract call and
//! checked against ground truth computed independently from the corpus.

mod support;

use std::collections::BTreeSet;

use lro_core::descriptor::Detail;
use lro_extract::{ExtractConfig, ExtractRequest, Extractor};
use serde_json::{Value, json};
use support::*;

fn setup(detail: Detail) -> (tempfile::TempDir, Offloaded, Extractor) {
    let dir = tempfile::tempdir().unwrap();
    let file = offload_memories(dir.path(), "recall", 500, 2024, detail);
    let ex = Extractor::new(ExtractConfig::new(dir.path()));
    (dir, file, ex)
}

fn request(file: &Offloaded, v: Value) -> ExtractRequest {
    let mut v = v;
    v["file_path"] = json!(file.path.to_string_lossy());
    serde_json::from_value(v).unwrap()
}

#[test]
fn id_lookup_twelve_ids_eight_present_in_one_call() {
    let (_dir, file, ex) = setup(Detail::Light);
    let mut rng = Rng::new(99);
    let mut present: BTreeSet<String> = BTreeSet::new();
    while present.len() < 8 {
        let r = &file.records[rng.below(file.records.len())];
        present.insert(r["id"].as_str().unwrap().to_owned());
    }
    let absent = ["mem-900001", "mem-900002", "mem-777777", "nope"];
    let mut asked: Vec<String> = present.iter().cloned().collect();
    asked.extend(absent.iter().map(|s| (*s).to_owned()));
    assert_eq!(asked.len(), 12);

    // Ground truth, independently: scan the corpus.
    let truth: BTreeSet<String> = file
        .records
        .iter()
        .filter_map(|r| r["id"].as_str())
        .filter(|id| asked.iter().any(|a| a == id))
        .map(str::to_owned)
        .collect();
    assert_eq!(truth.len(), 8);

    let out = ex
        .run(&request(
            &file,
            json!({"where": [{"field": "id", "op": "in", "value": asked}], "count": true}),
        ))
        .unwrap();
    assert_eq!(out.values, [json!({"count": 8})]);
    assert_eq!(out.text, "{\"count\":8}\n");

    // Which ones, in one call as well.
    let out = ex
        .run(&request(
            &file,
            json!({"where": [{"field": "id", "op": "in", "value": asked}], "fields": ["id", "title"]}),
        ))
        .unwrap();
    let found: BTreeSet<String> = out
        .values
        .iter()
        .map(|v| v["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(found, truth);
    assert!(out.values.iter().all(|v| v.as_object().unwrap().len() == 2));
}

#[test]
fn multi_field_filter_task_in_one_call() {
    let (_dir, file, ex) = setup(Detail::Medium);
    let (ns, min_priority, word) = ("_episodic/incidents", 3, "latency");
    let truth = file
        .records
        .iter()
        .filter(|r| {
            r["namespace"] == ns
                && r["priority"].as_u64().unwrap() >= min_priority
                && r["content"].as_str().unwrap().to_lowercase().contains(word)
        })
        .count();
    assert!(
        truth > 3,
        "the corpus should make this task non-trivial ({truth})"
    );
    let out = ex
        .run(&request(
            &file,
            json!({"where": [
                {"field": "namespace", "op": "eq", "value": ns},
                {"field": "priority", "op": "gte", "value": min_priority},
                {"field": "content", "op": "contains", "value": "LaTency"}
            ], "count": true}),
        ))
        .unwrap();
    assert_eq!(out.values, [json!({"count": truth})]);

    // The same answer from the jq binary, as a third opinion.
    if have_jq() {
        let jq = jq_stdout(
            &file.path,
            &[
                "-s".into(),
                format!(
                    "map(select(.namespace == \"{ns}\" and .priority >= {min_priority} and (.content | ascii_downcase | contains(\"{word}\")))) | length"
                ),
            ],
        );
        assert_eq!(jq.trim(), truth.to_string());
    }
}

#[test]
fn sort_offset_limit_and_group_by() {
    let (_dir, file, ex) = setup(Detail::Full);
    let out = ex
        .run(&request(
            &file,
            json!({"sort_by": "-provenance.confidence", "offset": 2, "limit": 5,
                   "fields": ["id", "provenance.confidence"]}),
        ))
        .unwrap();
    let mut expected: Vec<&Value> = file.records.iter().collect();
    // Stable sort, descending: equal confidences keep file order.
    expected.sort_by(|a, b| {
        let (x, y) = (
            a["provenance"]["confidence"].as_f64().unwrap(),
            b["provenance"]["confidence"].as_f64().unwrap(),
        );
        y.total_cmp(&x)
    });
    let expected: Vec<Value> = expected[2..7]
        .iter()
        .map(
            |r| json!({"id": r["id"], "provenance": {"confidence": r["provenance"]["confidence"]}}),
        )
        .collect();
    // Numbers by value: the output prints 1.0 as jq does, `1`.
    let got: Vec<Value> = out.values.iter().map(normalized).collect();
    let expected: Vec<Value> = expected.iter().map(normalized).collect();
    assert_eq!(got, expected);

    let out = ex
        .run(&request(&file, json!({"group_by": "tags", "where": [{"field": "status", "op": "ne", "value": "archived"}]})))
        .unwrap();
    let mut truth: std::collections::BTreeMap<String, usize> = Default::default();
    for r in file.records.iter().filter(|r| r["status"] != "archived") {
        for t in r["tags"].as_array().unwrap() {
            *truth.entry(t.as_str().unwrap().to_owned()).or_default() += 1;
        }
    }
    assert_eq!(out.count, truth.len());
    for v in &out.values {
        assert_eq!(
            truth[v["key"].as_str().unwrap()],
            v["count"].as_u64().unwrap() as usize
        );
    }
    let counts: Vec<u64> = out
        .values
        .iter()
        .map(|v| v["count"].as_u64().unwrap())
        .collect();
    assert!(
        counts.windows(2).all(|w| w[0] >= w[1]),
        "largest first: {counts:?}"
    );
}

#[test]
fn limit_stops_reading_and_output_limits_cut_with_notice() {
    let (dir, file, _) = setup(Detail::Full);
    let small = Extractor::new(ExtractConfig::new(dir.path()).max_output_bytes(4096));
    let out = small.run(&request(&file, json!({"limit": 1000}))).unwrap();
    assert!(out.truncated);
    assert!(out.text.len() <= 4096 + 300, "{}", out.text.len());
    assert!(out.text.contains("# output cut at"), "{}", out.text);
    assert!(out.count > 0 && out.count < 10);

    let few = Extractor::new(ExtractConfig::new(dir.path()).max_output_values(3));
    let out = few.run(&request(&file, json!({"query": ".id"}))).unwrap();
    assert_eq!(out.count, 3);
    assert!(out.truncated);
    assert!(out.notice.unwrap().contains("max_output_values"));

    // A slurp result bigger than the budget is shortened to a valid array.
    let out = small.run(&request(&file, json!({"recipe": 8}))).unwrap();
    assert!(out.truncated);
    let arr = out.values[0].as_array().unwrap();
    assert!(!arr.is_empty() && arr.len() < 500);
    let first_line = out.text.lines().next().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(first_line).unwrap(),
        out.values[0]
    );
    let notice = out.notice.unwrap();
    assert!(
        notice.contains(&format!("showing {} of 500 elements", arr.len())),
        "{notice}"
    );
}

#[test]
fn runtime_and_compile_errors_are_clear() {
    let (_dir, file, ex) = setup(Detail::Light);
    // jq prints an error for each record and goes on; the answer counts
    // them and shows the first.
    let out = ex
        .run(&request(&file, json!({"query": ".title | keys"})))
        .unwrap();
    assert!(
        out.count == 0 && out.failed > 1 && out.last_failed,
        "{out:?}"
    );
    let notice = out.notice.unwrap();
    assert!(
        notice.starts_with(&format!(
            "the filter failed on all {} records: the first, on line 2: ",
            out.failed
        )),
        "{notice}"
    );
    let e = ex
        .run(&request(&file, json!({"query": "select(.x"})))
        .unwrap_err();
    assert!(
        e.to_string().starts_with("jq filter does not compile"),
        "{e}"
    );
    let e = ex
        .run(&request(&file, json!({"query": "def f: [f]; f"})))
        .unwrap_err();
    assert!(e.to_string().contains("too deep"), "{e}");
}

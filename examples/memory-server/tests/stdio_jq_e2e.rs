//! The demo server with LRO, end to end over real stdio pipes: a real rmcp
//! client spawns the `memory-server` binary. Recipes from the descriptors run
//! with the real `jq` binary and are checked against answers computed here
//! from the file itself.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use rmcp::{
    RoleClient, ServiceExt,
    model::{CallToolRequestParams, CallToolResult, ClientConfig},
    service::RunningService,
    transport::TokioChildProcess,
};
use serde_json::{Value, json};

type Client = RunningService<RoleClient, ClientConfig>;

async fn spawn(dir: &Path, extra: &[&str]) -> Client {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_memory-server"));
    cmd.args(extra)
        .env("ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR", dir)
        .env("RUST_LOG", "warn");
    ClientConfig::default()
        .serve(TokioChildProcess::new(cmd).expect("spawn memory-server"))
        .await
        .expect("initialize over stdio")
}

async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    client
        .call_tool(
            CallToolRequestParams::new(tool.to_owned())
                .with_arguments(args.as_object().cloned().unwrap()),
        )
        .await
        .expect("call succeeds")
}

fn text(result: &CallToolResult) -> &str {
    &result.content[0].as_text().expect("text block").text
}

/// Header and records of an offload file, checked line by line.
fn read_file(path: &Path) -> (Value, Vec<Value>) {
    let name = path.file_name().unwrap().to_str().unwrap();
    assert!(
        lro_core::file::OffloadFileName::parse(name).is_some(),
        "{name}"
    );
    let body = std::fs::read_to_string(path).unwrap();
    let mut lines = body.lines();
    let header: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    let records: Vec<Value> = lines.map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(header["type"], "lro_header");
    assert_eq!(header["count"].as_u64().unwrap() as usize, records.len());
    (header, records)
}

/// Runs a descriptor's shell command with the real jq; returns stdout.
fn run(command: &str) -> String {
    let out = Command::new("bash").args(["-c", command]).output().unwrap();
    assert!(
        out.status.success(),
        "{command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn values(stdout: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(stdout)
        .into_iter::<Value>()
        .map(Result::unwrap)
        .collect()
}

fn arg_of(command: &str, name: &str) -> String {
    // Commands pass parameters as `--arg name value`; values here are plain words.
    let marker = format!("--arg {name} ");
    let rest = &command[command.find(&marker).expect("param present") + marker.len()..];
    rest.split(' ')
        .next()
        .unwrap()
        .trim_matches('\'')
        .to_owned()
}

fn count_where(records: &[Value], f: impl Fn(&Value) -> bool) -> usize {
    records.iter().filter(|r| f(r)).count()
}

#[tokio::test]
async fn under_the_threshold_results_are_identical_to_the_bare_server() {
    let dir = tempfile::tempdir().unwrap();
    let lro = spawn(dir.path(), &[]).await;
    let bare = spawn(dir.path(), &["--no-lro"]).await;
    for (tool, args) in [
        // A page of the whole corpus would be offloaded (LRO takes precedence
        // over pagination), so the inline cases are small result sets.
        (
            "search_memories",
            json!({"query": "Borealis", "limit": 3, "detail": "medium"}),
        ),
        ("recall_memories", json!({"query": "cache", "limit": 2})),
        ("inject_context", json!({"query": "zzzz-no-match"})),
    ] {
        let a = serde_json::to_string(&call(&lro, tool, args.clone()).await).unwrap();
        let b = serde_json::to_string(&call(&bare, tool, args).await).unwrap();
        assert_eq!(a, b, "{tool}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn all_ten_recipes_run_with_real_jq_at_every_detail_level() {
    let dir = tempfile::tempdir().unwrap();
    let client = spawn(dir.path(), &[]).await;
    for detail in ["light", "medium", "full"] {
        let result = call(&client, "list_memories", json!({"detail": detail})).await;
        let d: Value = serde_json::from_str(text(&result)).unwrap();
        assert_eq!(d["offloaded"], true, "{detail}");
        assert_eq!(d["summary"]["detail"], detail);
        assert!(d.get("next_offset").is_none());
        let path = PathBuf::from(d["file_path"].as_str().unwrap());
        let (header, records) = read_file(&path);
        assert_eq!(header["detail"], detail);
        assert_eq!(header["operation"], "list");
        assert_eq!(records.len(), 500);
        assert!(
            d["guidance"]
                .as_str()
                .unwrap()
                .contains(&format!("Detail level: {detail}"))
        );

        let recipes: Vec<String> = d["jq_recipes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["command"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(recipes.len(), 10);
        for cmd in &recipes {
            assert!(!cmd.contains(".score"), "{cmd}");
        }
        let out: Vec<String> = recipes.iter().map(|c| run(c)).collect();

        // 1: one tab-separated line per memory.
        assert_eq!(out[0].lines().count(), 500);
        assert!(out[0].lines().all(|l| l.split('\t').count() == 2));
        // 2: namespace prefix filter.
        let ns = arg_of(&recipes[1], "namespace");
        let got = values(&out[1]);
        assert_eq!(
            got.len(),
            count_where(&records, |r| r["namespace"]
                .as_str()
                .unwrap()
                .starts_with(&ns))
        );
        assert!(!got.is_empty());
        // 3: title keyword, case-insensitive.
        let kw = arg_of(&recipes[2], "keyword");
        assert_eq!(
            values(&out[2]).len(),
            count_where(&records, |r| r["title"]
                .as_str()
                .unwrap()
                .to_lowercase()
                .contains(&kw.to_lowercase()))
        );
        // 4: id, title, namespace only.
        let slim = values(&out[3]);
        assert_eq!(slim.len(), 500);
        assert_eq!(slim[0].as_object().unwrap().len(), 3);
        // 5: memory type.
        let ty = arg_of(&recipes[4], "memory_type");
        assert_eq!(
            values(&out[4]).len(),
            count_where(&records, |r| r["memory_type"] == ty.as_str())
        );
        // 6: count by namespace sums to the total, one entry per namespace.
        let groups = &values(&out[5])[0];
        let sum: u64 = groups
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["count"].as_u64().unwrap())
            .sum();
        assert_eq!(sum, 500);
        assert_eq!(groups.as_array().unwrap().len(), 5);
        // 7: tag membership.
        let tag = arg_of(&recipes[6], "tag");
        assert_eq!(
            values(&out[6]).len(),
            count_where(&records, |r| r["tags"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t == tag.as_str()))
        );
        // 8: sorted by created.
        let sorted = values(&out[7])[0].as_array().unwrap().clone();
        assert_eq!(sorted.len(), 500);
        assert!(
            sorted
                .windows(2)
                .all(|w| w[0]["created"].as_str() <= w[1]["created"].as_str())
        );
        // 9 and 10 adapt to the detail level.
        match detail {
            "light" => {
                assert_eq!(
                    values(&out[8])[0].as_array().unwrap().len(),
                    5,
                    "unique namespaces"
                );
                let by_type = &values(&out[9])[0];
                let total: u64 = by_type
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|g| g["count"].as_u64().unwrap())
                    .sum();
                assert_eq!(total, 500);
                assert!(
                    recipes
                        .iter()
                        .all(|c| !c.contains("content") && !c.contains("confidence"))
                );
            }
            _ => {
                let conf = |r: &Value| {
                    if detail == "full" {
                        r["provenance"]["confidence"].as_f64()
                    } else {
                        r["confidence"].as_f64()
                    }
                    .unwrap()
                };
                let ranked = values(&out[8])[0].as_array().unwrap().clone();
                assert_eq!(ranked.len(), 500);
                assert!(ranked.windows(2).all(|w| conf(&w[0]) >= conf(&w[1])));
                if detail == "full" {
                    assert!(recipes[8].contains("sort_by(.provenance?.confidence?) | reverse"));
                } else {
                    assert!(recipes[8].contains("sort_by(.confidence?) | reverse"));
                }
                let pattern = arg_of(&recipes[9], "pattern");
                assert_eq!(
                    values(&out[9]).len(),
                    count_where(&records, |r| r["content"]
                        .as_str()
                        .unwrap()
                        .to_lowercase()
                        .contains(&pattern.to_lowercase()))
                );
            }
        }
    }
}

#[tokio::test]
async fn inject_context_offloads_the_pre_budget_set_and_pagination_yields() {
    let dir = tempfile::tempdir().unwrap();
    let client = spawn(dir.path(), &[]).await;
    // A broad query recalls many memories: the pre-budget set is over the threshold.
    let result = call(
        &client,
        "inject_context",
        json!({"query": "atlas cache incident release", "limit": 200, "token_budget": 500}),
    )
    .await;
    let d: Value = serde_json::from_str(text(&result)).expect("descriptor, not the budgeted text");
    assert_eq!(d["summary"]["operation"], "inject");
    assert_eq!(d["summary"]["detail"], "medium");
    let (header, records) = read_file(Path::new(d["file_path"].as_str().unwrap()));
    assert!(
        records.len() > 20,
        "the full recalled set, not the budgeted one"
    );
    assert_eq!(header["query"], "atlas cache incident release");

    // A small page of a small filtered set stays inline with its cursor.
    let small = call(
        &client,
        "list_memories",
        json!({"limit": 2, "namespace": "_semantic/decisions", "detail": "light"}),
    )
    .await;
    let page: Value = serde_json::from_str(text(&small)).unwrap();
    // The filtered namespace (~100 light memories) is over the threshold as a whole,
    // so LRO takes precedence and no cursor is returned.
    if page.get("offloaded").is_some() {
        assert!(page.get("next_offset").is_none());
    } else {
        assert_eq!(page["memories"].as_array().unwrap().len(), 2);
        assert!(page["next_offset"].is_number());
    }
    // A page of the whole corpus at full detail: the unpaged set is offloaded.
    let paged = call(
        &client,
        "list_memories",
        json!({"limit": 10, "detail": "full"}),
    )
    .await;
    let d: Value = serde_json::from_str(text(&paged)).unwrap();
    assert_eq!(d["offloaded"], true);
    assert_eq!(d["summary"]["count"], 500);
}

//! The server behind the real `LroLayer`: the spec's rules that need the
//! tools' cooperation (pagination precedence, inject's pre-budget set,
//! detail levels in the file).

use std::path::Path;

use lro_core::OffloadConfig;
use lro_corpus::Corpus;
use lro_tower::LroLayer;
use memory_server::{MemoryServer, server::estimate_tokens};
use serde_json::{Value, json};
use tower_layer::Layer;

mod support;
use support::{Client, call, call_json, connect, keys, text};

const LIGHT: [&str; 9] = [
    "created",
    "id",
    "memory_type",
    "modified",
    "namespace",
    "priority",
    "status",
    "tags",
    "title",
];

async fn connect_with_layer(corpus: Corpus, dir: &Path) -> Client {
    let layer = LroLayer::new(OffloadConfig::default().output_dir(dir));
    connect(layer.layer(MemoryServer::new(corpus))).await
}

/// The header and records of an offloaded file.
fn read_file(descriptor: &Value, dir: &Path) -> (Value, Vec<Value>) {
    let path = Path::new(descriptor["file_path"].as_str().expect("file_path"));
    assert!(path.starts_with(dir), "{}", path.display());
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap());
    let header = lines.next().expect("header line");
    assert_eq!(header["type"], "lro_header");
    (header, lines.collect())
}

#[tokio::test]
async fn an_over_threshold_listing_is_offloaded_whole_without_a_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect_with_layer(Corpus::default_corpus(), dir.path()).await;
    // A 10-memory page is far under the threshold, but the listing it pages
    // (500 light memories, ~36k tokens) is not: LRO takes precedence.
    let result = call(&client, "list_memories", json!({"limit": 10})).await;
    let descriptor: Value = serde_json::from_str(text(&result)).unwrap();
    assert_eq!(descriptor["offloaded"], true, "{descriptor}");
    assert!(!text(&result).contains("next_offset"));
    assert_eq!(descriptor["summary"]["count"], 500);
    assert_eq!(descriptor["summary"]["operation"], "list");
    assert_eq!(descriptor["summary"]["detail"], "light");
    assert_eq!(descriptor["jq_recipes"].as_array().unwrap().len(), 10);

    let (header, records) = read_file(&descriptor, dir.path());
    assert_eq!(header["count"], 500);
    assert_eq!(header["operation"], "list");
    assert_eq!(records.len(), 500);
    assert!(records.iter().all(|r| keys(r) == LIGHT));
    // The file holds the whole listing, oldest first, like the inline tool.
    let corpus = Corpus::default_corpus();
    assert_eq!(records[0]["id"], corpus.memories()[0].id.as_str());
    assert_eq!(records[499]["id"], corpus.memories()[499].id.as_str());
}

#[tokio::test]
async fn an_under_threshold_listing_is_paged_inline() {
    let dir = tempfile::tempdir().unwrap();
    // 12 light memories are ~900 tokens: under the default 1600.
    let client = connect_with_layer(Corpus::generate(12, 5), dir.path()).await;
    let page = call_json(&client, "list_memories", json!({"limit": 5})).await;
    assert_eq!(page["total"], 12);
    assert_eq!(page["next_offset"], 5);
    assert_eq!(page["memories"].as_array().unwrap().len(), 5);
    let last = call_json(&client, "list_memories", json!({"limit": 5, "offset": 10})).await;
    assert_eq!(last["next_offset"], Value::Null);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing offloaded"
    );
}

#[tokio::test]
async fn inject_is_judged_on_the_pre_budget_set() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect_with_layer(Corpus::default_corpus(), dir.path()).await;
    // The budgeted string would be ~100 tokens, but the 50 recalled medium
    // memories behind it are ~7.7k: the spec offloads the pre-budget set.
    let result = call(
        &client,
        "inject_context",
        json!({"query": "Atlas deployments", "token_budget": 100}),
    )
    .await;
    let descriptor: Value = serde_json::from_str(text(&result)).expect("a descriptor");
    assert_eq!(descriptor["offloaded"], true);
    assert_eq!(descriptor["summary"]["operation"], "inject");
    assert_eq!(descriptor["summary"]["detail"], "medium");
    assert_eq!(descriptor["summary"]["count"], 50);
    let (header, records) = read_file(&descriptor, dir.path());
    assert_eq!(header["query"], "Atlas deployments");
    assert_eq!(header["detail"], "medium");
    assert!(
        records
            .iter()
            .all(|r| r["content"].is_string() && r["confidence"].is_number())
    );
    assert!(records.iter().all(|r| r.get("provenance").is_none()));

    // A small pre-budget set stays inline: the budgeted context comes back.
    let inline = call(
        &client,
        "inject_context",
        json!({"query": "Atlas deployments", "limit": 3, "token_budget": 300}),
    )
    .await;
    let context = text(&inline);
    assert!(context.starts_with("## "), "{context}");
    assert!(estimate_tokens(context) <= 300);
}

#[tokio::test]
async fn recall_files_use_the_requested_detail_and_carry_the_scores() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect_with_layer(Corpus::default_corpus(), dir.path()).await;
    let result = call(
        &client,
        "recall_memories",
        json!({"query": "Cobalt caching", "detail": "full"}),
    )
    .await;
    let descriptor: Value = serde_json::from_str(text(&result)).unwrap();
    assert_eq!(descriptor["summary"]["detail"], "full");
    let range = descriptor["summary"]["score_range"]
        .as_array()
        .expect("score range");
    assert!(range[0].as_f64().unwrap() <= range[1].as_f64().unwrap());
    let recipes = serde_json::to_string(&descriptor["jq_recipes"]).unwrap();
    assert!(recipes.contains(".provenance?.confidence?"), "{recipes}");
    let (header, records) = read_file(&descriptor, dir.path());
    assert_eq!(header["operation"], "recall");
    assert_eq!(header["query"], "Cobalt caching");
    assert_eq!(records.len(), 50);
    assert!(
        records
            .iter()
            .all(|r| r["provenance"]["confidence"].is_number())
    );
    assert!(
        records
            .iter()
            .all(|r| r.get("confidence").is_none() && r.get("score").is_none())
    );

    // The same recall without the layer: the file holds exactly the inline records.
    let bare = connect(MemoryServer::new(Corpus::default_corpus())).await;
    let inline = call_json(
        &bare,
        "recall_memories",
        json!({"query": "Cobalt caching", "detail": "full"}),
    )
    .await;
    assert_eq!(inline["memories"].as_array().unwrap(), &records);
}

#[tokio::test]
async fn small_results_pass_through_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect_with_layer(Corpus::default_corpus(), dir.path()).await;
    let r = call_json(
        &client,
        "search_memories",
        json!({"query": "Borealis", "limit": 3}),
    )
    .await;
    assert_eq!(r["count"], 3);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

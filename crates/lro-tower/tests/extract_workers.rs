//! `lro_extract` through the layer's default isolation, a pool of worker
//! processes: the configured memory budget bounds a query.
//!
//! The workers are this test binary itself, so it has a `main` of its own
//! (`harness = false`) that calls the worker hook first, as `lro` and the
//! memory-server do; a libtest binary would not understand the worker's
//! start.

mod support;

use lro_core::OffloadConfig;
use lro_tower::{EXTRACT_TOOL, LroLayer};
use serde_json::json;
use support::*;

fn main() {
    lro_extract::worker::run_if_worker();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(a_configured_memory_budget_stops_a_runaway_query_and_not_a_normal_one());
    println!("test a_configured_memory_budget_stops_a_runaway_query_and_not_a_normal_one ... ok");
}

async fn a_configured_memory_budget_stops_a_runaway_query_and_not_a_normal_one() {
    let dir = tempfile::tempdir().unwrap();
    // The smallest budget an operator may set, and a timeout long enough
    // that only the budget can stop the query.
    let cfg = OffloadConfig::from_parts(
        "[prompt.offload.extraction]\ntimeout_seconds = 20",
        [(
            "ATLATL_PROMPT__OFFLOAD__EXTRACTION__MEMORY_BUDGET_MIB",
            "64",
        )],
    )
    .unwrap()
    .output_dir(dir.path())
    .threshold_tokens(500);
    let client = connect(LroLayer::new(cfg).wrap(TestServer::default())).await;
    let d = first_json(&call(&client, "items", json!({"n": 300})).await);
    let path = d["file_path"].as_str().unwrap();
    let extract = |query: &'static str| {
        let client = &client;
        async move {
            call(
                client,
                EXTRACT_TOOL,
                json!({"file_path": path, "query": query}),
            )
            .await
        }
    };

    // Doubles a string towards 1 TiB.
    let runaway = extract(r#"reduce range(40) as $i ("x"; . + .) | length"#).await;
    assert_eq!(runaway.is_error, Some(true), "{runaway:?}");
    let text = &runaway.content[0].as_text().unwrap().text;
    assert!(text.contains("needed more than 64 MiB"), "{text}");

    // The worker it killed is replaced; a normal query answers.
    let normal = extract("select(.id == \"item-00042\") | .rank").await;
    assert_ne!(normal.is_error, Some(true), "{normal:?}");
    assert_eq!(normal.content[0].as_text().unwrap().text.trim(), "0");
}

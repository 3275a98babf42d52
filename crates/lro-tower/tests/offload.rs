//! End to end through a real rmcp client: inline, offloaded, fallback,
//! proxy bypass, concurrency, over in-memory pipes and streamable HTTP.

mod support;

use std::collections::BTreeSet;

use lro_core::event::{LroEvent, MemorySink, ToolOutcome, WriteFailureReason};
use lro_tower::LroLayer;
use serde_json::{Value, json};
use support::*;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn under_threshold_is_byte_identical_to_the_unwrapped_server() {
    let dir = tempfile::tempdir().unwrap();
    let plain = connect(TestServer::default()).await;
    let wrapped =
        connect(LroLayer::new(config(dir.path(), 1600)).wrap(TestServer::default())).await;
    for (tool, args) in [
        ("items", json!({"n": 5, "size": 10})),
        ("lines", json!({"n": 3})),
        ("structured", json!({"n": 2})),
        ("fail", json!({})),
    ] {
        let a = serde_json::to_string(&call(&plain, tool, args.clone()).await).unwrap();
        let b = serde_json::to_string(&call(&wrapped, tool, args).await).unwrap();
        assert_eq!(a, b, "{tool}");
    }
    assert!(offload_files(dir.path()).is_empty());
}

#[tokio::test]
async fn over_threshold_returns_a_spec_shaped_descriptor_and_a_complete_file() {
    let dir = tempfile::tempdir().unwrap();
    let sink = MemorySink::new();
    let client = connect(
        LroLayer::new(config(dir.path(), 1600))
            .event_sink(sink.clone())
            .wrap(TestServer::default()),
    )
    .await;
    let result = call(&client, "items", json!({"n": 300, "size": 40})).await;
    let d = first_json(&result);
    assert_eq!(d["offloaded"], true);
    for key in [
        "summary",
        "file_path",
        "line_schema",
        "jq_recipes",
        "guidance",
    ] {
        assert!(d.get(key).is_some(), "missing {key}");
    }
    assert_eq!(d["summary"]["count"], 300);
    assert_eq!(d["jq_recipes"].as_array().unwrap().len(), 10);
    assert_eq!(d["summary"]["operation"], "items");
    let path = std::path::PathBuf::from(d["file_path"].as_str().unwrap());
    assert!(path.is_absolute());
    let records = check_file(&path);
    assert_eq!(records.len(), 300);
    assert_eq!(records[7], item(7, 40));
    // The descriptor once, as text: the tool declares no output schema. No
    // resource link (a client could not read it: resources/read goes to the
    // inner server).
    assert_eq!(result.structured_content, None);
    assert_eq!(result.content.len(), 1, "{:?}", result.content);
    let events = sink.events();
    assert!(
        matches!(&events[..], [LroEvent::Offloaded(e), LroEvent::ToolResult(r)]
        if e.records == 300 && e.path == path && r.outcome == ToolOutcome::Offloaded && r.records == 300)
    );
    // A tool that declares one gets the same descriptor as structured
    // content too, before any tools/list as after.
    for _ in 0..2 {
        let typed = call(&client, "typed", json!({"n": 300, "size": 40})).await;
        assert_eq!(typed.structured_content.as_ref(), Some(&first_json(&typed)));
    }
    let plain = call(&client, "structured", json!({"n": 300, "size": 40})).await;
    assert_eq!(plain.structured_content, None);
}

#[tokio::test]
async fn the_threshold_is_aggregate() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(LroLayer::new(config(dir.path(), 1600)).wrap(TestServer::default())).await;
    // 100 records of ~20 tokens each: every one is small, together ~2000 tokens.
    let many = call(&client, "items", json!({"n": 100, "size": 20})).await;
    assert_eq!(first_json(&many)["offloaded"], true);
    // One record of ~1200 tokens is under the threshold on its own.
    let single = call(&client, "items", json!({"n": 1, "size": 4800})).await;
    assert!(first_json(&single).is_array(), "single record stays inline");
    assert_eq!(offload_files(dir.path()).len(), 1);
}

#[tokio::test]
async fn text_and_structured_results_become_records() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(LroLayer::new(config(dir.path(), 200)).wrap(TestServer::default())).await;
    let lines = first_json(&call(&client, "lines", json!({"n": 500})).await);
    let records = check_file(std::path::Path::new(lines["file_path"].as_str().unwrap()));
    assert_eq!(records[0], json!({"line": 1, "text": "line 0 "}));
    let structured = first_json(&call(&client, "structured", json!({"n": 100, "size": 10})).await);
    let records = check_file(std::path::Path::new(
        structured["file_path"].as_str().unwrap(),
    ));
    assert_eq!(records.len(), 100);
    assert_eq!(records[99], item(99, 10));
    // Tool errors are never offloaded.
    let err = call(&client, "fail", json!({})).await;
    assert_eq!(err.is_error, Some(true));
    assert_eq!(err.content[0].as_text().unwrap().text.len(), 20_000);
}

#[tokio::test]
async fn a_failing_write_falls_back_to_a_truncated_result_with_a_warning() {
    let root = tempfile::tempdir().unwrap();
    // Root ignores permission bits, so make the failure real: the output
    // directory would have to be created below a regular file.
    let blocker = root.path().join("not-a-dir");
    std::fs::write(&blocker, "x").unwrap();
    let sink = MemorySink::new();
    let client = connect(
        LroLayer::new(config(&blocker.join("out"), 1600))
            .event_sink(sink.clone())
            .wrap(TestServer::default()),
    )
    .await;
    let result = call(&client, "items", json!({"n": 300, "size": 40})).await;
    assert_ne!(result.is_error, Some(true), "the call itself succeeds");
    let warning = &result.content[0].as_text().unwrap().text;
    assert!(warning.contains("offloading failed"), "{warning}");
    assert!(warning.contains("truncated"), "{warning}");
    let kept: Vec<Value> =
        serde_json::from_str(&result.content[1].as_text().unwrap().text).unwrap();
    assert!(!kept.is_empty() && kept.len() < 300);
    assert_eq!(
        kept[0],
        item(0, 40),
        "records are kept whole, from the front"
    );
    assert!(warning.contains(&format!(
        "showing {} of 300 records, {} left out",
        kept.len(),
        300 - kept.len()
    )));
    let inline_chars: usize = result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .map(|t| t.text.len())
        .sum();
    assert!(
        inline_chars / 4 <= 1600,
        "truncated result fits the threshold: {inline_chars} chars"
    );
    let events = sink.events();
    match &events[..] {
        [LroEvent::OffloadWriteFailed(e), LroEvent::ToolResult(r)] => {
            assert_eq!(e.records_total, 300);
            assert_eq!(e.records_kept, kept.len());
            assert_eq!(e.reason, WriteFailureReason::NotADirectory);
            assert_eq!(r.outcome, ToolOutcome::Truncated);
        }
        other => panic!("unexpected events {other:?}"),
    }
}

#[tokio::test]
async fn every_result_yields_one_tool_result_event_whatever_its_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let sink = MemorySink::new();
    let layer = LroLayer::new(config(dir.path(), 1600)).event_sink(sink.clone());
    let client = connect(layer.wrap(TestServer::default())).await;
    call(&client, "items", json!({"n": 2})).await;
    call(&client, "items", json!({"n": 300, "size": 40})).await;
    call(&client, "fail", json!({})).await;
    let proxy = connect_with(layer.wrap(TestServer::default()), proxy_client()).await;
    call(&proxy, "items", json!({"n": 300, "size": 40})).await;
    let results: Vec<(ToolOutcome, usize)> = sink
        .events()
        .iter()
        .filter_map(|e| match e {
            LroEvent::ToolResult(r) => Some((r.outcome, r.estimated_tokens)),
            _ => None,
        })
        .collect();
    let outcomes: Vec<ToolOutcome> = results.iter().map(|(o, _)| *o).collect();
    assert_eq!(
        outcomes,
        [
            ToolOutcome::Inline,
            ToolOutcome::Offloaded,
            ToolOutcome::Inline,
            ToolOutcome::Bypassed
        ]
    );
    assert!(results[0].1 > 0 && results[0].1 < 1600);
    assert!(results[1].1 > 1600 && results[3].1 > 1600);
}

#[tokio::test]
async fn an_lro_proxy_client_gets_full_results_inline() {
    let dir = tempfile::tempdir().unwrap();
    let layer = LroLayer::new(config(dir.path(), 100));
    let proxy = connect_with(layer.wrap(TestServer::default()), proxy_client()).await;
    let result = call(&proxy, "items", json!({"n": 300, "size": 40})).await;
    let items: Vec<Value> =
        serde_json::from_str(&result.content[0].as_text().unwrap().text).unwrap();
    assert_eq!(items.len(), 300);
    assert!(offload_files(dir.path()).is_empty());
    // An ordinary client of the same layer is offloaded.
    let plain = connect(layer.wrap(TestServer::default())).await;
    assert_eq!(
        first_json(&call(&plain, "items", json!({"n": 300})).await)["offloaded"],
        true
    );
}

#[tokio::test]
async fn per_tool_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), 100)
        .tool("lines", lro_core::ToolConfig::new().enabled(false))
        .tool(
            "items",
            lro_core::ToolConfig::new()
                .threshold_tokens(100_000)
                .operation("search"),
        );
    let client = connect(LroLayer::new(cfg.clone()).wrap(TestServer::default())).await;
    assert!(first_json(&call(&client, "items", json!({"n": 300})).await).is_array());
    let text = call(&client, "lines", json!({"n": 1000})).await;
    assert_eq!(
        text.content[0].as_text().unwrap().text.lines().count(),
        1000
    );
    let cfg = cfg.tool("items", lro_core::ToolConfig::new().operation("search"));
    let client = connect(LroLayer::new(cfg).wrap(TestServer::default())).await;
    let d = first_json(&call(&client, "items", json!({"n": 300})).await);
    assert!(d["file_path"].as_str().unwrap().contains("/atlatl-search-"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_offloads_make_two_hundred_complete_files() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(LroLayer::new(config(dir.path(), 500)).wrap(TestServer::default())).await;
    let calls = (0..200).map(|i| {
        let client = &client;
        async move { first_json(&call(client, "items", json!({"n": 50 + i % 7, "size": 40})).await) }
    });
    let descriptors = futures::future::join_all(calls).await;
    let paths: BTreeSet<String> = descriptors
        .iter()
        .map(|d| d["file_path"].as_str().expect("offloaded").to_owned())
        .collect();
    assert_eq!(paths.len(), 200);
    for (d, path) in descriptors
        .iter()
        .zip(descriptors.iter().map(|d| d["file_path"].as_str().unwrap()))
    {
        let records = check_file(std::path::Path::new(path));
        assert_eq!(
            records.len() as u64,
            d["summary"]["count"].as_u64().unwrap()
        );
    }
    assert_eq!(offload_files(dir.path()).len(), 200, "no temp files left");
}

#[tokio::test]
async fn streamable_http_inline_is_identical_and_offload_works() {
    let dir = tempfile::tempdir().unwrap();
    let ct = CancellationToken::new();
    let plain = connect_http(serve_http(TestServer::default, ct.clone()).await).await;
    let cfg = config(dir.path(), 1600);
    let layer = LroLayer::new(cfg);
    let wrapped =
        connect_http(serve_http(move || layer.wrap(TestServer::default()), ct.clone()).await).await;
    let args = json!({"n": 5, "size": 10});
    assert_eq!(
        serde_json::to_string(&call(&plain, "items", args.clone()).await).unwrap(),
        serde_json::to_string(&call(&wrapped, "items", args).await).unwrap()
    );
    let d = first_json(&call(&wrapped, "items", json!({"n": 400, "size": 40})).await);
    assert_eq!(d["offloaded"], true);
    assert_eq!(
        check_file(std::path::Path::new(d["file_path"].as_str().unwrap())).len(),
        400
    );
    ct.cancel();
}

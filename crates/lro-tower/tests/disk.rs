//! The disk through a real rmcp client: a client that writes past its quota
//! gets the truncation warning, and a directory of another user is refused.

mod support;

use lro_core::event::{LroEvent, MemorySink, ToolOutcome, WriteFailureReason};
use lro_tower::LroLayer;
use serde_json::json;
use support::*;

fn bytes_under(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

#[tokio::test]
async fn a_client_past_its_quota_gets_the_truncation_warning() {
    let dir = tempfile::tempdir().unwrap();
    let sink = MemorySink::new();
    // One result of 300 records of 40 characters is about 20 kB: the third
    // write passes 50 kB.
    let quota = 50_000;
    let client = connect(
        LroLayer::new(config(dir.path(), 1600).max_principal_bytes(Some(quota)))
            .event_sink(sink.clone())
            .wrap(TestServer::default()),
    )
    .await;
    let mut warned = None;
    for _ in 0..10 {
        let result = call(&client, "items", json!({"n": 300, "size": 40})).await;
        assert_ne!(result.is_error, Some(true), "the call itself succeeds");
        let text = &result.content[0].as_text().unwrap().text;
        if text.starts_with("WARNING") {
            warned = Some(text.clone());
            break;
        }
    }
    let warning = warned.expect("a write past the quota is refused");
    assert!(warning.contains("quota"), "{warning}");
    assert!(warning.contains("truncated"), "{warning}");
    assert!(bytes_under(dir.path()) <= quota, "nothing past the quota");
    let failed: Vec<_> = sink
        .events()
        .into_iter()
        .filter_map(|e| match e {
            LroEvent::OffloadWriteFailed(f) => Some(f),
            _ => None,
        })
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].reason, WriteFailureReason::Quota);
    assert!(
        sink.events()
            .iter()
            .any(|e| matches!(e, LroEvent::ToolResult(r) if r.outcome == ToolOutcome::Truncated))
    );
}

#[tokio::test]
async fn a_directory_of_another_user_is_refused_and_the_call_falls_back() {
    let tmp = tempfile::tempdir().unwrap();
    // As root, a directory handed to `nobody`; as anyone else, `/`, which
    // belongs to root. Either way: not ours.
    let theirs = tmp.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    let theirs = match std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)) {
        Ok(()) => theirs,
        // Not root: cannot give it away, but `/` is root's.
        Err(_) => std::path::PathBuf::from("/"),
    };
    let sink = MemorySink::new();
    let client = connect(
        LroLayer::new(config(&theirs, 1600))
            .event_sink(sink.clone())
            .wrap(TestServer::default()),
    )
    .await;
    let result = call(&client, "items", json!({"n": 300, "size": 40})).await;
    let warning = &result.content[0].as_text().unwrap().text;
    assert!(warning.contains("refused"), "{warning}");
    assert!(warning.contains("truncated"), "{warning}");
    if theirs != std::path::Path::new("/") {
        assert_eq!(
            std::fs::read_dir(&theirs).unwrap().count(),
            0,
            "nothing written"
        );
    }
    match &sink.events()[..] {
        [LroEvent::OffloadWriteFailed(e), LroEvent::ToolResult(_)] => {
            assert_eq!(e.reason, WriteFailureReason::NotOwned);
        }
        other => panic!("unexpected events {other:?}"),
    }
}

//! Results in a shared store, read by handle on another replica: two
//! layers ("replicas") with output directories of their own share one
//! store, over streamable HTTP on 127.0.0.1 with two principals.
//!
//! The store here is the local backend standing in for a bucket: the same
//! trait and key layout, no server. The real S3 topology (SeaweedFS, two
//! memory-server processes, the Python SDK) is
//! `deploy/tests/test_shared_store.py`.

mod support;

use std::{net::SocketAddr, path::Path, sync::Arc, time::Duration};

use lro_core::{file::OffloadFileName, handle};
use lro_store::{LocalStore, Store};
use lro_tower::LroLayer;
use rmcp::model::ClientConfig;
use serde_json::json;
use support::{TestServer, call, config, connect_http_as, extract, first_json, serve_http_as};
use tokio_util::sync::CancellationToken;

const PATIENCE: Duration = Duration::from_secs(60);
const ALICE: &str = "alice@example.test";
const BOB: &str = "bob@example.test";

async fn replica(out: &Path, store: Arc<dyn Store>, ct: &CancellationToken) -> SocketAddr {
    let layer = LroLayer::new(config(out, 200))
        .extract_isolation(())
        .store(store);
    serve_http_as(move || layer.wrap(TestServer::default()), false, ct).await
}

fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                found.push(p);
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_offloaded_on_one_replica_is_read_by_handle_on_the_other() {
    tokio::time::timeout(PATIENCE, async {
        let tmp = tempfile::tempdir().unwrap();
        let (out_a, out_b, bucket) = (
            tmp.path().join("a"),
            tmp.path().join("b"),
            tmp.path().join("bucket"),
        );
        let store: Arc<dyn Store> = Arc::new(LocalStore::open(&bucket, 65536).unwrap());
        let ct = CancellationToken::new();
        let a = replica(&out_a, store.clone(), &ct).await;
        let b = replica(&out_b, store.clone(), &ct).await;
        let alice_a = connect_http_as(a, ALICE, ClientConfig::default()).await;
        let alice_b = connect_http_as(b, ALICE, ClientConfig::default()).await;
        let bob_b = connect_http_as(b, BOB, ClientConfig::default()).await;

        let r = call(&alice_a, "items", json!({"n": 400, "size": 40})).await;
        let d = first_json(&r);
        let h = d["handle"].as_str().expect("a handle").to_owned();
        assert!(h.starts_with("lro:"), "{h}");
        assert!(d.get("file_path").is_none(), "no path: {d}");
        let guidance = d["guidance"].as_str().unwrap();
        assert!(
            guidance.contains(&format!("lro_extract(handle=\"{h}\", recipe=1)")),
            "{guidance}"
        );
        for recipe in d["jq_recipes"].as_array().unwrap() {
            let command = recipe["command"].as_str().unwrap();
            assert!(
                !command.contains("tail ") && !command.contains(&h),
                "{command}"
            );
        }
        // The object is in the store under Alice's folder; no replica keeps a copy.
        let name = handle::parse(&h).unwrap();
        let key = lro_store::Key::new(handle::key(
            &lro_core::principal::Principal::new(ALICE),
            &name,
        ))
        .unwrap();
        assert_eq!(
            store.head(&key).await.unwrap().size,
            std::fs::metadata(bucket.join(key.as_str())).unwrap().len()
        );
        assert!(files_under(&out_a).is_empty(), "{:?}", files_under(&out_a));

        // The other replica reads it: a query, a recipe, a line window.
        let (text, failed) = extract(
            &alice_b,
            json!({"handle": h, "query": "select(.id == \"item-00007\") | .rank"}),
        )
        .await;
        assert!(!failed, "{text}");
        assert_eq!(text.trim(), "0");
        let (text, failed) = extract(&alice_b, json!({"handle": h, "recipe": 6})).await;
        assert!(!failed && text.contains("alpha"), "{text}");
        let (text, failed) = extract(
            &alice_b,
            json!({"handle": h, "lines": {"offset": 10, "limit": 2}}),
        )
        .await;
        assert!(!failed, "{text}");
        assert!(
            text.starts_with("11:")
                && text.contains("item-00010")
                && text.contains("lines.offset = 12 (400 records in total)"),
            "{text}"
        );
        assert!(
            files_under(&out_b).is_empty(),
            "a copy outlived its call: {:?}",
            files_under(&out_b)
        );

        // Bob gets what a handle that never existed gets.
        let ghost = handle::of(&OffloadFileName::new("items"));
        let (theirs, f1) = extract(&bob_b, json!({"handle": h, "recipe": 1})).await;
        let (never, f2) = extract(&bob_b, json!({"handle": ghost, "recipe": 1})).await;
        assert!(f1 && f2);
        assert_eq!(theirs.replace(&h, "H"), never.replace(&ghost, "H"));
        assert!(
            theirs.contains("does not exist or is not yours"),
            "{theirs}"
        );

        // An expired handle says so from its timestamp alone.
        let old = "lro:items-01ARZ3NDEKTSV4RRFFQ69G5FAV";
        let (text, failed) = extract(&alice_b, json!({"handle": old, "recipe": 1})).await;
        assert!(
            failed && text.contains("has expired") && text.contains("call the original tool again"),
            "{text}"
        );

        // A path is not how a store's results are named; neither is nothing.
        let (text, failed) =
            extract(&alice_b, json!({"file_path": "/etc/passwd", "recipe": 1})).await;
        assert!(failed && text.contains("handle"), "{text}");
        let (text, failed) = extract(&alice_b, json!({"recipe": 1})).await;
        assert!(failed && text.contains("needs handle"), "{text}");

        // The tool says how its results are named.
        let tools = alice_b.list_all_tools().await.unwrap();
        let tool = tools.iter().find(|t| t.name == "lro_extract").unwrap();
        assert!(
            tool.input_schema
                .get("properties")
                .unwrap()
                .get("handle")
                .is_some()
        );
        assert!(
            tool.description
                .as_deref()
                .unwrap()
                .contains("the handle of an offload descriptor")
        );
        ct.cancel();
    })
    .await
    .expect("within the patience");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_without_the_layers_lro_extract_truncates_and_says_why() {
    tokio::time::timeout(PATIENCE, async {
        let tmp = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> =
            Arc::new(LocalStore::open(&tmp.path().join("bucket"), 65536).unwrap());
        let ct = CancellationToken::new();
        // lro_extract off: a handle could never be read back.
        let mut cfg = config(&tmp.path().join("out"), 200);
        cfg.extract = false;
        let layer = LroLayer::new(cfg).store(store.clone());
        let addr = serve_http_as(move || layer.wrap(TestServer::default()), false, &ct).await;
        let alice = connect_http_as(addr, ALICE, ClientConfig::default()).await;
        let r = call(&alice, "items", json!({"n": 400, "size": 40})).await;
        let warning = r.content[0].as_text().unwrap().text.clone();
        assert!(
            warning.starts_with("WARNING: large result offloading failed"),
            "{warning}"
        );
        assert!(
            warning.contains("read only with this layer's lro_extract"),
            "{warning}"
        );
        assert!(files_under(&tmp.path().join("bucket")).is_empty());
        ct.cancel();
    })
    .await
    .expect("within the patience");
}

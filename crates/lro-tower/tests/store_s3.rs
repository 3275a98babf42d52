//! Results in a real S3 store (SeaweedFS, lro-store's test support): an
//! object that does not hold what was written is reported as damaged, by a
//! whole read and by a line window, and a cut answer's next part is asked
//! for by the handle, and works.

#[path = "../../lro-store/tests/store/support/seaweed.rs"]
#[allow(dead_code)]
mod seaweed;
mod support;

use std::{sync::Arc, time::Duration};

use bytes::Bytes;
use lro_core::{handle, principal::Principal};
use lro_store::{Key, RemoteStore, Store, StoreConfig};
use lro_tower::LroLayer;
use rmcp::model::ClientConfig;
use serde_json::{Value, json};
use support::{TestServer, call, config, connect_http_as, extract, first_json, serve_http_as};
use tokio_util::sync::CancellationToken;

const PATIENCE: Duration = Duration::from_secs(90);
const ALICE: &str = "alice@example.test";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_object_is_never_answered_from_and_the_next_part_names_the_handle() {
    let weed = tokio::task::spawn_blocking(seaweed::Seaweed::start)
        .await
        .unwrap();
    weed.create_bucket("damage");
    let store: Arc<dyn Store> =
        Arc::new(RemoteStore::s3("damage", "lro", &StoreConfig::new(), &weed.env()).unwrap());
    tokio::time::timeout(PATIENCE, async {
        let tmp = tempfile::tempdir().unwrap();
        let ct = CancellationToken::new();
        let layer = LroLayer::new(config(tmp.path(), 200))
            .extract_isolation(())
            .store(store.clone());
        let addr = serve_http_as(move || layer.wrap(TestServer::default()), false, &ct).await;
        let alice = connect_http_as(addr, ALICE, ClientConfig::default()).await;
        let d = first_json(&call(&alice, "items", json!({"n": 400, "size": 40})).await);
        let h = d["handle"].as_str().expect("a handle").to_owned();

        // A query over everything is cut; its next part is asked for by
        // the handle, and answers the records after the first page.
        let (first, failed) = extract(&alice, json!({"handle": h, "query": ".id"})).await;
        assert!(!failed, "{first}");
        let next = first
            .split("next part: ")
            .nth(1)
            .unwrap_or_else(|| panic!("a next part: {first}"));
        let next: Value = serde_json::from_str(next.lines().next().unwrap().trim()).unwrap();
        assert_eq!(next["handle"], h, "{next}");
        assert!(next.get("file_path").is_none(), "{next}");
        let shown = next["offset"].as_u64().unwrap();
        let (second, failed) = extract(&alice, next).await;
        assert!(!failed, "{second}");
        assert!(
            second.starts_with(&format!("\"item-{shown:05}\"")),
            "{second}"
        );

        // The object as written, then cut at a line end, grown by three
        // lines, and its header alone.
        let name = handle::parse(&h).unwrap();
        let key = Key::new(handle::key(&Principal::new(ALICE), &name)).unwrap();
        let mut written = Vec::new();
        lro_store::fetch::copy(&*store, &key, &mut written, None)
            .await
            .unwrap();
        let text = std::str::from_utf8(&written).unwrap().to_owned();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 401);
        let cut = lines[..11].join("\n") + "\n";
        let grown = format!("{text}{}\n{}\n{}\n", lines[1], lines[2], lines[3]);
        let header_only = format!("{}\n", lines[0]);
        for (what, body) in [("cut", cut), ("grown", grown), ("header only", header_only)] {
            store.put_bytes(&key, Bytes::from(body)).await.unwrap();
            for args in [
                json!({"handle": h, "query": "length"}),
                json!({"handle": h, "recipe": 1}),
                json!({"handle": h, "lines": {"offset": 0, "limit": 2}}),
            ] {
                let (text, failed) = extract(&alice, args.clone()).await;
                assert!(failed, "{what} {args}: {text}");
                assert!(
                    text.contains("damaged") && text.contains("400 records"),
                    "{what} {args}: {text}"
                );
            }
        }
        // Put back as written, it reads again.
        store.put_bytes(&key, Bytes::from(written)).await.unwrap();
        let (text, failed) = extract(&alice, json!({"handle": h, "query": "length"})).await;
        assert!(!failed, "{text}");
        ct.cancel();
    })
    .await
    .expect("within the patience");
}

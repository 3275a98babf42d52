//! A store that goes away: a stopped SeaweedFS is `Unreachable`, quickly
//! and without showing the secret; back on the same data, everything
//! stored before is there again.

use std::time::{Duration, Instant};

use bytes::Bytes;
use lro_store::{ErrorKind, Key, RemoteStore, Store, StoreConfig};

use crate::support::Seaweed;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_server_is_unreachable_and_a_restarted_one_serves_again() {
    let mut weed = Seaweed::start();
    weed.create_bucket("outage");
    let config = StoreConfig::new()
        .max_retries(2)
        .retry_timeout(Duration::from_secs(2))
        .max_backoff(Duration::from_millis(500));
    let store = RemoteStore::s3("outage", "p", &config, &weed.env()).unwrap();
    let k = Key::new("kept").unwrap();
    store
        .put_bytes(&k, Bytes::from_static(b"before\n"))
        .await
        .unwrap();

    weed.stop();
    let started = Instant::now();
    for err in [
        store.head(&k).await.unwrap_err(),
        store
            .put_bytes(&Key::new("during").unwrap(), Bytes::from_static(b"x"))
            .await
            .unwrap_err(),
    ] {
        assert_eq!(err.kind(), ErrorKind::Unreachable, "{err}");
        assert!(!format!("{err} {err:?}").contains(weed.secret_key()));
    }
    let took = started.elapsed();
    assert!(took < 2 * config.worst_case(), "{took:?}");
    println!("unreachable: two operations failed in {took:?}");

    weed.restart();
    assert_eq!(store.head(&k).await.unwrap().size, 7);
    store
        .put_bytes(&Key::new("after").unwrap(), Bytes::from_static(b"y"))
        .await
        .unwrap();
}

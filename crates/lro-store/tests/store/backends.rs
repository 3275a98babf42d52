//! The same test bodies against the local directory and a real SeaweedFS.

use std::{
    sync::Arc,
    time::{Duration, SystemTime},
};

use bytes::Bytes;
use futures::{StreamExt as _, TryStreamExt as _};
use lro_store::{ErrorKind, Key, Store, StoreError};

use crate::{both, support::tracked::Meter};

const MIB: usize = 1024 * 1024;

/// The byte at `pos` of a test object: varies within each MiB and from one
/// MiB to the next, so a lost, repeated or reordered part shows.
fn byte_at(pos: usize) -> u8 {
    (pos % 251) as u8 ^ (pos >> 20) as u8
}

fn content(range: std::ops::Range<usize>) -> Vec<u8> {
    range.map(byte_at).collect()
}

fn key(k: &str) -> Key {
    Key::new(k).unwrap()
}

async fn read_all(store: &dyn Store, k: &Key) -> Vec<u8> {
    let chunks: Vec<Bytes> = store.get(k).await.unwrap().try_collect().await.unwrap();
    chunks.concat()
}

fn close_to_now(t: SystemTime) -> bool {
    let now = SystemTime::now();
    let skew = Duration::from_secs(300);
    t > now - skew && t < now + skew
}

async fn put_get_head_delete(store: Arc<dyn Store>) {
    let k = key("p-1/01K.jsonl");
    let chunks: Vec<std::io::Result<Bytes>> = (0..4)
        .map(|i| Ok(Bytes::from(content(i * 1000..(i + 1) * 1000))))
        .collect();
    let size = store
        .put(&k, futures::stream::iter(chunks).boxed())
        .await
        .unwrap();
    assert_eq!(size, 4000);
    assert_eq!(read_all(&*store, &k).await, content(0..4000));
    let head = store.head(&k).await.unwrap();
    assert_eq!((head.key.clone(), head.size), (k.clone(), 4000));
    assert!(close_to_now(head.last_modified), "{head:?}");
    // A second put replaces the object whole.
    store
        .put_bytes(&k, Bytes::from_static(b"new\n"))
        .await
        .unwrap();
    assert_eq!(read_all(&*store, &k).await, b"new\n");
    store.delete(&k).await.unwrap();
    for err in [
        store.head(&k).await.unwrap_err(),
        store.get(&k).await.err().unwrap(),
        store.get_range(&k, 0..1).await.err().unwrap(),
    ] {
        assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    }
    // Deleting what is gone is not an error.
    store.delete(&k).await.unwrap();
}
both!(put_get_head_delete);

async fn range_reads_only_the_range(store: Arc<dyn Store>) {
    let k = key("r/lines.jsonl");
    store
        .put_bytes(&k, Bytes::from(content(0..3 * MIB)))
        .await
        .unwrap();
    for range in [0..10, 1_000_000..1_000_100, (2 * MIB - 5)..(2 * MIB + 5)] {
        let chunks: Vec<Bytes> = store
            .get_range(&k, range.start as u64..range.end as u64)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        // Only the range came over, not the object.
        assert_eq!(chunks.iter().map(Bytes::len).sum::<usize>(), range.len());
        assert_eq!(chunks.concat(), content(range));
    }
    // An end past the end is cut; a start past it is an error.
    let tail: Vec<Bytes> = store
        .get_range(&k, (3 * MIB - 3) as u64..(3 * MIB + 100) as u64)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(tail.concat(), content(3 * MIB - 3..3 * MIB));
    let err = store
        .get_range(&k, (3 * MIB) as u64..(3 * MIB + 1) as u64)
        .await
        .err()
        .unwrap();
    assert!(
        matches!(err, StoreError::RangePastEnd { size, .. } if size == (3 * MIB) as u64),
        "{err}"
    );
}
both!(range_reads_only_the_range);

async fn list_under_a_prefix(store: Arc<dyn Store>) {
    for k in ["a/1", "a/2", "a/deep/3", "ab/4", "b/5"] {
        store
            .put_bytes(&key(k), Bytes::from(k.as_bytes().to_vec()))
            .await
            .unwrap();
    }
    let list = |prefix: Option<&str>| {
        let store = Arc::clone(&store);
        let prefix = prefix.map(key);
        async move {
            let mut found: Vec<(String, u64, SystemTime)> = store
                .list(prefix.as_ref())
                .map_ok(|m| (m.key.to_string(), m.size, m.last_modified))
                .try_collect()
                .await
                .unwrap();
            found.sort();
            found
        }
    };
    let under_a = list(Some("a")).await;
    let names: Vec<&str> = under_a.iter().map(|(k, _, _)| k.as_str()).collect();
    assert_eq!(names, ["a/1", "a/2", "a/deep/3"]);
    assert!(
        under_a
            .iter()
            .all(|(k, size, t)| *size == k.len() as u64 && close_to_now(*t))
    );
    assert_eq!(list(None).await.len(), 5);
    assert!(list(Some("nothing")).await.is_empty());
    assert!(list(Some("a/1")).await.is_empty(), "a key is not a prefix");
}
both!(list_under_a_prefix);

/// A reader never sees a partial object: while a multipart upload is under
/// way (more than two parts sent), the key is not listed, not found by
/// head, not readable; then it appears whole.
async fn a_put_is_all_or_nothing(store: Arc<dyn Store>) {
    let k = key("atomic/big");
    let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<Bytes>>(1);
    let body = tokio_stream(rx);
    let writer = {
        let store = Arc::clone(&store);
        let k = k.clone();
        tokio::spawn(async move { store.put(&k, body).await })
    };
    let total = 24 * MIB;
    for i in 0..16 {
        tx.send(Ok(Bytes::from(content(i * MIB..(i + 1) * MIB))))
            .await
            .unwrap();
    }
    // The channel holds one chunk: 15 MiB, three parts, are with the store.
    let listed: Vec<_> = store.list(None).try_collect().await.unwrap();
    assert!(listed.is_empty(), "{listed:?}");
    assert_eq!(
        store.head(&k).await.unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        store.get(&k).await.err().unwrap().kind(),
        ErrorKind::NotFound
    );
    for i in 16..24 {
        tx.send(Ok(Bytes::from(content(i * MIB..(i + 1) * MIB))))
            .await
            .unwrap();
    }
    drop(tx);
    assert_eq!(writer.await.unwrap().unwrap(), total as u64);
    assert_eq!(store.head(&k).await.unwrap().size, total as u64);
    assert!(read_all(&*store, &k).await == content(0..total));

    // A body that fails half-way stores nothing, not even over the old object.
    let failing = futures::stream::iter(vec![
        Ok(Bytes::from(content(0..6 * MIB))),
        Ok(Bytes::from(content(0..6 * MIB))),
        Err(std::io::Error::other("producer failed")),
    ])
    .boxed();
    let err = store.put(&k, failing).await.unwrap_err();
    assert!(matches!(err, StoreError::Body { .. }), "{err}");
    assert_eq!(store.head(&k).await.unwrap().size, total as u64);
    let other = key("atomic/never");
    let failing = futures::stream::iter(vec![
        Ok(Bytes::from(content(0..11 * MIB))),
        Err(std::io::Error::other("producer failed")),
    ])
    .boxed();
    store.put(&other, failing).await.unwrap_err();
    let listed: Vec<_> = store.list(None).try_collect().await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
}
both!(a_put_is_all_or_nothing);

fn tokio_stream(
    mut rx: tokio::sync::mpsc::Receiver<std::io::Result<Bytes>>,
) -> lro_store::BodyStream {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed()
}

/// A 64 MiB object is streamed up and down without being held whole: the
/// most of it alive at once stays within the store's stated bound, and the
/// download arrives in chunks.
async fn a_large_object_streams_with_bounded_memory(store: Arc<dyn Store>) {
    let k = key("large/64m");
    let total = 64 * MIB;
    let meter = Meter::new();
    let body = {
        let meter = Arc::clone(&meter);
        futures::stream::iter(0..64)
            .map(move |i| Ok(meter.chunk(content(i * MIB..(i + 1) * MIB))))
            .boxed()
    };
    assert_eq!(store.put(&k, body).await.unwrap(), total as u64);
    let bound = crate::support::config().max_buffered() + MIB;
    assert!(
        meter.peak() <= bound && meter.peak() < total / 4,
        "peak {} bytes held of {total} (bound {bound})",
        meter.peak()
    );
    assert_eq!(meter.live(), 0, "the store keeps no chunk after the put");

    let mut stream = store.get(&k).await.unwrap();
    let (mut pos, mut biggest) = (0, 0);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        biggest = biggest.max(chunk.len());
        assert!(
            chunk
                .iter()
                .enumerate()
                .all(|(i, b)| *b == byte_at(pos + i)),
            "at {pos}"
        );
        pos += chunk.len();
    }
    assert_eq!(pos, total);
    assert!(
        biggest <= 8 * MIB,
        "a chunk of {biggest} bytes: not streamed"
    );
    println!(
        "{store}: peak {:.1} MiB held of a 64 MiB put; largest read chunk {} KiB",
        meter.peak() as f64 / MIB as f64,
        biggest / 1024
    );
}
both!(a_large_object_streams_with_bounded_memory);

/// A claim: of several creators racing on one key, exactly one makes it.
async fn create_new_is_won_once(store: Arc<dyn Store>) {
    let k = key("lro-claims/p-1/atlatl-x-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl");
    let racers: Vec<_> = (0..6)
        .map(|_| {
            let store = store.clone();
            let k = k.clone();
            tokio::spawn(async move { store.create_new(&k, Bytes::from_static(b"c")).await })
        })
        .collect();
    let mut won = 0;
    for racer in racers {
        if racer.await.unwrap().unwrap() {
            won += 1;
        }
    }
    assert_eq!(won, 1, "one creator wins");
    assert_eq!(read_all(&*store, &k).await, b"c");
    assert!(!store.create_new(&k, Bytes::new()).await.unwrap());
    store.delete(&k).await.unwrap();
    assert!(
        store.create_new(&k, Bytes::new()).await.unwrap(),
        "free again once deleted"
    );
    store.delete(&k).await.unwrap();
}
both!(create_new_is_won_once);

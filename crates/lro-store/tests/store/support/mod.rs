//! What the store tests share: the SeaweedFS server, a store of each
//! backend, and chunks that count how many of their bytes are alive.

pub(crate) mod seaweed;
pub(crate) mod tracked;

use std::sync::{Arc, LazyLock};

use lro_store::{RemoteStore, Store, StoreConfig, open};
pub(crate) use seaweed::Seaweed;

/// The bucket the shared server's tests use, each under its own prefix.
pub(crate) const BUCKET: &str = "lro";

/// One server for this test binary, started on first use.
pub(crate) static SEAWEED: LazyLock<Seaweed> = LazyLock::new(|| {
    let weed = Seaweed::start();
    weed.create_bucket(BUCKET);
    weed
});

/// The bounds the tests run with: 5 MiB parts, two in flight, and short
/// timeouts so a failure shows quickly.
pub(crate) fn config() -> StoreConfig {
    StoreConfig::new()
        .part_size(5 * 1024 * 1024)
        .max_concurrent_parts(2)
        .request_timeout(std::time::Duration::from_secs(20))
}

/// A store and what keeps its backing alive.
pub(crate) struct Fixture {
    pub(crate) store: Arc<dyn Store>,
    _dir: Option<tempfile::TempDir>,
}

/// A local store in a fresh temp directory.
pub(crate) fn local() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = open(
        dir.path().to_str().unwrap(),
        &config(),
        &lro_store::Env::new(),
    )
    .unwrap();
    Fixture {
        store,
        _dir: Some(dir),
    }
}

/// An S3 store on the shared server, under a prefix of its own.
pub(crate) fn s3() -> Fixture {
    let env = SEAWEED.env();
    let prefix = format!("t/{}", ulid::Ulid::new());
    Fixture {
        store: Arc::new(RemoteStore::s3(BUCKET, &prefix, &config(), &env).unwrap()),
        _dir: None,
    }
}

/// The same test body against both backends: `both!(name)` makes
/// `name::local` and `name::s3` from `async fn name(store: Arc<dyn Store>)`.
#[macro_export]
macro_rules! both {
    ($name:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn local() {
                let f = $crate::support::local();
                super::$name(f.store.clone()).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn s3() {
                let f = $crate::support::s3();
                super::$name(f.store.clone()).await;
            }
        }
    };
}

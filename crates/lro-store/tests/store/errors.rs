//! Failures a real server produces, each with its kind, none showing a
//! credential; and a server that never answers, cut off within the bound.

use std::{
    io::Write as _,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use bytes::Bytes;
use futures::TryStreamExt as _;
use lro_store::{ErrorKind, Key, RemoteStore, Store, StoreConfig, StoreError, open};

use crate::support::{BUCKET, SEAWEED, config};

/// The error's text, its debug form and every source's text.
fn all_text(err: &StoreError) -> String {
    let mut text = format!("{err}\n{err:?}\n");
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(err);
    while let Some(e) = source {
        text.push_str(&format!("{e}\n{e:?}\n"));
        source = e.source();
    }
    text
}

fn assert_no_secret(err: &StoreError, secrets: &[&str]) {
    let text = all_text(err);
    for secret in secrets {
        assert!(!text.contains(secret), "the secret is in: {text}");
    }
}

/// Log lines written while the future runs on this thread (a
/// current-thread runtime keeps the client's tasks here too).
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn capture_logs() -> (Captured, tracing::subscriber::DefaultGuard) {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    (captured, tracing::subscriber::set_default(subscriber))
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// The errors of a put, a get and a list that must all fail.
async fn put_get_list(store: &dyn Store, k: &Key) -> [StoreError; 3] {
    [
        store
            .put_bytes(k, Bytes::from_static(b"x"))
            .await
            .unwrap_err(),
        store.get(k).await.err().unwrap(),
        store.list(None).try_collect::<Vec<_>>().await.unwrap_err(),
    ]
}

#[tokio::test(flavor = "current_thread")]
async fn a_wrong_secret_is_credentials_refused_and_never_shown() {
    let wrong = format!("wrong{}", ulid::Ulid::new());
    let env = SEAWEED.env_with(SEAWEED.env().get("AWS_ACCESS_KEY_ID").unwrap(), &wrong);
    let (logs, _guard) = capture_logs();
    let store = open(&format!("s3://{BUCKET}/creds"), &config(), &env).unwrap();
    let k = Key::new("x").unwrap();
    let errs = put_get_list(&*store, &k).await;
    for err in &errs {
        assert_eq!(err.kind(), ErrorKind::CredentialsRefused, "{err}");
        assert_no_secret(err, &[&wrong, SEAWEED.secret_key()]);
    }
    let shown = format!("{store} {store:?} {}", logs.text());
    assert!(
        !shown.contains(&wrong) && !shown.contains(SEAWEED.secret_key()),
        "{shown}"
    );
    println!("wrong secret: {}", errs[0]);
}

#[tokio::test(flavor = "current_thread")]
async fn an_unknown_access_key_is_credentials_refused() {
    let env = SEAWEED.env_with("AKUNKNOWN", "whatever-secret");
    let store = open(&format!("s3://{BUCKET}/creds"), &config(), &env).unwrap();
    let err = store
        .put_bytes(&Key::new("x").unwrap(), Bytes::from_static(b"x"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CredentialsRefused, "{err}");
    assert_no_secret(&err, &["whatever-secret"]);
}

#[tokio::test(flavor = "current_thread")]
async fn a_missing_bucket_is_bucket_missing() {
    let bucket = format!("missing-{}", ulid::Ulid::new().to_string().to_lowercase());
    let store = RemoteStore::s3(&bucket, "p", &config(), &SEAWEED.env()).unwrap();
    let k = Key::new("x").unwrap();
    let errs = put_get_list(&store, &k).await;
    for err in &errs {
        assert_eq!(err.kind(), ErrorKind::BucketMissing, "{err}");
        assert_no_secret(err, &[SEAWEED.secret_key()]);
    }
    // A HEAD answer has no body to name the bucket: S3 says only 404.
    assert_eq!(
        store.head(&k).await.unwrap_err().kind(),
        ErrorKind::NotFound
    );
    // A large put fails the same way when its multipart upload starts.
    let big = Bytes::from(vec![0u8; 6 * 1024 * 1024]);
    let err = store.put_bytes(&k, big).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BucketMissing, "{err}");
}

/// A loopback listener that accepts connections, reads what is sent and
/// never answers.
async fn silent_server() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n) = tokio::io::AsyncReadExt::read(&mut socket, &mut buf).await {
                    if n == 0 {
                        break;
                    }
                }
            });
        }
    });
    (format!("http://{addr}"), task)
}

#[tokio::test(flavor = "current_thread")]
async fn a_server_that_never_answers_times_out_within_the_bound() {
    let (endpoint, server) = silent_server().await;
    let config = StoreConfig::new()
        .connect_timeout(Duration::from_millis(500))
        .request_timeout(Duration::from_millis(700))
        .max_retries(2)
        .retry_timeout(Duration::from_secs(1))
        .initial_backoff(Duration::from_millis(50))
        .max_backoff(Duration::from_millis(200));
    let bound = config.worst_case();
    let secret = format!("sk{}", ulid::Ulid::new());
    let env = lro_store::Env::new()
        .var("AWS_ENDPOINT_URL", &endpoint)
        .var("AWS_ALLOW_HTTP", "true")
        .var("AWS_ACCESS_KEY_ID", "AKSILENT")
        .var("AWS_SECRET_ACCESS_KEY", &secret);
    let store = open("s3://silent/p", &config, &env).unwrap();
    let k = Key::new("x").unwrap();
    let (logs, _guard) = capture_logs();
    for op in ["put", "get", "head", "list"] {
        let started = Instant::now();
        let err = match op {
            "put" => store
                .put_bytes(&k, Bytes::from_static(b"x"))
                .await
                .unwrap_err(),
            "get" => store.get(&k).await.err().unwrap(),
            "head" => store.head(&k).await.unwrap_err(),
            _ => store.list(None).try_collect::<Vec<_>>().await.unwrap_err(),
        };
        let took = started.elapsed();
        assert_eq!(err.kind(), ErrorKind::Timeout, "{op}: {err}");
        assert!(
            // A second of slack for a loaded machine's scheduling.
            took <= bound + Duration::from_secs(1),
            "{op} took {took:?}, bound {bound:?}"
        );
        assert_no_secret(&err, &[&secret]);
        println!("{op}: timeout after {took:?} (bound {bound:?})");
    }
    assert!(!logs.text().contains(&secret));
    server.abort();
}

#[test]
fn the_captured_log_sees_events() {
    let (logs, _guard) = capture_logs();
    tracing::info!("hello");
    let _ = std::io::sink().write(b"");
    assert!(logs.text().contains("hello"));
}

//! Two principals over streamable HTTP on 127.0.0.1: each reads its own
//! results, gets the very same error on the other's as on an unknown name,
//! still reads its results after reconnecting (a new session, or none), and
//! an expired name is refused from its timestamp alone.
//!
//! `support::serve_http_as` plays the HTTP face's authentication with a
//! header naming the principal.

mod support;

use std::{
    net::SocketAddr,
    path::Path,
    time::{Duration, SystemTime},
};

use lro_core::{file::OffloadFileName, principal::Principal};
use lro_tower::LroLayer;
use rmcp::model::ClientConfig;
use serde_json::json;
use support::{Client, TestServer, call, config, connect_http_as, first_json, serve_http_as};
use tokio_util::sync::CancellationToken;

/// Every test here is over in a few seconds; a hang fails it.
const PATIENCE: Duration = Duration::from_secs(60);

/// What `extract` reads from a result of `offload`: item 7's rank, 7 % 7.
fn read() -> (String, bool) {
    ("0\n".to_owned(), false)
}

/// Serves the layer over streamable HTTP, with sessions (`stateful`) or
/// without, behind the header-to-principal layer.
async fn serve(dir: &Path, stateful: bool, ct: &CancellationToken) -> SocketAddr {
    // A test binary cannot be a worker process: queries run in-process.
    let layer = LroLayer::new(config(dir, 200)).extract_isolation(());
    serve_http_as(move || layer.wrap(TestServer::default()), stateful, ct).await
}

async fn connect_as(addr: SocketAddr, principal: &str) -> Client {
    connect_http_as(addr, principal, ClientConfig::default()).await
}

/// Offloads one result and returns its `file_path`.
async fn offload(client: &Client) -> String {
    let r = call(client, "items", json!({"n": 400, "size": 40})).await;
    let d = first_json(&r);
    d["file_path"].as_str().unwrap().to_owned()
}

/// The text of an `lro_extract` call on `file_path`, and whether it failed.
async fn extract(client: &Client, file_path: &str) -> (String, bool) {
    let r = call(
        client,
        "lro_extract",
        json!({"file_path": file_path, "query": "select(.id == \"item-00007\") | .rank"}),
    )
    .await;
    let text = r.content[0].as_text().unwrap().text.clone();
    (text, r.is_error == Some(true))
}

/// What a refusal says once the echoed argument is taken out.
async fn refusal(client: &Client, file_path: &str) -> String {
    let (text, failed) = extract(client, file_path).await;
    assert!(failed, "{file_path} was read: {text}");
    let without = text.replace(&format!("{file_path:?}"), "<arg>");
    assert_ne!(without, text, "the argument is echoed: {text}");
    without
}

/// Two principals on one stateful server, each with one offloaded result.
struct Scene {
    dir: tempfile::TempDir,
    ct: CancellationToken,
    addr: SocketAddr,
    alice: Client,
    bob: Client,
    a: String,
    b: String,
}

const ALICE: &str = "alice@example.test";
const BOB: &str = "bob@example.test";

async fn scene() -> Scene {
    let dir = tempfile::tempdir().unwrap();
    let ct = CancellationToken::new();
    let addr = serve(dir.path(), true, &ct).await;
    let alice = connect_as(addr, ALICE).await;
    let bob = connect_as(addr, BOB).await;
    let a = offload(&alice).await;
    let b = offload(&bob).await;
    Scene {
        dir,
        ct,
        addr,
        alice,
        bob,
        a,
        b,
    }
}

fn name_of(path: &str) -> &str {
    Path::new(path).file_name().unwrap().to_str().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_principal_reads_only_its_own_results_and_sees_no_oracle() {
    tokio::time::timeout(PATIENCE, async {
        let Scene {
            dir,
            ct,
            addr,
            alice,
            bob,
            a,
            b,
        } = scene().await;
        // Each result went into its principal's own folder.
        let a_dir = Principal::new(ALICE).dir(dir.path());
        assert_eq!(Path::new(&a).parent().unwrap(), a_dir);
        assert_ne!(Path::new(&a).parent(), Path::new(&b).parent());

        // Its own results extract fine, by full path or by name.
        assert_eq!(extract(&alice, &a).await, read());
        assert_eq!(extract(&alice, name_of(&a)).await, read());
        assert_eq!(extract(&bob, &b).await, read());

        // The other's results, an unknown name, a name that does not parse,
        // a path outside the root: one text.
        let unknown = OffloadFileName::new("items").to_string();
        let b_rel = format!(
            "{}/{}",
            Path::new(&b)
                .parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_str()
                .unwrap(),
            name_of(&b)
        );
        let mut texts = Vec::new();
        for arg in [
            b.as_str(),
            name_of(&b),
            &b_rel,
            &format!("../{b_rel}"),
            &unknown,
            "garbage",
            "/etc/passwd",
        ] {
            texts.push((arg.to_owned(), refusal(&alice, arg).await));
        }
        for arg in [a.as_str(), name_of(&a), &unknown] {
            texts.push((arg.to_owned(), refusal(&bob, arg).await));
        }
        let first = &texts[0].1;
        assert!(first.contains("does not exist or is not yours"), "{first}");
        for (arg, text) in &texts {
            assert_eq!(text, first, "refusal of {arg} differs");
        }

        // A reconnect is a new session, never a new principal.
        alice.cancel().await.unwrap();
        let again = connect_as(addr, ALICE).await;
        assert_eq!(extract(&again, &a).await, read());
        // And so is a server without sessions at all over the same files.
        let stateless = serve(dir.path(), false, &ct).await;
        let sessionless = connect_as(stateless, ALICE).await;
        assert_eq!(extract(&sessionless, &a).await, read());
        let bob_sessionless = connect_as(stateless, BOB).await;
        assert_eq!(refusal(&bob_sessionless, &a).await, *first);
        ct.cancel();
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_name_is_refused_from_its_timestamp_before_any_lookup() {
    tokio::time::timeout(PATIENCE, async {
        // `_dir` keeps the folder alive to the end.
        let Scene {
            dir: _dir,
            ct,
            alice,
            bob,
            a,
            ..
        } = scene().await;
        // Alice's own result, renamed to a ULID of two hours ago (the TTL is
        // one): a lookup would find it, so only the name can refuse it.
        let old = ulid::Ulid::from_datetime(SystemTime::now() - Duration::from_secs(7200));
        let expired = Path::new(&a)
            .with_file_name(OffloadFileName::with_ulid("items", old).to_string())
            .to_string_lossy()
            .into_owned();
        std::fs::copy(&a, &expired).unwrap();
        let (text, failed) = extract(&alice, &expired).await;
        assert!(failed, "{text}");
        assert!(text.contains("expired"), "{text}");
        assert!(text.contains("results expire after 1 hour"), "{text}");
        assert!(text.contains("call the original tool again"), "{text}");
        // Bob gets the same answer: expiry tells nothing about existence.
        let (bob_text, _) = extract(&bob, &expired).await;
        assert_eq!(bob_text, text);
        // The tool says how long results live.
        let tools = alice.list_all_tools().await.unwrap();
        let tool = tools.iter().find(|t| t.name == "lro_extract").unwrap();
        let description = tool.description.as_deref().unwrap_or_default();
        assert!(description.contains("expire after 1 hour"), "{description}");
        ct.cancel();
    })
    .await
    .expect("bounded");
}

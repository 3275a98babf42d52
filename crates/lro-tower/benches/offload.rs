//! Offload path vs a raw write with the same file lifecycle (on tmpfs; set
//! `LRO_BENCH_DIR` to a directory on a disk to measure there), the inline
//! path through the layer vs the unwrapped server, and `lro_extract` on a
//! 500-record result, anonymous and with a principal, measured side by side
//! in one run.
//!
//! Run with `cargo bench -p lro-tower --bench offload` (`-- offload_vs_raw`
//! for the ratio alone; `LRO_BENCH_ITERS` sets its iterations, 1000).

mod support;

#[path = "support/filesystem.rs"]
mod filesystem;

use std::{
    fs,
    hint::black_box,
    io::Write,
    time::{Duration, Instant},
};

use criterion::{Criterion, criterion_group};
use lro_core::{
    OffloadConfig, Offloader, RecordSet, ScriptAware, TokenEstimator, offload::OffloadInput,
    principal::Principal,
};
use lro_store::DirSink;
use lro_tower::LroLayer;
use rmcp::{
    RoleServer, ServiceExt,
    model::{CallToolRequestParams, ClientConfig},
    service::RequestContext,
};
use serde_json::json;
use support::{Small, memories};

/// The offload path against a raw write with the same file lifecycle, on
/// tmpfs unless `LRO_BENCH_DIR` names another directory (a disk, say):
/// interleaved call by call, nothing cached between iterations, medians.
///
/// Offload: the tool's JSON text to the descriptor (split, estimate,
/// sample, schema, recipes, temp file, write, rename to a new name) and
/// the unlink. Raw write: a new 0600 file, one `write_all` of the same
/// bytes, a rename to a new name, the unlink.
fn offload_vs_raw() {
    use std::os::unix::fs::OpenOptionsExt;

    let base = std::env::var_os("LRO_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "/dev/shm".into());
    let dir = tempfile::tempdir_in(&base).unwrap();
    let fs_type = filesystem::filesystem(dir.path());
    let iterations: usize = std::env::var("LRO_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let text = memories(200);
    let offloader = Offloader::new(DirSink::new(dir.path()));
    let offload = || {
        let records = RecordSet::from_text(black_box(&text));
        let tokens = ScriptAware.estimate(&text);
        offloader
            .offload(
                OffloadInput::new("recall_memories", "recall", &records, tokens),
                &|| false,
            )
            .unwrap()
    };
    let first = offload();
    let bytes = fs::read(&first.result.path).unwrap();
    fs::remove_file(&first.result.path).unwrap();
    println!(
        "payload: 200 full memories, {} bytes of JSON, a {}-byte file, ~{} tokens; {iterations} \
         iterations on {fs_type}",
        text.len(),
        bytes.len(),
        ScriptAware.estimate(&text)
    );
    let (mut ours, mut raw) = (Vec::new(), Vec::new());
    for i in 0..iterations {
        let started = Instant::now();
        let out = offload();
        fs::remove_file(&out.result.path).unwrap();
        ours.push(started.elapsed());
        black_box(out.text.len());

        let started = Instant::now();
        let tmp = dir.path().join(format!(".raw-{i}.tmp"));
        let dst = dir.path().join(format!("raw-{i}.jsonl"));
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .unwrap();
        f.write_all(black_box(&bytes)).unwrap();
        drop(f);
        fs::rename(&tmp, &dst).unwrap();
        fs::remove_file(&dst).unwrap();
        raw.push(started.elapsed());
    }
    let (ours, raw) = (median(ours), median(raw));
    println!("offload, median: {:.1} µs", ours.as_secs_f64() * 1e6);
    println!("raw write, median: {:.1} µs", raw.as_secs_f64() * 1e6);
    println!(
        "ratio: offload / raw write (same lifecycle, {fs_type}): {:.2}x",
        ours.as_secs_f64() / raw.as_secs_f64()
    );
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// One thread for client and server: cross-thread wake-ups otherwise add
/// more jitter than the layer costs.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn inline_overhead(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let connect = |wrapped: Option<bool>, principal: bool| {
        let dir = dir.path().to_owned();
        rt.block_on(async move {
            let (s, c) = tokio::io::duplex(16 << 20);
            let small = Small::new();
            tokio::spawn(async move {
                if let Some(enabled) = wrapped {
                    let cfg = OffloadConfig::default().output_dir(dir).enabled(enabled);
                    let h = layer(cfg, principal).wrap(small);
                    let _ = h.serve(s).await.unwrap().waiting().await;
                } else {
                    let _ = small.serve(s).await.unwrap().waiting().await;
                }
            });
            ClientConfig::default().serve(c).await.unwrap()
        })
    };
    let plain = connect(None, false);
    let wrapped = connect(Some(true), false);
    let disabled = connect(Some(false), false);
    let with_principal = connect(Some(true), true);
    // Six memories, ~1300 tokens: under the threshold, so returned inline.
    let params = CallToolRequestParams::new("memories")
        .with_arguments(json!({"n": 6}).as_object().unwrap().clone());
    let mut group = c.benchmark_group("inline_call_6_memories");
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("unwrapped", |b| {
        b.iter(|| rt.block_on(plain.call_tool(params.clone())).unwrap())
    });
    group.bench_function("through_lro_layer", |b| {
        b.iter(|| rt.block_on(wrapped.call_tool(params.clone())).unwrap())
    });
    group.bench_function("through_lro_layer_with_principal", |b| {
        b.iter(|| {
            rt.block_on(with_principal.call_tool(params.clone()))
                .unwrap()
        })
    });
    group.bench_function("through_lro_layer_disabled", |b| {
        b.iter(|| rt.block_on(disabled.call_tool(params.clone())).unwrap())
    });
    group.finish();
}

/// The layer, with every caller anonymous or, when `principal`, one
/// authenticated principal (so its results live in a folder of their own).
fn layer(cfg: OffloadConfig, principal: bool) -> LroLayer {
    let layer = LroLayer::new(cfg);
    if principal {
        layer.principal(|_: &RequestContext<RoleServer>| Principal::new("bench@example.test"))
    } else {
        layer
    }
}

fn extract_500(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let setup = |principal: bool| {
        let cfg = OffloadConfig::default().output_dir(dir.path());
        let client = rt.block_on(async move {
            let (s, c) = tokio::io::duplex(16 << 20);
            tokio::spawn(async move {
                let h = layer(cfg, principal).wrap(Small::new());
                let _ = h.serve(s).await.unwrap().waiting().await;
            });
            ClientConfig::default().serve(c).await.unwrap()
        });
        // 500 full memories, ~110k tokens: offloaded, then queried.
        let offload = CallToolRequestParams::new("memories")
            .with_arguments(json!({"n": 500}).as_object().unwrap().clone());
        let got = rt.block_on(client.call_tool(offload)).unwrap();
        let text = &got.content[0].as_text().unwrap().text;
        let path = serde_json::from_str::<serde_json::Value>(text).unwrap()["file_path"]
            .as_str()
            .unwrap()
            .to_owned();
        let params = CallToolRequestParams::new("lro_extract").with_arguments(
            json!({"file_path": path, "query": "select(.priority == 5) | {id, title}"})
                .as_object()
                .unwrap()
                .clone(),
        );
        (client, params)
    };
    let anonymous = setup(false);
    let with_principal = setup(true);
    let mut group = c.benchmark_group("extract_500_memories");
    group.measurement_time(Duration::from_secs(5));
    for (name, (client, params)) in [
        ("through_lro_layer", &anonymous),
        ("through_lro_layer_with_principal", &with_principal),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let r = rt.block_on(client.call_tool(params.clone())).unwrap();
                assert_ne!(r.is_error, Some(true));
            })
        });
    }
    group.finish();
}

criterion_group!(benches, inline_overhead, extract_500);

fn main() {
    // `lro_extract` runs in worker processes, and this binary is their
    // program (what `criterion_main!` would do, after the worker hook).
    lro_extract::worker::run_if_worker();
    // The ratio is measured by hand (interleaved, medians); criterion runs
    // the rest. A name filter that does not ask for it skips it.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    if filter
        .as_deref()
        .is_none_or(|f| "offload_vs_raw".contains(f))
    {
        offload_vs_raw();
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}

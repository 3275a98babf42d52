//! Offload path vs a raw write, the inline path through the layer vs the
//! unwrapped server, and `lro_extract` on a 500-record result, anonymous and
//! with a principal, measured side by side in one run.
//!
//! Run with `cargo bench -p lro-tower --bench offload`.

mod support;

use std::{fs, hint::black_box, io::Write, time::Duration};

use criterion::{Criterion, criterion_group};
use lro_core::{
    OffloadConfig, Offloader, RecordSet, ScriptAware, TokenEstimator, offload::OffloadInput,
    principal::Principal,
};
use lro_tower::LroLayer;
use rmcp::{
    RoleServer, ServiceExt,
    model::{CallToolRequestParams, ClientConfig},
    service::RequestContext,
};
use serde_json::json;
use support::{Small, memories};

fn offload_vs_raw(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let text = memories(200);
    let tokens = ScriptAware.estimate(&text);
    eprintln!(
        "payload: 200 full memories, {} bytes, ~{tokens} tokens",
        text.len()
    );
    let offloader = Offloader::new(dir.path());

    let mut group = c.benchmark_group("offload_200_full_memories");
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("lro_offload_path", |b| {
        b.iter(|| {
            let records = RecordSet::from_text(black_box(&text));
            let tokens = ScriptAware.estimate(&text);
            let out = offloader
                .offload(
                    OffloadInput::new("recall_memories", "recall", &records, tokens),
                    &|| false,
                )
                .unwrap();
            fs::remove_file(&out.result.path).unwrap();
            black_box(out.text.len())
        })
    });
    // The same bytes the offload file holds, written to a temp file and renamed.
    let records = RecordSet::from_text(&text);
    let mut bytes = String::from("{\"type\":\"lro_header\"}\n");
    for r in &records.records {
        bytes.push_str(r);
        bytes.push('\n');
    }
    let tmp = dir.path().join(".raw.tmp");
    let dst = dir.path().join("raw.jsonl");
    group.bench_function("raw_write_rename", |b| {
        b.iter(|| {
            let mut f = fs::File::create(&tmp).unwrap();
            f.write_all(black_box(bytes.as_bytes())).unwrap();
            drop(f);
            fs::rename(&tmp, &dst).unwrap();
        })
    });
    group.finish();
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
        let path = got.structured_content.unwrap()["file_path"]
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

criterion_group!(benches, offload_vs_raw, inline_overhead, extract_500);

fn main() {
    // `lro_extract` runs in worker processes, and this binary is their
    // program (what `criterion_main!` would do, after the worker hook).
    lro_extract::worker::run_if_worker();
    benches();
    Criterion::default().configure_from_args().final_summary();
}

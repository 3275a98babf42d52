//! What the exact tokenizer costs: counting a 178 KB result (200 full MIF
//! memories) with o200k / cl100k vs the character estimate, and an inline
//! call through the layer with `estimator = "o200k"` vs `"chars"`, far from
//! the threshold (the exact count never runs) and inside the band (it runs).
//! Every alternative is measured in the same rounds, interleaved, so drift
//! hits them alike; the figures are medians and their ratios.
//!
//! Run with `cargo bench -p lro-tower --bench tokenizer`.

mod support;

use std::{
    hint::black_box,
    time::{Duration, Instant},
};

use lro_core::{Banded, Estimator, OffloadConfig, ScriptAware, TokenEstimator, tokens::Bpe};
use lro_tower::LroLayer;
use rmcp::{
    RoleClient, ServiceExt,
    model::{CallToolRequestParams, ClientConfig},
    service::RunningService,
};
use serde_json::json;
use support::{Small, memories};

const ROUNDS: usize = 60;
const THRESHOLD: usize = 1600;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Mean time of one call over `reps` calls.
fn per_call(reps: usize, mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..reps {
        f();
    }
    start.elapsed() / reps as u32
}

fn show(d: f64) -> String {
    if d >= 1e-3 {
        format!("{:8.3} ms", d * 1e3)
    } else {
        format!("{:8.2} µs", d * 1e6)
    }
}

/// Runs each case `ROUNDS` times, in turns, and prints the medians with their
/// ratio to the first case.
fn compare(title: &str, cases: &mut [(&str, &mut dyn FnMut() -> Duration)]) -> Vec<f64> {
    let mut samples = vec![Vec::with_capacity(ROUNDS); cases.len()];
    for round in 0..ROUNDS {
        // Rotate who goes first, so no case always runs on a cold cache.
        for k in 0..cases.len() {
            let i = (round + k) % cases.len();
            samples[i].push((cases[i].1)().as_secs_f64());
        }
    }
    let medians: Vec<f64> = samples.into_iter().map(median).collect();
    println!("\n{title} (median of {ROUNDS} rounds)");
    for ((name, _), m) in cases.iter().zip(&medians) {
        println!("  {name:<44} {}  {:6.2}x", show(*m), m / medians[0]);
    }
    medians
}

fn exact_count(text: &str) {
    // First use deserializes the embedded encoder; later calls share it.
    for (name, bpe) in [("o200k", Bpe::O200k), ("cl100k", Bpe::Cl100k)] {
        let start = Instant::now();
        black_box(bpe.estimate("warm-up"));
        println!(
            "{name} encoder first use (load, once): {:?}",
            start.elapsed()
        );
    }
    println!(
        "payload: 200 full memories, {} bytes; tokens: chars {}, o200k {}, cl100k {}",
        text.len(),
        ScriptAware.estimate(text),
        Bpe::O200k.estimate(text),
        Bpe::Cl100k.estimate(text),
    );
    let banded = Banded::new(ScriptAware, Bpe::O200k);
    compare(
        "count of the 178 KB result",
        &mut [
            ("chars (ScriptAware)", &mut || {
                per_call(100, || {
                    black_box(ScriptAware.estimate(black_box(text)));
                })
            }),
            ("o200k (bpe-openai)", &mut || {
                per_call(1, || {
                    black_box(Bpe::O200k.estimate(black_box(text)));
                })
            }),
            ("cl100k (bpe-openai)", &mut || {
                per_call(1, || {
                    black_box(Bpe::Cl100k.estimate(black_box(text)));
                })
            }),
            ("banded o200k vs 1600 (outside the band)", &mut || {
                per_call(100, || {
                    black_box(banded.estimate_against(&[black_box(text)], THRESHOLD));
                })
            }),
        ],
    );
}

type Client = RunningService<RoleClient, ClientConfig>;

fn inline_calls() {
    // One thread for client and server: cross-thread wake-ups otherwise add
    // more jitter than the layer costs.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let connect = |estimator: Option<Estimator>| -> Client {
        let cfg = OffloadConfig::default().output_dir(dir.path());
        rt.block_on(async move {
            let (s, c) = tokio::io::duplex(16 << 20);
            tokio::spawn(async move {
                match estimator {
                    Some(e) => {
                        let h = LroLayer::new(cfg.estimator(e)).wrap(Small::new());
                        let _ = h.serve(s).await.unwrap().waiting().await;
                    }
                    None => {
                        let _ = Small::new().serve(s).await.unwrap().waiting().await;
                    }
                }
            });
            ClientConfig::default().serve(c).await.unwrap()
        })
    };
    let plain = connect(None);
    let chars = connect(Some(Estimator::Chars));
    let o200k = connect(Some(Estimator::O200k));
    let mut ratios = Vec::new();
    for (n, label) in [
        (2, "far under the threshold: outside the band"),
        (5, "inside the band: the exact count runs"),
    ] {
        let text = memories(n);
        let params = CallToolRequestParams::new("memories")
            .with_arguments(json!({ "n": n }).as_object().unwrap().clone());
        let call = |client: &Client| rt.block_on(client.call_tool(params.clone())).unwrap();
        // Warm up each connection (and the encoder), and check that every
        // client gets the memories inline, not a descriptor.
        for c in [&plain, &chars, &o200k] {
            assert_eq!(call(c).content[0].as_text().unwrap().text, text);
        }
        let call = |client: &Client| {
            black_box(call(client));
        };
        let m = compare(
            &format!(
                "inline call, {n} memories ({} bytes; chars {}, o200k {} tokens; threshold {THRESHOLD}): {label}",
                text.len(),
                ScriptAware.estimate(&text),
                Bpe::O200k.estimate(&text),
            ),
            &mut [
                ("unwrapped server", &mut || per_call(100, || call(&plain))),
                ("layer, estimator = \"chars\"", &mut || {
                    per_call(100, || call(&chars))
                }),
                ("layer, estimator = \"o200k\"", &mut || {
                    per_call(100, || call(&o200k))
                }),
            ],
        );
        ratios.push((n, m[2] / m[1]));
    }
    println!();
    for (n, r) in ratios {
        println!("o200k / chars, inline call of {n} memories: {r:.3}x");
    }
}

fn main() {
    // `cargo test --all-targets` runs this too, without `--bench`: measure
    // only under `cargo bench`.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    exact_count(&memories(200));
    inline_calls();
}
